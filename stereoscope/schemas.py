"""One JSON Schema per input format, one error reporter. Django-free; imports no app.

Every input format (recipe, toolkit, codebook, instrument, run config, endpoint, output import) has a Draft 2020-12
schema file next to its app (`<app>/schema/<format>.schema.json`). `problems(data, schema)` checks a parsed value
against it and returns every problem as a `Problem(path, message)`, where the path names the offending value in
the file (`items[2].number`, `factors.care`). Code keeps only the rules a schema cannot say (cross-field rules).

Messages: a schema node may carry `x-message`, either one text for any failure of that node or a mapping from
keyword (`type`, `pattern`, `minLength`, …) to text (for `required`, a mapping from property to text); `{value}`
in it is replaced by the offending value's repr.
Without one, the message is jsonschema's; unknown fields are named with the allowed ones.

Big row files (100,000 rows) register with `gate=True`: a compiled validator (jsonschema-rs, about 100× faster)
first says whether the file is valid at all, and which rows are not; the messages still come from jsonschema and
the one reporter, for those rows only. A gated schema writes its patterns without dialect escapes (`\\s`, `\\d`,
...: character classes spelled out), so both validators read them alike (tests/architecture/test_input_schemas.py).
"""

import json
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema
import jsonschema_rs

from stereoscope.untrusted import nesting_deeper_than, nonfinite_path

DRAFT = jsonschema.Draft202012Validator
MAX_DEPTH = 50
REGISTRY: dict[str, Path] = {}  # format name -> schema path, filled by register() from each app's validator module
GATED: set[str] = set()  # schema paths checked by the compiled validator first (register(..., gate=True))
# What a document may hold at the root of a gated list schema for its failing rows alone to be checked again.
ROW_WISE_ROOT = {"$schema", "$id", "title", "description", "type", "items", "$defs", "x-message", "maxItems"}


@dataclass(frozen=True)
class Problem:
    """One problem in an input file: where (a JSON path, '' for the whole file) and what."""

    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message


def format_path(parts: Iterable[str | int]) -> str:
    """('runs', 1, 'endpoints', 0) -> 'runs[1].endpoints[0]'."""
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def register(name: str, path: str | Path, *, gate: bool = False) -> Path:
    """Declare that input format `name` is validated against the schema file `path`; returns the path. `gate`: a
    compiled validator checks documents first (for files of many rows; see the module's docstring)."""
    REGISTRY[name] = Path(path)
    if gate:
        GATED.add(str(path))
    return Path(path)


@lru_cache(maxsize=None)
def _load(path: str) -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(Path(path).read_text(encoding="utf-8"))
    DRAFT.check_schema(schema)
    return schema


def load(path: str | Path) -> dict[str, Any]:
    """The schema in file `path` (checked against Draft 2020-12 once, then cached)."""
    return _load(str(path))


@lru_cache(maxsize=None)
def _validator(path: str) -> jsonschema.protocols.Validator:
    return DRAFT(_load(path))


@lru_cache(maxsize=None)
def _compiled(path: str) -> Any:
    return jsonschema_rs.validator_for(_load(path))


def _failing_rows(path: str, data: Any) -> list[int] | None:
    """The compiled validator's answer for a gated schema: [] when `data` is valid, the indices of the failing rows
    of a list, or None when the document must be checked whole (an error at its root, or a value it cannot read,
    such as a date from a spreadsheet cell)."""
    try:
        validator = _compiled(path)
        if validator.is_valid(data):
            return []
        paths = [error.instance_path for error in validator.iter_errors(data)]
    except ValueError:  # "Unsupported type": jsonschema reports it with the value
        return None
    row_wise = isinstance(data, list) and set(_load(path)) <= ROW_WISE_ROOT
    if not paths or not row_wise or not all(paths):
        return None
    return sorted({path[0] for path in paths})


def too_deep(value: Any, limit: int = MAX_DEPTH) -> bool:
    """Whether `value` (dicts and lists) nests more than `limit` levels."""
    return nesting_deeper_than(value, limit)


def _custom(error: jsonschema.ValidationError) -> str | None:
    note = error.schema.get("x-message") if isinstance(error.schema, dict) else None
    if isinstance(note, dict):
        note = note.get(error.validator)
    if isinstance(note, dict) and error.validator == "required":  # {"required": {"name": "needs a name"}}
        note = next((note[p] for p in error.validator_value if p in note and repr(p) in error.message), None)
    if not note:
        return None
    return str(note).replace("{value}", repr(error.instance)[:80])


def message(error: jsonschema.ValidationError) -> str:
    """The message of one jsonschema error: the schema's x-message, or jsonschema's own, said plainly."""
    custom = _custom(error)
    if custom:
        return custom
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        known = error.schema.get("properties", {})
        patterns = list(error.schema.get("patternProperties", {}))
        unknown = [k for k in error.instance if k not in known and not any(re.search(p, k) for p in patterns)]
        allowed = [k for k, v in known.items() if v is not False]
        return f"unknown field(s) {', '.join(map(repr, unknown))}; allowed: {', '.join(allowed)}"
    return str(error.message)


def default_reporter(error: jsonschema.ValidationError) -> tuple[str, str]:
    """(path, message) of one jsonschema error."""
    return format_path(error.absolute_path), message(error)


Reporter = Callable[[jsonschema.ValidationError], tuple[str, str]]


def problems(
    data: Any,
    schema: dict[str, Any] | str | Path,
    *,
    what: str = "The file",
    reporter: Reporter = default_reporter,
    prefix: Sequence[str | int] = (),
) -> list[Problem]:
    """Every problem of `data` against `schema` (a dict or a schema file path), sorted by path, as Problems.

    Documents nested deeper than MAX_DEPTH and NaN/±Infinity (no database stores them in JSON) are refused first.
    `reporter(error) -> (path, message)` may word a format's special cases; `prefix` is prepended to paths."""
    if too_deep(data):
        return [Problem(format_path(prefix), f"{what} is nested more than {MAX_DEPTH} levels deep.")]
    where = nonfinite_path(data)
    if where is not None:
        return [
            Problem(format_path([*prefix, *where]), "NaN and ±Infinity are not allowed here; write a finite number")
        ]
    validator = _validator(str(schema)) if isinstance(schema, (str, Path)) else DRAFT(schema)
    rows = _failing_rows(str(schema), data) if str(schema) in GATED else None
    if rows == []:
        return []
    errors = validator.iter_errors(data if rows is None else [data[i] for i in rows])
    found = set()
    for error in errors:
        if rows is not None and error.path:  # back to the row's index in the whole document
            error.path[0] = rows[error.path[0]]
        path, text = reporter(error)
        if prefix:
            path = format_path(prefix) + (("" if path.startswith("[") else ".") + path if path else "")
        found.add(Problem(path, text))
    return sorted(found, key=lambda p: (p.path, p.message))


def messages(data: Any, schema: dict[str, Any] | str | Path, **kwargs: Any) -> list[str]:
    """problems() as texts (`path: message`), for validators that report a list of strings."""
    return [str(p) for p in problems(data, schema, **kwargs)]
