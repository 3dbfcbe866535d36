"""Codebooks and human stages in a recipe (through annotation's services and selectors).

A coding stage names a codebook and the job whose stories are coded. When `recipe run` reaches it, the stories are
assigned to the study's members of the stage's role (k coders per story, the stage's strategy and seed); the recipe
then waits until every assignment of the codebook is done.
"""

from annotation import codebook_format
from annotation.selectors import latest_codebook, library_codebooks, progress_by_coder, study_codebooks
from annotation.services import CODEBOOKS, AnnotationError, codebook_tree, create_assignments, import_codebook
from generation.selectors import run_outputs
from stereoscope.models import Membership

from .loader import RecipeError, RecipeProblem

ROLES = {"coder": "coders", "researcher": "researchers", "admin": "study admins"}


def _body(entry):
    return {k: v for k, v in entry.items() if k not in ("toolkit", "version")}


def _comparable(tree):
    """A tree without what a copy renews (guids, paths)."""

    def node(n):
        return {
            **{k: v for k, v in n.items() if k not in ("guid", "path", "children")},
            "children": [node(c) for c in n.get("children") or []],
        }

    return {"name": tree["name"], "description": tree.get("description", ""), "codes": [node(c) for c in tree["codes"]]}


def check(data, names, problems):
    from .services import _builtin_spec

    for i, entry in enumerate(data.get("codebooks") or []):
        if "builtin" in entry:
            if _builtin_spec("codebook", entry["builtin"], entry["version"]) is None:
                problems.append(
                    RecipeProblem(
                        f"codebooks[{i}].builtin",
                        f"no built-in codebook {entry['builtin']!r} version {entry['version']!r}",
                    )
                )
            continue
        if entry.get("toolkit") and entry["toolkit"] not in names["toolkits"]:
            problems.append(RecipeProblem(f"codebooks[{i}].toolkit", f"no toolkit named {entry['toolkit']!r}"))
        try:
            codebook_format.validate_tree(_body(entry))
        except codebook_format.CodebookFormatError as exc:
            problems.extend(RecipeProblem(f"codebooks[{i}]", message) for message in exc.errors)
    from stereoscope.datasets import datasets

    known = set(datasets())
    for i, export in enumerate(data.get("exports") or []):
        for j, key in enumerate(export.get("datasets") or []):
            if key not in known:
                problems.append(
                    RecipeProblem(
                        f"exports[{i}].datasets[{j}]", f"no dataset {key!r}; known: {', '.join(sorted(known))}"
                    )
                )
    for i, stage in enumerate(data.get("human_stages") or []):
        if stage.get("codebook") and stage["codebook"] not in names["codebooks"]:
            problems.append(RecipeProblem(f"human_stages[{i}].codebook", f"no codebook named {stage['codebook']!r}"))


def apply_codebook(study, entry, toolkits, actor, outcome):
    from .services import Change, _library_object

    if "builtin" in entry:  # coded in the study: a copy of the built-in, made once
        source = _library_object(library_codebooks(), "codebook", entry["builtin"], entry["version"])
        tree = codebook_tree(source)
    else:
        source, tree = None, codebook_format.validate_tree(_body(entry))
    name = entry["name"]
    latest = latest_codebook(study, name)
    if latest is not None and _comparable(codebook_tree(latest)) == _comparable({**tree, "name": name}):
        outcome.changes.append(Change("unchanged", "codebook", str(latest)))
        return latest
    if source is not None:
        codebook = CODEBOOKS.copy_into(source, study=study, actor=actor, name=name)
    else:
        codebook = import_codebook(study, tree, created_by=actor, toolkit=toolkits.get(entry.get("toolkit")))
    outcome.changes.append(Change("new version" if latest else "create", "codebook", str(codebook)))
    return codebook


def stage_outputs(stage, objects):
    """The finished stories a stage codes: those of its run, or of its judge round's source run."""
    after = stage["after"]
    run = objects["runs"].get(after)
    if run is None and after in objects["judge_rounds"]:
        run = objects["judge_rounds"][after].source_run
    return run_outputs(run, done_only=True) if run is not None else None


def reach(stage, study, objects, actor):
    """(done, message) for a stage `recipe run` has reached; assigns its stories the first time."""
    codebook = objects["codebooks"].get(stage.get("codebook") or "")
    outputs = stage_outputs(stage, objects)
    if codebook is None or outputs is None or stage.get("kind", "coding") != "coding":
        return False, ""
    progress = progress_by_coder(codebook)
    if not progress:
        role = (stage.get("coders") or {}).get("role", "coder")
        members = Membership.objects.filter(study=study, role=role).select_related("user").order_by("user__username")
        coders = [m.user for m in members][: (stage.get("coders") or {}).get("count") or None]
        if not coders:
            return (
                False,
                f"No {ROLES[role]} in the study yet: add them (Members), then run again to assign the stories.",
            )
        try:
            made = create_assignments(
                study,
                codebook,
                outputs=outputs,
                coders=coders,
                k=stage.get("overlap", 1),
                strategy=stage.get("strategy", "random_balanced"),
                seed=stage.get("seed", 0),
                actor=actor,
            )
        except AnnotationError as exc:
            raise RecipeError([RecipeProblem(f"human_stages.{stage['name']}", str(exc))]) from None
        stories = len({a.output_id for a in made})
        return (
            False,
            f"Assigned {stories} stories ({len(made)} assignments) to {len(coders)} {ROLES[role]} in “{codebook}”.",
        )
    assigned, done = sum(r["assigned"] for r in progress), sum(r["done"] for r in progress)
    return assigned > 0 and done == assigned, f"{done} of {assigned} assignments done in “{codebook}”."


def export(study):
    """Codebook entries of a study: the latest version of each, inline (built-in copies by their built-in)."""
    from .exporting import _builtin

    entries = {}
    for codebook in study_codebooks(study):
        if codebook.name in entries:
            continue
        tree = _comparable(codebook_tree(codebook))
        entry = {**tree, "name": codebook.name}
        toolkit = codebook.codes.filter(item__isnull=False).values_list("item__toolkit__name", flat=True).first()
        if toolkit:
            entry["toolkit"] = toolkit
        entries[codebook.name] = _builtin(codebook, "codebook") or entry
    return list(entries.values())
