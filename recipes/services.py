"""Recipes: check, apply, plan and export a study as code. Other apps' tables are written only through their services.

apply is idempotent: each declared object is found by name; an equal one is left alone, a changed toolkit or judge
template gets a new version when a job already used it (as in the UI), and a changed run or round is refused
(a run is a record of what was done: give the changed one a new name).
"""

import hashlib
import json
from dataclasses import dataclass, field
from decimal import Decimal

from django.db import transaction

from generation import selectors as generation
from generation.models import Provider
from generation.runs import connections as generation_connections
from generation.runs import services as generation_runs
from generation.runs.endpoint_services import endpoint_problems, save_endpoint
from generation.toolkits.file_format import ToolkitFormatError, create_toolkit, toolkit_to_dict, validate_data
from generation.toolkits.services import TOOLKITS, delete_toolkit
from judging import planner
from judging import rounds as judge_rounds
from judging import selectors as judging
from judging.services import JudgingError, _clean_template, create_template, update_template
from stereoscope.builtin import all_specs, load_builtins
from stereoscope.models import BuiltinRecord, Study
from stereoscope.services import create_study

from . import estimates, human, measuring, questionnaires
from .loader import RecipeError, RecipeProblem, schema_problems
from .models import AppliedRecipe

SECTIONS = (
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
    "human_stages",
)
LIMIT_KEYS = (
    "max_concurrency",
    "requests_per_minute",
    "tokens_per_minute",
    "timeout_seconds",
    "max_attempts",
    "backoff_base_s",
    "backoff_max_s",
)
PRICE_KEYS = {"input_per_mtok": "input_price_per_mtok", "output_per_mtok": "output_price_per_mtok"}
BUILTIN_KIND = {"toolkits": "toolkit", "judge_templates": "judge_template"}
TOOLKIT_META = ("format", "format_version", "version")
MAX_UPLOAD = 5_000_000


@dataclass
class Change:
    action: str  # create, new version, update, unchanged
    kind: str
    name: str
    detail: str = ""

    def __str__(self):
        return f"{self.action:12} {self.kind:15} {self.name}" + (f" ({self.detail})" if self.detail else "")


@dataclass
class Outcome:
    study: Study
    changes: list = field(default_factory=list)
    jobs: list = field(default_factory=list)  # per job: name, kind, calls, input/output tokens, cost, problems

    @property
    def changed(self):
        return [c for c in self.changes if c.action != "unchanged"]


# --- checking ---------------------------------------------------------------------------------------------------


def _builtin_spec(kind, key, version):
    return next((s for s in all_specs() if s.kind == kind and s.key == key and s.version == str(version)), None)


def _endpoint_fields(entry):
    data = {k: entry[k] for k in ("name", "provider", "model_id", "model_family", "connection") if k in entry}
    data["default_params"] = entry.get("params") or {}
    data.update(entry.get("limits") or {})
    for key, column in PRICE_KEYS.items():
        data[column] = (entry.get("prices") or {}).get(key)
    return data


def _endpoint_path(column):
    if column in LIMIT_KEYS:
        return f"limits.{column}"
    reverse = {v: k for k, v in PRICE_KEYS.items()}
    if column in reverse:
        return f"prices.{reverse[column]}"
    return {"default_params": "params"}.get(column, column)


def _toolkit_body(entry):
    return {k: v for k, v in entry.items() if k not in TOOLKIT_META}


def _names(data, section, problems):
    seen = {}
    for i, entry in enumerate(data.get(section) or []):
        name = entry.get("name")
        if name in seen:
            problems.append(
                RecipeProblem(f"{section}[{i}].name", f"the name {name!r} is also used by {section}[{seen[name]}]")
            )
        seen.setdefault(name, i)
    return seen


