"""The recipe of a study built in the browser or through the services: applying it elsewhere rebuilds the study.

Objects are named, never numbered: runs name their toolkit and endpoints, rounds their run, template and judges.
Built-ins are referenced by key and version; everything else is written inline. Keys are never written, only
the name of the variable that holds one.
"""

from generation import selectors as generation
from generation.toolkits.file_format import toolkit_to_dict
from judging import selectors as judging
from stereoscope.models import BuiltinRecord

from . import human, measuring, questionnaires
from .loader import FORMAT, FORMAT_VERSION
from .models import AppliedRecipe
from .services import LIMIT_KEYS, PRICE_KEYS, TOOLKIT_META


def _builtin(obj, kind):
    if not obj.study.is_library:
        return None
    record = BuiltinRecord.objects.filter(kind=kind, object_id=obj.pk).first()
    return {"name": obj.name, "builtin": record.key, "version": record.version} if record else None


def _number(value):
    return None if value is None else (int(value) if value == int(value) else float(value))


def endpoint_entry(endpoint):
    entry = {"name": endpoint.name, "provider": endpoint.provider, "model_id": endpoint.model_id}
    if endpoint.connection_id and endpoint.provider not in ("manual", "transformers"):
        entry["connection"] = endpoint.connection.name  # a name only: the host and key stay with the installation
    if endpoint.model_family:
        entry["model_family"] = endpoint.model_family
    if endpoint.default_params:
        entry["params"] = endpoint.default_params
    entry["limits"] = {k: getattr(endpoint, k) for k in LIMIT_KEYS if getattr(endpoint, k) is not None}
    prices = {
        k: _number(getattr(endpoint, column))
        for k, column in PRICE_KEYS.items()
        if getattr(endpoint, column) is not None
    }
    if prices:
        entry["prices"] = prices
    return entry


def _toolkit_entry(toolkit):
    return _builtin(toolkit, "toolkit") or {k: v for k, v in toolkit_to_dict(toolkit).items() if k not in TOOLKIT_META}


def _template_entry(template):
    return _builtin(template, "judge_template") or {
        "name": template.name,
        "kind": template.kind,
        "text": template.text,
        "scale_min": template.scale_min,
        "scale_max": template.scale_max,
        "detect_threshold": template.detect_threshold,
        "description": template.description,
    }


def _unique(entries, what):
    """Entries by name; two versions of one name in use cannot be told apart in a recipe."""
    seen = {}
    for entry in entries:
        if entry["name"] in seen and seen[entry["name"]] != entry:
            raise ValueError(f"Two versions of the {what} {entry['name']!r} are in use; a recipe names one.")
        seen[entry["name"]] = entry
    return list(seen.values())


def export_recipe(study):
    runs = list(
        generation.study_runs(study, imports=False)
        .select_related("toolkit__study")
        .prefetch_related("endpoints")
        .order_by("created_at", "pk")
    )
    rounds = list(
        judging.study_round_queryset(study)
        .filter(source_run__in=runs)
        .select_related("template__study", "source_run")
        .prefetch_related("judges")
        .order_by("created_at", "pk")
    )
    endpoints = list(generation.study_endpoints(study))
    recipe = {
        "format": FORMAT,
        "format_version": FORMAT_VERSION,
        "study": {"name": study.name, "description": study.description},
    }
    recipe["toolkits"] = _unique([_toolkit_entry(r.toolkit) for r in runs], "toolkit")
    recipe["endpoints"] = [endpoint_entry(e) for e in endpoints]
    recipe["judge_templates"] = _unique([_template_entry(r.template) for r in rounds], "judge template")
    recipe["runs"] = [
        {
            "name": r.name,
            "toolkit": r.toolkit.name,
            "endpoints": sorted(e.name for e in r.endpoints.all()),
            "trials": r.trials,
            "params": r.param_overrides or {},
            "system_prompt": r.system_prompt,
        }
        for r in runs
    ]
    instruments, context_sets, questionnaire_runs = questionnaires.export(study)
    recipe = {
        **{k: recipe[k] for k in ("format", "format_version", "study", "toolkits")},
        "instruments": instruments,
        "context_sets": context_sets,
        **{k: recipe[k] for k in ("endpoints", "judge_templates", "runs")},
    }
    recipe["judge_rounds"] = []
    for rnd in rounds:
        entry = {
            "name": rnd.name,
            "source_run": rnd.source_run.name,
            "template": rnd.template.name,
            "judges": sorted(e.name for e in rnd.judges.all()),
            "policy": rnd.policy,
            "k": rnd.k,
            "forbid_same_family": rnd.forbid_same_family,
            "batch_size": rnd.batch_size,
            "temperature": rnd.temperature,
            "seed": rnd.seed,
            "reask_missing": rnd.reask_missing,
        }
        entry.update({k: v for k, v in (rnd.output_filter or {}).items() if k in ("item_numbers", "models")})
        recipe["judge_rounds"].append(entry)
    recipe["questionnaire_runs"] = questionnaire_runs
    recipe["lexicons"], recipe["measure_runs"] = measuring.export(study)
    recipe["codebooks"] = human.export(study)
    order = [
        "format",
        "format_version",
        "study",
        "toolkits",
        "codebooks",
        "instruments",
        "lexicons",
        "context_sets",
        "endpoints",
        "judge_templates",
        "runs",
        "judge_rounds",
        "questionnaire_runs",
        "measure_runs",
    ]
    recipe = {k: recipe[k] for k in order}
    applied, exports = applied_steps(study, recipe)
    recipe["human_stages"], human_notes = human.export_stages(study, recipe, applied)
    recipe["exports"] = exports
    recipe["notes"] = not_carried(study, rounds) + human_notes
    return {k: v for k, v in recipe.items() if v != []}


def not_carried(study, exported_rounds):
    """What a recipe cannot rebuild, said in the recipe rather than dropped silently."""
    notes = [
        f"The run “{name}” holds imported outputs; a recipe does not carry them (import them again)."
        for name in generation.study_runs(study, imports=True).values_list("name", flat=True)
    ]
    for rnd in exported_rounds:
        if (rnd.output_filter or {}).get("output_ids"):
            notes.append(
                f"The judge round “{rnd.name}” judges chosen outputs by id; the rebuilt round judges every "
                "output of its source run (within its item and model filters)."
            )
    others = judging.study_round_queryset(study).exclude(pk__in=[r.pk for r in exported_rounds])
    notes += [
        f"The judge round “{name}” judges imported or hand-picked outputs; a recipe does not carry it."
        for name in others.values_list("name", flat=True)
    ]
    return notes


def applied_steps(study, recipe):
    """The human stages and exports of the last recipe applied to the study, where their jobs still exist (the
    stages of codebooks the study assigned are then written from what it did: human.export_stages)."""

    last = AppliedRecipe.objects.filter(study=study).order_by("-applied_at", "-id").first()
    if last is None:
        return [], []
    jobs = {e["name"] for key in ("runs", "judge_rounds", "questionnaire_runs", "measure_runs") for e in recipe[key]}
    codebooks = {c["name"] for c in recipe["codebooks"]}
    stages = [
        s
        for s in last.recipe.get("human_stages") or []
        if s.get("after") in jobs and (not s.get("codebook") or s["codebook"] in codebooks)
    ]
    return stages, list(last.recipe.get("exports") or [])
