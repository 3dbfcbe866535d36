"""Instruments, context sets and questionnaire runs in a recipe (checked, applied and exported through psychometrics'
services). Found by name: an equal one is left alone; a changed instrument gets a new version; a changed context set
or questionnaire run is refused (it is a record of what was asked: give the changed one a new name)."""

import json

from generation.models import Provider
from psychometrics import runs as questionnaire_runs
from psychometrics import selectors as psychometrics
from psychometrics.services import (
    PsychError,
    contexts_from_personas,
    create_instrument,
    empty_context_set,
    expand_attributes,
    export_instrument,
    generate_personas,
    import_contexts,
    sample,
)
from psychometrics.spec import SpecError, parse_instrument, to_dict

from .loader import RecipeError, RecipeProblem

RUN_DEFAULTS = {
    "repetitions": 1,
    "template": {"key": "jung2025"},
    "options": {},
    "extraction": {},
    "params": {},
    "audit_per_model": 100,
}


def check(data, names, problems):
    """Problems of the questionnaire sections; `names` maps each section to {name: index}."""
    from .services import _builtin_spec

    for i, entry in enumerate(data.get("instruments") or []):
        if "builtin" in entry:
            if _builtin_spec("instrument", entry["builtin"], entry["version"]) is None:
                problems.append(
                    RecipeProblem(
                        f"instruments[{i}].builtin",
                        f"no built-in instrument {entry['builtin']!r} version {entry['version']!r}",
                    )
                )
            continue
        try:
            parse_instrument(entry)
        except SpecError as exc:
            problems.append(RecipeProblem(f"instruments[{i}]", str(exc)))
    for i, entry in enumerate(data.get("context_sets") or []):
        if "grid" in entry:
            try:
                expand_attributes(entry["grid"]["template"], entry["grid"]["attributes"])
            except PsychError as exc:
                problems.append(RecipeProblem(f"context_sets[{i}].grid", str(exc)))
        if "persona_set" in entry:
            ps = entry["persona_set"]
            if _builtin_spec("persona_set", ps["builtin"], ps["version"]) is None:
                problems.append(
                    RecipeProblem(
                        f"context_sets[{i}].persona_set.builtin",
                        f"no built-in persona set {ps['builtin']!r} version {ps['version']!r}",
                    )
                )
        keys = [c["key"] for c in entry.get("contexts") or []]
        for j, key in enumerate(keys):
            if key in keys[:j]:
                problems.append(RecipeProblem(f"context_sets[{i}].contexts[{j}].key", f"the key {key!r} is used twice"))
    endpoints = {e["name"]: e for e in data.get("endpoints") or []}
    for i, run in enumerate(data.get("questionnaire_runs") or []):
        where = f"questionnaire_runs[{i}]"
        if run["instrument"] not in names["instruments"]:
            problems.append(RecipeProblem(f"{where}.instrument", f"no instrument named {run['instrument']!r}"))
        if run.get("context_set") and run["context_set"] not in names["context_sets"]:
            problems.append(RecipeProblem(f"{where}.context_set", f"no context set named {run['context_set']!r}"))
        for j, name in enumerate(run["endpoints"]):
            if name not in endpoints:
                problems.append(RecipeProblem(f"{where}.endpoints[{j}]", f"no endpoint named {name!r}"))
        judge = (run.get("extraction") or {}).get("judge_endpoint")
        if judge and judge not in endpoints:
            problems.append(RecipeProblem(f"{where}.extraction.judge_endpoint", f"no endpoint named {judge!r}"))


def _library(model, kind, entry):
    from .services import _library_object

    return _library_object(model, kind, entry["builtin"], entry["version"])


def _comparable_instrument(instrument):
    return to_dict(parse_instrument(export_instrument(instrument)))


def apply_instrument(study, entry, actor, outcome):
    from .services import Change

    if "builtin" in entry:
        return _library(psychometrics.library_instruments(), "instrument", entry)
    wanted = to_dict(parse_instrument(entry))
    latest = psychometrics.latest_instrument(study, entry["name"])
    if latest is not None and _comparable_instrument(latest) == wanted:
        outcome.changes.append(Change("unchanged", "instrument", str(latest)))
        return latest
    instrument = create_instrument(study, entry, actor=actor)
    outcome.changes.append(Change("new version" if latest else "create", "instrument", str(instrument)))
    return instrument