def check(data):
    """Every problem of a parsed recipe, each with its path; an empty list when it can be applied."""
    problems = schema_problems(data)
    if problems:
        return problems
    names = {section: _names(data, section, problems) for section in SECTIONS}
    for section, kind in BUILTIN_KIND.items():
        for i, entry in enumerate(data.get(section) or []):
            if "builtin" in entry and _builtin_spec(kind, entry["builtin"], entry["version"]) is None:
                problems.append(
                    RecipeProblem(
                        f"{section}[{i}].builtin",
                        f"no built-in {kind} {entry['builtin']!r} version {entry['version']!r}",
                    )
                )
    for i, entry in enumerate(data.get("toolkits") or []):
        if "builtin" not in entry:
            try:
                validate_data(_toolkit_body(entry))
            except ToolkitFormatError as exc:
                problems.extend(RecipeProblem(f"toolkits[{i}]", message) for message in exc.errors)
    for i, entry in enumerate(data.get("endpoints") or []):
        _clean, found = endpoint_problems(_endpoint_fields(entry))
        problems.extend(
            RecipeProblem(f"endpoints[{i}].{_endpoint_path(column)}", message) for column, message in found.items()
        )
    for i, entry in enumerate(data.get("judge_templates") or []):
        if "builtin" not in entry:
            try:
                _clean_template(
                    entry["kind"],
                    entry["text"],
                    entry.get("scale_min", 0),
                    entry.get("scale_max", 1),
                    entry.get("detect_threshold", 1),
                )
            except JudgingError as exc:
                problems.append(RecipeProblem(f"judge_templates[{i}]", str(exc)))
    endpoints = {e["name"]: e for e in data.get("endpoints") or []}

    def refer(path, section, name, what):
        if name not in names[section]:
            problems.append(RecipeProblem(path, f"no {what} named {name!r}"))
            return False
        return True

    for i, run in enumerate(data.get("runs") or []):
        refer(f"runs[{i}].toolkit", "toolkits", run["toolkit"], "toolkit")
        for j, name in enumerate(run["endpoints"]):
            refer(f"runs[{i}].endpoints[{j}]", "endpoints", name, "endpoint")
        try:
            generation_runs.parse_overrides(run.get("params"))
        except generation_runs.RunError as exc:
            problems.append(RecipeProblem(f"runs[{i}].params", str(exc)))
    for i, rnd in enumerate(data.get("judge_rounds") or []):
        refer(f"judge_rounds[{i}].source_run", "runs", rnd["source_run"], "run")
        refer(f"judge_rounds[{i}].template", "judge_templates", rnd["template"], "judge template")
        for j, name in enumerate(rnd["judges"]):
            if (
                refer(f"judge_rounds[{i}].judges[{j}]", "endpoints", name, "endpoint")
                and endpoints[name]["provider"] == Provider.MANUAL
            ):
                problems.append(
                    RecipeProblem(f"judge_rounds[{i}].judges[{j}]", f"{name!r} is a manual endpoint and cannot judge")
                )
        if rnd.get("policy") == "k_of_n" and not rnd.get("k"):
            problems.append(RecipeProblem(f"judge_rounds[{i}].k", "k-of-n needs k, the number of judges per output"))
    questionnaires.check(data, names, problems)
    measuring.check(data, names, problems)
    human.check(data, names, problems)
    jobs = (
        set(names["runs"]) | set(names["judge_rounds"]) | set(names["questionnaire_runs"]) | set(names["measure_runs"])
    )
    for i, stage in enumerate(data.get("human_stages") or []):
        if stage["after"] not in jobs:
            problems.append(RecipeProblem(f"human_stages[{i}].after", f"no job named {stage['after']!r}"))
    return problems


def validate(data):
    problems = check(data)
    if problems:
        raise RecipeError(problems)
    return data


# --- applying ---------------------------------------------------------------------------------------------------


def _library_object(source, kind, key, version):
    """The library object of a built-in, loading it first if this installation has not yet. `source` is the model,
    or for another app's objects the queryset its selectors give."""
    record = BuiltinRecord.objects.filter(kind=kind, key=key, version=str(version)).first()
    if record is None:
        load_builtins([_builtin_spec(kind, key, version)], log=lambda *_: None)
        record = BuiltinRecord.objects.get(kind=kind, key=key, version=str(version))
    objects = source.objects if hasattr(source, "objects") else source
    return objects.get(pk=record.object_id)


def _study(data, study, actor, outcome):
    if study is not None:
        return study
    name = data["study"]["name"]
    found = list(Study.objects.filter(name=name, is_library=False)[:2])
    if len(found) > 1:
        raise RecipeError([RecipeProblem("study.name", f"several studies are named {name!r}; choose one with --study")])
    if found:
        outcome.changes.append(Change("unchanged", "study", name))
        return found[0]
    outcome.changes.append(Change("create", "study", name))
    return create_study(name=name, description=data["study"].get("description", ""), created_by=actor)


def _comparable_toolkit(toolkit):
    return validate_data({k: v for k, v in toolkit_to_dict(toolkit).items() if k not in TOOLKIT_META})


