"""Codebooks and human stages in a recipe (through annotation's services and selectors).

A coding stage names a codebook and the job whose stories are coded. When `recipe run` reaches it, the stories are
assigned to the study's members of the stage's role (the first `count` by username; k coders per story, the stage's
strategy, seed and blind or consensus mode), all finished stories of its runs or a sample of N of them stratified by
model × prompt; the recipe then waits until every assignment of the codebook is done.

Exporting writes what the study did: per assigned codebook, its last recorded assignment plan (coders, overlap,
strategy, seed, mode, runs and sample), not what a recipe once asked for.
"""

from annotation import codebook_format
from annotation.selectors import (
    assignment_plans,
    latest_codebook,
    library_codebooks,
    progress_by_coder,
    study_codebooks,
    unplanned_codebook_names,
)
from annotation.services import CODEBOOKS, AnnotationError, codebook_tree, create_assignments, import_codebook
from generation.selectors import study_outputs
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
        sources = set(names["runs"]) | set(names["judge_rounds"])
        for j, run in enumerate((stage.get("sample") or {}).get("runs") or []):
            if run not in sources:
                problems.append(
                    RecipeProblem(f"human_stages[{i}].sample.runs[{j}]", f"no run or judge round named {run!r}")
                )


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


def _source_run(name, objects):
    run = objects["runs"].get(name)
    if run is None and name in objects["judge_rounds"]:
        run = objects["judge_rounds"][name].source_run
    return run


def stage_runs(stage, objects):
    """The runs whose stories a stage codes: its sample's runs, else the run `after` names (or its judge round's
    source run); None while one is missing."""
    runs = [_source_run(name, objects) for name in (stage.get("sample") or {}).get("runs") or [stage["after"]]]
    return None if any(run is None for run in runs) else runs


def _stage_coders(stage, study):
    role = (stage.get("coders") or {}).get("role", "coder")
    members = Membership.objects.filter(study=study, role=role).select_related("user").order_by("user__username")
    return role, [m.user for m in members][: (stage.get("coders") or {}).get("count") or None]


def reach(stage, study, objects, actor):
    """(done, message) for a stage `recipe run` has reached; assigns its stories the first time."""
    codebook = objects["codebooks"].get(stage.get("codebook") or "")
    runs = stage_runs(stage, objects)
    if codebook is None or runs is None or stage.get("kind", "coding") != "coding":
        return False, ""
    progress = progress_by_coder(codebook)
    if not progress:
        role, coders = _stage_coders(stage, study)
        if not coders:
            return (
                False,
                f"No {ROLES[role]} in the study yet: add them (Members), then run again to assign the stories.",
            )
        sample = stage.get("sample") or {}
        try:
            made = create_assignments(
                study,
                codebook,
                outputs=study_outputs(study).filter(status="done"),
                runs=runs,
                coders=coders,
                k=stage.get("overlap", 1),
                strategy=stage.get("strategy", "random_balanced"),
                seed=stage.get("seed", 0),
                mode=stage.get("mode", "blind"),
                sample_size=sample.get("n"),
                sample_seed=sample.get("seed"),
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


def _plan_role(plan):
    roles = set(Membership.objects.filter(study=plan.study, user__in=plan.coders.all()).values_list("role", flat=True))
    return roles.pop() if len(roles) == 1 else None


def stage_from_plan(plan, stage, jobs):
    """A coding stage that recreates `plan` (the codebook's last assignment plan); `stage` is the applied
    recipe's stage of this codebook, if any (its name, `after` and message stay)."""
    runs = sorted(plan.runs.all(), key=lambda r: (r.created_at, r.pk))
    after = (stage or {}).get("after")
    if after not in jobs:
        after = runs[-1].name
    sample = {"runs": [r.name for r in runs]}
    if plan.sample_size is not None:
        sample.update(n=plan.sample_size, stratify=plan.stratify or "model_item", seed=plan.sample_seed)
    entry = {
        "name": (stage or {}).get("name") or f"Coding {plan.codebook.name}",
        "kind": "coding",
        "after": after,
        "codebook": plan.codebook.name,
        "coders": {"role": _plan_role(plan) or "coder", "count": plan.coders.count()},
        "overlap": plan.k,
        "strategy": plan.strategy,
        "seed": plan.seed,
        "mode": plan.mode,
        "sample": sample,
    }
    if (stage or {}).get("message"):
        entry["message"] = stage["message"]
    return entry


def _plan_notes(name, plans, plan):
    notes = []
    if len(plans) > 1:
        notes.append(
            f"The codebook “{name}” was assigned in {len(plans)} plannings; the recipe carries the last one "
            f"({plan.stories} stories)."
        )
    if _plan_role(plan) is None:
        notes.append(
            f"The coders of “{name}” hold different roles; the rebuilt stage assigns the study's coders by username."
        )
    return notes


def export_stages(study, recipe, applied):
    """(human stages, notes): per codebook the study assigned, a coding stage from its last assignment plan, in
    place of the applied recipe's stage of that codebook; the applied recipe's other stages stay as they were."""
    jobs = {e["name"] for key in ("runs", "judge_rounds") for e in recipe[key]}
    run_names = {e["name"] for e in recipe["runs"]}
    codebooks = {c["name"] for c in recipe["codebooks"]}
    plans = {}
    for plan in assignment_plans(study):
        plans.setdefault(plan.codebook.name, []).append(plan)
    notes, carried = [], {}
    for name, made in plans.items():
        plan = made[-1]
        missing = sorted(r.name for r in plan.runs.all() if r.name not in run_names)
        if name not in codebooks or missing:
            notes.append(
                f"The assignments of “{name}” code stories of {', '.join(missing) or 'runs'} that a recipe does not "
                "carry; the recipe has no stage for them."
            )
            continue
        carried[name] = plan
        notes += _plan_notes(name, made, plan)
    notes += [
        f"Some assignments of “{name}” were made before assignment plans were recorded; the recipe cannot say "
        "which stories, coders and mode they used."
        for name in unplanned_codebook_names(study)
        if name in codebooks
    ]
    sources = {e["name"]: e["source_run"] for e in recipe["judge_rounds"]}
    stages = []
    for stage in applied:
        plan = carried.pop(stage.get("codebook") or "", None)
        if plan is None and not stage.get("codebook") and stage.get("kind", "coding") == "coding":
            # a stage that named no codebook (as the built-ins' once did): the codebook its run's stories got
            run = sources.get(stage["after"], stage["after"])
            name = next((n for n, p in carried.items() if run in {r.name for r in p.runs.all()}), None)
            plan = carried.pop(name) if name else None
        stages.append(stage if plan is None else stage_from_plan(plan, stage, jobs))
    stages += [stage_from_plan(plan, None, jobs) for plan in carried.values()]
    return stages, notes
