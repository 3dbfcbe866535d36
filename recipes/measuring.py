"""Lexicons and measure runs in a recipe (through measures' services). A changed lexicon gets a new version; a changed
measure run is refused (give the changed one a new name)."""

from measures import scoring
from measures import selectors as measures
from measures.services import LexiconDataError, create_lexicon, lexicon_data, validate_lexicon_data

from .loader import RecipeError, RecipeProblem

RUN_FIELDS = {
    "classifier": "",
    "classifier_model_id": "",
    "classifier_unit": "sentence",
    "gender_sources": ["slots", "coders", "pronouns"],
    "name_genders": {},
    "zero_policy": "exclude",
    "or_orientation": "per_category",
    "success_filter": False,
}


def _body(entry):
    return {k: v for k, v in entry.items() if k != "version"}


def check(data, names, problems):
    from .services import _builtin_spec

    for i, entry in enumerate(data.get("lexicons") or []):
        if "builtin" in entry:
            if _builtin_spec("lexicon", entry["builtin"], entry["version"]) is None:
                problems.append(
                    RecipeProblem(
                        f"lexicons[{i}].builtin",
                        f"no built-in lexicon {entry['builtin']!r} version {entry['version']!r}",
                    )
                )
            continue
        try:
            validate_lexicon_data(_body(entry))
        except LexiconDataError as exc:
            problems.extend(RecipeProblem(f"lexicons[{i}]", str(m)) for m in getattr(exc, "errors", [exc]))
    for i, run in enumerate(data.get("measure_runs") or []):
        for j, name in enumerate(run.get("lexicons") or []):
            if name not in names["lexicons"]:
                problems.append(RecipeProblem(f"measure_runs[{i}].lexicons[{j}]", f"no lexicon named {name!r}"))
        for j, name in enumerate(run.get("source_runs") or []):
            if name not in names["runs"]:
                problems.append(RecipeProblem(f"measure_runs[{i}].source_runs[{j}]", f"no run named {name!r}"))
        if not run.get("lexicons") and not run.get("classifier"):
            problems.append(RecipeProblem(f"measure_runs[{i}]", "choose at least one lexicon or a classifier"))


def apply_lexicon(study, entry, actor, outcome):
    from .services import Change, _library_object

    if "builtin" in entry:
        return _library_object(measures.library_lexicons(), "lexicon", entry["builtin"], entry["version"])
    wanted = validate_lexicon_data(_body(entry))
    latest = measures.latest_lexicon(study, wanted["name"])
    if latest is not None and validate_lexicon_data(lexicon_data(latest)) == wanted:
        outcome.changes.append(Change("unchanged", "lexicon", str(latest)))
        return latest
    lexicon = create_lexicon(study, wanted, actor=actor, parent=latest)
    outcome.changes.append(Change("new version" if latest else "create", "lexicon", str(lexicon)))
    return lexicon


def _values(entry):
    return {k: entry.get(k, default) for k, default in RUN_FIELDS.items()}


def apply_measure_run(study, entry, objects, actor, outcome):
    from .services import Change

    lexicons = [objects["lexicons"][n] for n in entry.get("lexicons") or []]
    sources = [objects["runs"][n] for n in entry.get("source_runs") or []]
    values = _values(entry)
    existing = measures.measure_run_named(study, entry["name"])
    if existing is not None:
        differences = [k.replace("_", " ") for k, v in values.items() if getattr(existing, k) != v]
        if sorted(existing.lexicons.values_list("pk", flat=True)) != sorted(lx.pk for lx in lexicons):
            differences.append("lexicons")
        if sorted(existing.source_runs.values_list("pk", flat=True)) != sorted(r.pk for r in sources):
            differences.append("source runs")
        if differences:
            raise RecipeError(
                [
                    RecipeProblem(
                        f"measure_runs.{entry['name']}",
                        f"the measure run {entry['name']!r} "
                        f"exists with another {', '.join(differences)}; give the changed one a "
                        "new name",
                    )
                ]
            )
        outcome.changes.append(Change("unchanged", "measure run", existing.name))
        return existing
    outcome.changes.append(Change("create", "measure run", entry["name"]))
    try:
        return scoring.create_run(
            study, name=entry["name"], lexicons=lexicons, source_runs=sources, actor=actor, **values
        )
    except scoring.MeasureRunError as exc:
        raise RecipeError([RecipeProblem(f"measure_runs.{entry['name']}", str(exc))]) from None


def estimate(run, objects):
    """No calls: a measure run scores the finished outputs of its source runs on this machine."""
    return {
        "kind": "measure run",
        "name": run.name,
        "calls": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "cost_usd": "0",
        "problems": [],
        "note": "scores outputs locally once its source runs have finished",
    }


def export(study):
    """(lexicon entries, measure run entries) of a study's measure runs."""
    from .exporting import _builtin

    runs = list(
        measures.study_measure_runs(study)
        .prefetch_related("lexicons__study", "source_runs")
        .order_by("created_at", "pk")
    )
    lexicons, entries = {}, []
    for run in runs:
        for lexicon in run.lexicons.all():
            lexicons[lexicon.name] = _builtin(lexicon, "lexicon") or {
                k: v for k, v in lexicon_data(lexicon).items() if k != "version"
            }
        entry = {
            "name": run.name,
            "lexicons": sorted(lx.name for lx in run.lexicons.all()),
            "source_runs": sorted(r.name for r in run.source_runs.all()),
            **{k: getattr(run, k) for k in RUN_FIELDS},
        }
        entries.append(entry)
    return list(lexicons.values()), entries