def _apply_toolkit(study, entry, actor, outcome):
    if "builtin" in entry:
        return _library_object(generation.toolkits_for(study), "toolkit", entry["builtin"], entry["version"])
    clean = validate_data(_toolkit_body(entry))
    latest = generation.latest_toolkit(study, clean["name"])
    if latest is not None and _comparable_toolkit(latest) == clean:
        outcome.changes.append(Change("unchanged", "toolkit", str(latest)))
        return latest
    if latest is not None and not TOOLKITS.is_locked(latest):
        delete_toolkit(latest, actor=actor)  # never used by a run: replaced in place, same version number
        action = "update"
    else:
        action = "new version" if latest is not None else "create"
    toolkit = create_toolkit(study, clean, created_by=actor)
    outcome.changes.append(
        Change(
            action, "toolkit", str(toolkit), f"v{latest.version} is used by a run" if action == "new version" else ""
        )
    )
    return toolkit


def parse_connection_map(value):
    """{recipe's connection name: this installation's} from a dict, or text of OLD=NEW pairs (lines or commas)."""
    if value in (None, ""):
        return {}
    if isinstance(value, dict):
        pairs = list(value.items())
    elif isinstance(value, (list, tuple)):
        pairs = [str(v).split("=", 1) for v in value]
    elif isinstance(value, str):
        pairs = [part.split("=", 1) for part in value.replace("\n", ",").split(",") if part.strip()]
    else:
        raise RecipeError([RecipeProblem("connections", "Give connection maps as OLD=NEW pairs.")])
    mapping = {}
    for pair in pairs:
        if len(pair) != 2 or not all(isinstance(p, str) and p.strip() for p in pair):
            raise RecipeError([RecipeProblem("connections", f"{pair!r} is not OLD=NEW.")])
        mapping[pair[0].strip()] = pair[1].strip()
    return mapping


def _resolve_connection(study, entry, connection_map):
    """The local connection a recipe endpoint uses: its `connection` name (mapped by `connection_map` when this
    installation calls it otherwise), else the one connection of its provider open to the study; a keyless kind
    (manual, transformers) without one gets its built-in connection. A clear problem lists what is available."""
    named = entry.get("connection")
    if named:
        named = (connection_map or {}).get(named, named)
        found = generation_connections.find_for_study(study, named)
        if found is not None:
            return found.name
        problem = f"this installation has no connection {named!r} open to the study"
    else:
        provider = entry.get("provider")
        if provider in generation_connections.KEYLESS:
            return None
        candidates = [c for c in generation_connections.open_to(study) if c.provider == provider]
        if len(candidates) == 1:
            return candidates[0].name
        problem = (
            f"name the connection to use for {provider} (several are open to the study)"
            if candidates
            else f"this installation has no {provider} connection open to the study"
        )
    available = ", ".join(f"{c.name} ({c.provider})" for c in generation_connections.open_to(study)) or "none"
    raise RecipeError(
        [
            RecipeProblem(
                f"endpoints.{entry['name']}.connection",
                f"{problem}. Connections available here: {available}. Map a recipe's connection to one of them "
                '(--connection OLD=NEW, or "connections": {"OLD": "NEW"} over the API), or ask site staff.',
            )
        ]
    )


def _apply_endpoint(study, entry, actor, outcome, connection_map=None):
    fields = _endpoint_fields(entry)
    fields["connection"] = _resolve_connection(study, entry, connection_map)
    if fields["connection"] is None:
        fields.pop("connection")
    existing = generation.endpoint_named(study, entry["name"])
    clean, problems = endpoint_problems(fields, study, existing)
    if problems:
        raise RecipeError([RecipeProblem(f"endpoints.{entry['name']}", str(m)) for m in problems.values()])
    if (
        existing is not None
        and all(getattr(existing, k) == v for k, v in clean.items() if k != "connection")
        and (clean.get("connection") is None or existing.connection_id == clean["connection"].pk)
    ):
        outcome.changes.append(Change("unchanged", "endpoint", existing.name))
        return existing
    outcome.changes.append(Change("update" if existing else "create", "endpoint", entry["name"]))
    return save_endpoint(study, fields, instance=existing, actor=actor)


TEMPLATE_FIELDS = ("kind", "text", "scale_min", "scale_max", "detect_threshold", "description")


def _template_values(entry):
    return {
        "kind": entry["kind"],
        "text": entry["text"],
        "scale_min": entry.get("scale_min", 0),
        "scale_max": entry.get("scale_max", 1),
        "detect_threshold": entry.get("detect_threshold", 1),
        "description": entry.get("description", ""),
    }


