"""Reading a recipe: YAML or JSON text -> data, checked against the published JSON Schema. Django-free.

Every problem is a RecipeProblem with the path of the offending value in the file, e.g. `runs[1].endpoints[0]`.
"""

from pathlib import Path

import jsonschema
import yaml

from stereoscope import schemas
from stereoscope.schemas import Problem as RecipeProblem
from stereoscope.schemas import format_path

SCHEMA_PATH = schemas.register("recipe", Path(__file__).resolve().parent / "schema" / "recipe.schema.json")
FORMAT = "stereoscope-recipe"
FORMAT_VERSION = 1
MAX_BYTES = 5_000_000


__all__ = ["RecipeError", "RecipeProblem", "dump", "format_path", "load", "parse_text", "schema"]


class RecipeError(ValueError):
    """A recipe that cannot be used; `problems` lists every problem with its path."""

    def __init__(self, problems):
        self.problems = list(problems)
        super().__init__("\n".join(str(p) for p in self.problems))


def schema():
    return schemas.load(SCHEMA_PATH)


def schema_text():
    return SCHEMA_PATH.read_text(encoding="utf-8")


MAX_DEPTH = 50  # a recipe nests a handful of levels; deeper documents are refused before they are built


class GuardedLoader(yaml.SafeLoader):
    """YAML's safe loader without anchors and aliases (`&a` / `*a`: seven levels of ten-way aliases expand a
    600-byte file into gigabytes) and with a nesting limit (the composer recurses once per level), both refused
    while the document is read, before anything is built."""

    def compose_node(self, parent, index):
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None) is not None:
            raise yaml.composer.ComposerError(
                None,
                None,
                "anchors and aliases (&name, *name, <<: *name) are not allowed in a recipe; write the values out",
                event.start_mark,
            )
        nested = isinstance(event, (yaml.SequenceStartEvent, yaml.MappingStartEvent))
        if nested:
            self._depth = getattr(self, "_depth", 0) + 1
            if self._depth > MAX_DEPTH:
                raise yaml.composer.ComposerError(
                    None, None, f"it is nested more than {MAX_DEPTH} levels deep", event.start_mark
                )
        try:
            return super().compose_node(parent, index)
        finally:
            if nested:
                self._depth -= 1


def safe_yaml(text):
    """yaml.safe_load without anchors, aliases or deep nesting (see GuardedLoader); raises yaml.YAMLError."""
    loader = GuardedLoader(text)
    try:
        return loader.get_single_data()
    except RecursionError:
        raise yaml.YAMLError(f"it is nested more than {MAX_DEPTH} levels deep") from None
    finally:
        loader.dispose()


def parse_text(text):
    """YAML (JSON is YAML too) -> data; raises RecipeError with the line of a syntax error."""
    if isinstance(text, bytes):
        if len(text) > MAX_BYTES:
            raise RecipeError([RecipeProblem("", f"The recipe is larger than {MAX_BYTES // 1_000_000} MB.")])
        try:
            text = text.decode("utf-8-sig")
        except UnicodeDecodeError:
            raise RecipeError([RecipeProblem("", "The recipe is not UTF-8 text.")]) from None
    try:
        data = safe_yaml(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
        raise RecipeError(
            [RecipeProblem("", f"Not valid YAML or JSON: {where}{getattr(exc, 'problem', exc)}")]
        ) from None
    if not isinstance(data, dict):
        raise RecipeError([RecipeProblem("", "A recipe is a mapping with format, format_version and study.")])
    return data


def _message(error):
    """The recipe's special cases of the shared reporter: which form of a oneOf was meant, and connections."""
    if error.validator == "oneOf" and error.context:
        # one branch per form (built-in or inline): report the branch the value meant
        wanted = "builtin" in error.instance if isinstance(error.instance, dict) else False
        branches = [e for e in error.context if (e.relative_schema_path[0] == 0) == wanted] or list(error.context)
        best = jsonschema.exceptions.best_match(branches)
        return format_path(list(error.absolute_path) + list(best.relative_path)), schemas.message(best)
    if (
        error.validator == "additionalProperties"
        and isinstance(error.instance, dict)
        and {"base_url", "api_key_env"} & set(error.instance)
    ):
        return format_path(error.absolute_path), (
            "recipes do not set base URLs or key variables: an endpoint names a provider connection "
            "(`connection:`), and site staff decide where keys go"
        )
    return schemas.default_reporter(error)


def schema_problems(data):
    return schemas.problems(data, SCHEMA_PATH, what="The recipe", reporter=_message)


def load(text):
    """Parse and schema-check a recipe; returns the data or raises RecipeError listing every problem."""
    data = parse_text(text)
    problems = schema_problems(data)
    if problems:
        raise RecipeError(problems)
    return data


class _NoAliasDumper(yaml.SafeDumper):
    """Writes every value out: recipes refuse anchors and aliases, so the product never writes one (a value used
    twice, e.g. the same seed list in every prompt variant, would otherwise become `&id001` / `*id001`)."""

    def ignore_aliases(self, data):
        return True


def dump(data):
    """A recipe as YAML text (keys in the order given, unicode kept, no anchors or aliases)."""
    return yaml.dump(data, Dumper=_NoAliasDumper, sort_keys=False, allow_unicode=True, width=120)