def wanted_contexts(entry):
    """[(key, persona, turns, attributes)] a context set entry declares (built-in persona sets: None, read later)."""
    if "contexts" in entry:
        return [
            (c["key"], c.get("persona", "").strip(), c.get("turns", []), c.get("attributes", {}))
            for c in entry["contexts"]
        ]
    if "grid" in entry:
        rows = expand_attributes(entry["grid"]["template"], entry["grid"]["attributes"])
        return [(str(i + 1), text, [], attrs) for i, (text, attrs) in enumerate(rows)]
    if "empty" in entry:
        return [("none", "", [], {})]
    return None


def _have_contexts(context_set):
    return [(c.key, c.persona, c.turns, c.attributes) for c in context_set.contexts.order_by("order", "key")]


def apply_context_set(study, entry, actor, outcome):
    from .services import Change

    existing = psychometrics.context_set_named(study, entry["name"])
    wanted = wanted_contexts(entry)
    if existing is not None:
        if wanted is None:
            wanted = _persona_contexts(entry["persona_set"])
        if _have_contexts(existing) != wanted:
            raise RecipeError(
                [
                    RecipeProblem(
                        f"context_sets.{entry['name']}",
                        f"the context set {entry['name']!r} exists "
                        "with other contexts; give the changed one a new name",
                    )
                ]
            )
        outcome.changes.append(Change("unchanged", "context set", existing.name))
        return existing
    outcome.changes.append(Change("create", "context set", entry["name"]))
    try:
        if "persona_set" in entry:
            return _build_from_personas(study, entry)
        if "grid" in entry:
            personas = generate_personas(
                study,
                entry["name"],
                entry["grid"]["template"],
                entry["grid"]["attributes"],
                description=entry.get("description", ""),
            )
            return contexts_from_personas(study, entry["name"], personas, description=entry.get("description", ""))
        if "empty" in entry:
            return empty_context_set(study, entry["name"])
        lines = "\n".join(
            json.dumps({"key": k, "persona": p, "turns": t, **a}, ensure_ascii=False) for k, p, t, a in wanted
        )
        return import_contexts(
            study, entry["name"], lines, filename="recipe.jsonl", description=entry.get("description", "")
        )
    except PsychError as exc:
        raise RecipeError([RecipeProblem(f"context_sets.{entry['name']}", str(exc))]) from None


def _persona_contexts(ps):
    personas = (
        _library(psychometrics.library_persona_sets(), "persona_set", ps)
        .personas.filter(included=True)
        .order_by("order", "key")
    )
    return [(p.key, p.text, [], p.attributes) for p in sample(list(personas), ps.get("n"), ps.get("seed", 0))]


def _build_from_personas(study, entry):
    ps = entry["persona_set"]
    personas = _library(psychometrics.library_persona_sets(), "persona_set", ps)
    return contexts_from_personas(
        study, entry["name"], personas, n=ps.get("n"), seed=ps.get("seed", 0), description=entry.get("description", "")
    )


def _run_values(entry):
    values = {**RUN_DEFAULTS, **entry}
    template, options, ext = values["template"], values["options"], values["extraction"]
    return {
        "repetitions": values["repetitions"]
        if "repetitions" in entry or not entry.get("seeds")
        else len(entry["seeds"]),
        "seeds": list(values.get("seeds") or []),
        "template_key": template["key"],
        "custom_user": template.get("user", ""),
        "custom_system": template.get("system", ""),
        "option_format": template.get("option_format", "lines"),
        "option_order": options.get("order", "fixed"),
        "option_numbering": options.get("numbering", "position"),
        "order_seed": options.get("seed", 0),
        "extractors": ext.get("chain"),
        "refusal_policy": ext.get("refusal_policy", "fallback"),
        "json_field": ext.get("json_field", "answer"),
        "param_overrides": values["params"],
        "audit_per_model": values["audit_per_model"],
    }