def _apply_template(study, entry, actor, outcome):
    if "builtin" in entry:
        return _library_object(judging.library_templates(), "judge_template", entry["builtin"], entry["version"])
    values = _template_values(entry)
    latest = judging.latest_template(study, entry["name"])
    if latest is None:
        outcome.changes.append(Change("create", "judge template", entry["name"]))
        return create_template(study, name=entry["name"], actor=actor, **values)
    if all(getattr(latest, k) == v for k, v in values.items()):
        outcome.changes.append(Change("unchanged", "judge template", str(latest)))
        return latest
    template, versioned = update_template(latest, study=study, actor=actor, **values)
    outcome.changes.append(Change("new version" if versioned else "update", "judge template", str(template)))
    return template


def _refuse_change(kind, name, differences):
    raise RecipeError(
        [
            RecipeProblem(
                f"{kind}.{name}",
                f"the {kind[:-1].replace('_', ' ')} {name!r} exists with "
                f"another {', '.join(differences)}; a recipe does not change a run or round "
                "already made: give the changed one a new name",
            )
        ]
    )


def _apply_run(study, entry, toolkits, endpoints, actor, outcome):
    wanted = {
        "toolkit": toolkits[entry["toolkit"]].pk,
        "endpoints": sorted(endpoints[n].pk for n in entry["endpoints"]),
        "trials": entry.get("trials", 1),
        "param_overrides": entry.get("params") or {},
        "system_prompt": entry.get("system_prompt", ""),
    }
    existing = generation.generated_run_named(study, entry["name"])
    if existing is not None:
        have = {
            "toolkit": existing.toolkit_id,
            "endpoints": sorted(existing.endpoints.values_list("pk", flat=True)),
            "trials": existing.trials,
            "param_overrides": existing.param_overrides,
            "system_prompt": existing.system_prompt,
        }
        differences = [k.replace("_", " ") for k in wanted if wanted[k] != have[k]]
        if differences:
            _refuse_change("runs", entry["name"], differences)
        outcome.changes.append(Change("unchanged", "generation run", existing.name))
        return existing
    outcome.changes.append(Change("create", "generation run", entry["name"]))
    return generation_runs.create_run(
        study,
        name=entry["name"],
        toolkit=toolkits[entry["toolkit"]],
        endpoints=[endpoints[n] for n in entry["endpoints"]],
        trials=entry.get("trials", 1),
        param_overrides=entry.get("params") or {},
        system_prompt=entry.get("system_prompt", ""),
        actor=actor,
    )


def _round_filter(entry):
    return {k: entry[k] for k in ("item_numbers", "models") if entry.get(k)}


def _apply_round(study, entry, runs, templates, endpoints, actor, outcome):
    wanted = {
        "template": templates[entry["template"]].pk,
        "source_run": runs[entry["source_run"]].pk,
        "judges": sorted(endpoints[n].pk for n in entry["judges"]),
        "policy": entry.get("policy", "rotation"),
        "k": entry.get("k"),
        "forbid_same_family": entry.get("forbid_same_family", False),
        "batch_size": entry.get("batch_size", 5),
        "temperature": entry.get("temperature"),
        "seed": entry.get("seed", 0),
        "reask_missing": entry.get("reask_missing", True),
        "output_filter": _round_filter(entry),
    }
    existing = judging.round_named(study, entry["name"])
    if existing is not None:
        have = {
            "template": existing.template_id,
            "source_run": existing.source_run_id,
            "judges": sorted(existing.judges.values_list("pk", flat=True)),
            "policy": existing.policy,
            "k": existing.k,
            "forbid_same_family": existing.forbid_same_family,
            "batch_size": existing.batch_size,
            "temperature": existing.temperature,
            "seed": existing.seed,
            "reask_missing": existing.reask_missing,
            "output_filter": existing.output_filter or {},
        }
        differences = [k.replace("_", " ") for k in wanted if wanted[k] != have[k]]
        if differences:
            _refuse_change("judge_rounds", entry["name"], differences)
        outcome.changes.append(Change("unchanged", "judge round", existing.name))
        return existing
    outcome.changes.append(Change("create", "judge round", entry["name"]))
    try:
        return judge_rounds.create_round(
            study,
            name=entry["name"],
            template=templates[entry["template"]],
            judges=[endpoints[n] for n in entry["judges"]],
            source_run=runs[entry["source_run"]],
            policy=wanted["policy"],
            k=wanted["k"],
            forbid_same_family=wanted["forbid_same_family"],
            batch_size=wanted["batch_size"],
            temperature=wanted["temperature"],
            seed=wanted["seed"],
            reask_missing=wanted["reask_missing"],
            output_filter=wanted["output_filter"],
            actor=actor,
        )
    except judge_rounds.RoundError as exc:
        raise RecipeError([RecipeProblem(f"judge_rounds.{entry['name']}", str(exc))]) from None


@transaction.atomic
def apply(data, *, study=None, actor=None, connection_map=None):
    """Create or update everything the recipe declares; returns an Outcome. All or nothing. `connection_map`
    ({recipe's connection name: this installation's}) maps the connections the recipe names."""
    validate(data)
    outcome = Outcome(study=None)
    study = outcome.study = _study(data, study, actor, outcome)
    toolkits = {e["name"]: _apply_toolkit(study, e, actor, outcome) for e in data.get("toolkits") or []}
    endpoints = {
        e["name"]: _apply_endpoint(study, e, actor, outcome, connection_map) for e in data.get("endpoints") or []
    }
    templates = {e["name"]: _apply_template(study, e, actor, outcome) for e in data.get("judge_templates") or []}
    runs = {e["name"]: _apply_run(study, e, toolkits, endpoints, actor, outcome) for e in data.get("runs") or []}
    rounds = {
        e["name"]: _apply_round(study, e, runs, templates, endpoints, actor, outcome)
        for e in data.get("judge_rounds") or []
    }
    objects = outcome.objects = {
        "toolkits": toolkits,
        "endpoints": endpoints,
        "judge_templates": templates,
        "runs": runs,
        "judge_rounds": rounds,
    }
    objects["instruments"] = {
        e["name"]: questionnaires.apply_instrument(study, e, actor, outcome) for e in data.get("instruments") or []
    }
    objects["context_sets"] = {
        e["name"]: questionnaires.apply_context_set(study, e, actor, outcome) for e in data.get("context_sets") or []
    }
    objects["codebooks"] = {
        e["name"]: human.apply_codebook(study, e, toolkits, actor, outcome) for e in data.get("codebooks") or []
    }
    objects["lexicons"] = {
        e["name"]: measuring.apply_lexicon(study, e, actor, outcome) for e in data.get("lexicons") or []
    }
    objects["measure_runs"] = {
        e["name"]: measuring.apply_measure_run(study, e, objects, actor, outcome)
        for e in data.get("measure_runs") or []
    }
    objects["questionnaire_runs"] = {
        e["name"]: questionnaires.apply_questionnaire_run(study, e, objects, actor, outcome)
        for e in data.get("questionnaire_runs") or []
    }
    record_applied(study, data, actor)
    return outcome


def record_applied(study, data, actor):
    """Keep the applied recipe when it differs from the last one (so applying it again writes nothing)."""

    text = json.dumps(data, sort_keys=True, ensure_ascii=False, default=str)
    digest = hashlib.sha256(text.encode()).hexdigest()
    last = AppliedRecipe.objects.filter(study=study).order_by("-applied_at", "-id").first()
    if last is None or last.sha256 != digest:
        AppliedRecipe.objects.create(
            study=study,
            recipe=json.loads(text),
            sha256=digest,
            applied_by=actor if getattr(actor, "is_authenticated", False) else None,
        )


# --- planning ---------------------------------------------------------------------------------------------------


class _Rollback(Exception):
    pass


JOB_SECTIONS = {
    "runs": ("generation run", "endpoints"),
    "judge_rounds": ("judge round", "judges"),
    "questionnaire_runs": ("questionnaire run", "endpoints"),
    "measure_runs": ("measure run", None),
}


def _existing_job(kind, name):
    """An unchanged job is already in the study: applying the recipe again adds no calls (its own page shows
    what is left to do)."""
    return {
        "kind": kind,
        "name": name,
        "calls": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "cost_usd": "0",
        "problems": [],
        "existing": True,
        "note": "already in the study: applying makes no new calls",
    }


def _unpriced(endpoints):
    return sorted(
        e.name
        for e in endpoints
        if e.provider != Provider.MANUAL and e.input_price_per_mtok is None and e.output_price_per_mtok is None
    )