def apply_questionnaire_run(study, entry, objects, actor, outcome):
    from .services import Change

    instrument = objects["instruments"][entry["instrument"]]
    context_set = objects["context_sets"][entry["context_set"]] if entry.get("context_set") else None
    endpoints = [objects["endpoints"][n] for n in entry["endpoints"]]
    values = _run_values(entry)
    judge = (entry.get("extraction") or {}).get("judge_endpoint")
    judge = objects["endpoints"][judge] if judge else None
    existing = psychometrics.questionnaire_run_named(study, entry["name"])
    if existing is not None:
        have = {k: getattr(existing, k) for k in values if k != "extractors"}
        want = {k: v for k, v in values.items() if k != "extractors"}
        differences = [k for k in want if want[k] != have[k]]
        if existing.instrument_id != instrument.pk:
            differences.append("instrument")
        if existing.context_set_id != (context_set.pk if context_set else None):
            differences.append("context set")
        if sorted(existing.endpoints.values_list("pk", flat=True)) != sorted(e.pk for e in endpoints):
            differences.append("endpoints")
        if existing.judge_endpoint_id != (judge.pk if judge else None):
            differences.append("model judge")
        if values["extractors"] is not None and list(existing.extractors) != list(values["extractors"]):
            differences.append("extraction chain")
        if differences:
            raise RecipeError(
                [
                    RecipeProblem(
                        f"questionnaire_runs.{entry['name']}",
                        f"the questionnaire run "
                        f"{entry['name']!r} exists with another {', '.join(differences)}; give "
                        "the changed one a new name",
                    )
                ]
            )
        outcome.changes.append(Change("unchanged", "questionnaire run", existing.name))
        return existing
    outcome.changes.append(Change("create", "questionnaire run", entry["name"]))
    try:
        return questionnaire_runs.create_run(
            study,
            name=entry["name"],
            instrument=instrument,
            context_set=context_set,
            endpoints=endpoints,
            judge_endpoint=judge,
            actor=actor,
            **values,
        )
    except PsychError as exc:
        raise RecipeError([RecipeProblem(f"questionnaire_runs.{entry['name']}", str(exc))]) from None


def estimate(run):
    from generation.runs.limits import estimate_tokens
    from generation.runs.runner import cost_of

    dry = questionnaire_runs.plan(run, sample=1)
    prompt = sum(estimate_tokens(m["content"]) for m in dry["examples"][0]["messages"]) if dry["examples"] else 0
    cost, priced, tokens_in, tokens_out = 0, True, 0, 0
    for endpoint in dry["endpoints"]:
        n_in, n_out = prompt * dry["calls_per_endpoint"], 20 * dry["calls_per_endpoint"]
        tokens_in, tokens_out = tokens_in + n_in, tokens_out + n_out
        c = cost_of(endpoint, n_in, n_out) if endpoint.provider != Provider.MANUAL else 0
        priced, cost = priced and c is not None, cost + (c or 0)
    return {
        "kind": "questionnaire run",
        "name": run.name,
        "calls": dry["calls"],
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
        "cost_usd": str(cost) if priced else None,
        "problems": [],
    }


def export(study):
    """(instruments, context sets, questionnaire runs) entries of a study's questionnaire runs."""
    from .exporting import _builtin

    runs = list(psychometrics.study_questionnaire_runs(study))
    instruments, context_sets, entries = {}, {}, []
    for run in runs:
        inst = run.instrument
        instruments[inst.name] = _builtin(inst, "instrument") or {**export_instrument(inst), "name": inst.name}
        cs = run.context_set
        if cs is not None:
            context_sets[cs.name] = {
                "name": cs.name,
                "description": cs.description,
                "contexts": [
                    {"key": k, "persona": p, "turns": t, "attributes": a} for k, p, t, a in _have_contexts(cs)
                ],
            }
        entry = {
            "name": run.name,
            "instrument": inst.name,
            **({"context_set": cs.name} if cs is not None else {}),
            "endpoints": sorted(e.name for e in run.endpoints.all()),
            "repetitions": run.repetitions,
            **({"seeds": list(run.seeds)} if run.seeds else {}),
            "template": {"key": run.template_key},
            "options": {"order": run.option_order, "numbering": run.option_numbering, "seed": run.order_seed},
            "extraction": {
                "chain": list(run.extractors),
                "refusal_policy": run.refusal_policy,
                "json_field": run.json_field,
                **({"judge_endpoint": run.judge_endpoint.name} if run.judge_endpoint_id else {}),
            },
            "params": run.param_overrides or {},
            "audit_per_model": run.audit_per_model,
        }
        if run.template_key == "custom":
            entry["template"].update(user=run.custom_user, system=run.custom_system, option_format=run.option_format)
        entries.append(entry)
    return list(instruments.values()), list(context_sets.values()), entries