def _estimate_job(section, entry, outcome):
    if section == "runs":
        run = outcome.objects["runs"][entry["name"]]
        dry = generation_runs.plan(run, sample=0)
        totals = dry["totals"]
        return {
            "kind": "generation run",
            "name": run.name,
            "calls": totals["calls"] + totals["manual"],
            "input_tokens": totals["input_tokens"],
            "output_tokens": totals["output_tokens"],
            "cost_usd": str(totals["cost_usd"]) if totals["priced"] else None,
            "problems": dry["problems"],
        }
    if section == "judge_rounds":
        rnd = outcome.objects["judge_rounds"][entry["name"]]
        summary = judge_rounds.compute_plan(rnd)
        if summary["outputs"]:
            return {
                "kind": "judge round",
                "name": rnd.name,
                "calls": summary["batches"],
                "input_tokens": summary["input_tokens"],
                "output_tokens": summary["output_tokens"],
                "cost_usd": summary["cost_usd"],
                "problems": summary["problems"],
            }
        # the source run has not run yet: the round's planner over the outputs it will write
        try:
            return estimates.judge_round_before_generation(rnd, outcome.objects["runs"][entry["source_run"]])
        except planner.PlanError as exc:
            raise RecipeError([RecipeProblem(f"judge_rounds.{entry['name']}", str(exc))]) from None
    if section == "questionnaire_runs":
        return questionnaires.estimate(outcome.objects["questionnaire_runs"][entry["name"]])
    return measuring.estimate(outcome.objects["measure_runs"][entry["name"]], outcome.objects)


def _estimate_jobs(data, outcome):
    """Per job its new calls, tokens and cost: a job the study already has (unchanged) counts 0 calls, so an
    unchanged recipe plans no new calls. A job without a known cost names its endpoints that have no prices."""
    unchanged = {(c.kind, c.name) for c in outcome.changes if c.action == "unchanged"}
    jobs = []
    for section, (kind, endpoints_key) in JOB_SECTIONS.items():
        for entry in data.get(section) or []:
            if (kind, entry["name"]) in unchanged:
                jobs.append(_existing_job(kind, entry["name"]))
                continue
            job = _estimate_job(section, entry, outcome)
            if job.get("cost_usd") is None and job.get("calls") and endpoints_key:
                endpoints = outcome.objects["endpoints"]
                job["unpriced_endpoints"] = _unpriced(endpoints[n] for n in entry[endpoints_key] if n in endpoints)
            jobs.append(job)
    for entry in data.get("human_stages") or []:
        jobs.append({"kind": "human stage", "name": entry["name"], "calls": 0, "after": entry["after"], "problems": []})
    return jobs


def plan(data, *, study=None, actor=None, connection_map=None):
    """What apply would create or change, and per job its calls, tokens and cost. Writes nothing."""
    validate(data)
    result = {}
    try:
        with transaction.atomic():
            outcome = apply(data, study=study, actor=actor, connection_map=connection_map)
            outcome.jobs = _estimate_jobs(data, outcome)
            result["outcome"] = outcome
            raise _Rollback
    except _Rollback:
        pass
    outcome = result["outcome"]
    outcome.study = study
    return outcome


def total_cost(jobs):
    costs = [Decimal(j["cost_usd"]) for j in jobs if j.get("cost_usd") is not None]
    return sum(costs, Decimal("0"))


def new_calls(jobs):
    """The provider calls applying the plan adds (jobs the study already has count none)."""
    return sum(j.get("calls") or 0 for j in jobs)


def cost_summary(jobs):
    """{"known_cost_usd": the sum of what is priced, "complete": whether every job with calls is priced,
    "unpriced_endpoints": the names of the endpoints without prices that make it unknown}."""
    unknown = [j for j in jobs if j.get("calls") and j.get("cost_usd") is None and j["kind"] != "human stage"]
    return {
        "known_cost_usd": total_cost(jobs),
        "complete": not unknown,
        "unpriced_endpoints": sorted({name for j in unknown for name in j.get("unpriced_endpoints") or []}),
    }


def cost_text(jobs):
    """ "$12.5", or "unknown, no prices set for model-a, model-b" when a job's cost is not known."""
    summary = cost_summary(jobs)
    if summary["complete"]:
        return f"${summary['known_cost_usd']}"
    if summary["unpriced_endpoints"]:
        return f"unknown, no prices set for {', '.join(summary['unpriced_endpoints'])}"
    return "unknown"


def calls_text(jobs, changes):
    """What the plan says about calls: none when nothing changed, else how many new calls."""
    calls = new_calls(jobs)
    if calls:
        return f"Applying this recipe makes {calls:,} new call(s)."
    if all(c.action == "unchanged" for c in changes):
        return "Nothing changed: applying this recipe makes no new calls."
    return "Applying this recipe makes no new calls."
