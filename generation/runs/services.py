"""Generation runs: create, plan (dry run), start, execute, cancel, resume, retry, and progress figures.

A run is a toolkit version × endpoints × trials. Each unit (item, slot values, endpoint, trial) is one fresh
single-turn conversation and owns exactly one Output row: the rows are created up front (the unique constraint
makes duplicates impossible) and executing a run only fills rows still pending, so resuming never repeats work.
"""

import logging
from decimal import Decimal

from django.db import transaction
from django.db.models import Count, Q, Sum
from django.utils import timezone

from generation.runs.providers.base import preload
from stereoscope import jobs
from stereoscope.bulk import insert_rows, update_rows
from stereoscope.services import record_activity
from stereoscope.trash import TrashError, refuse_if_live, refuse_if_work
from stereoscope.untrusted import loads_json

from ..models import (
    BATCH_PROVIDERS,
    ExecutionMode,
    GenerationRun,
    Output,
    OutputStatus,
    Provider,
    RunStatus,
)
from ..selectors import toolkits_for  # noqa: F401  (generation's forms, API and import use it from here)
from ..tasks import execute_run
from ..toolkits.expansion import SlotError, count_units, expand_units
from ..toolkits.services import TOOLKITS
from . import batches, connections, spending
from .limits import estimate_tokens
from .providers.base import ProviderError, merged_params, validate_params
from .runner import CallUnit, execute_units

log = logging.getLogger(__name__)
MAX_TRIALS = 1000
MAX_UNITS = 500_000
DEFAULT_OUTPUT_TOKENS = 400


class RunError(ValueError):
    """Bad input for a run; the message says what to fix."""


def normalize_text(text):
    return (text or "").replace("\r\n", "\n").replace("\r", "\n")


def parse_overrides(value):
    if value in (None, ""):
        return {}
    if isinstance(value, str):
        try:
            value = loads_json(value)
        except ValueError as exc:
            raise RunError(f"Parameter overrides must be a JSON object: {exc}.") from None
    if not isinstance(value, dict):
        raise RunError('Parameter overrides must be a JSON object, e.g. {"temperature": 0.7}.')
    try:
        validate_params({k: v for k, v in value.items() if v not in (None, "")})
    except ProviderError as exc:
        raise RunError(str(exc)) from None
    return value


CONTEXT_SYSTEM = "You are {persona}. Answer and behave accordingly."  # as questionnaire runs send a persona (Jung)
MAX_CONTEXTS = 5000


def clean_contexts(contexts):
    """A run's contexts: [{key, persona, turns}] with distinct non-empty keys and user/assistant turns."""
    if contexts in (None, []):
        return []
    if not isinstance(contexts, list):
        raise RunError("Contexts must be a list of {key, persona, turns}.")
    if len(contexts) > MAX_CONTEXTS:
        raise RunError(f"At most {MAX_CONTEXTS} contexts.")
    out, keys = [], set()
    for n, c in enumerate(contexts, 1):
        key = str(c.get("key", "")).strip() if isinstance(c, dict) else ""
        if not key:
            raise RunError(f"Context {n} needs a key.")
        if key in keys:
            raise RunError(f"Context key {key!r} appears twice.")
        keys.add(key)
        persona, turns = c.get("persona") or "", c.get("turns") or []
        if (
            not isinstance(persona, str)
            or not isinstance(turns, list)
            or not all(
                isinstance(t, dict) and t.get("role") in ("user", "assistant") and isinstance(t.get("content"), str)
                for t in turns
            )
        ):
            raise RunError(f"Context {key!r}: persona is text and turns are [{{role: user|assistant, content}}].")
        out.append(
            {
                "key": key[:200],
                "persona": persona,
                "turns": [{"role": t["role"], "content": t["content"]} for t in turns],
            }
        )
    return out


@transaction.atomic
def create_run(
    study,
    *,
    name,
    toolkit,
    endpoints,
    trials=1,
    param_overrides=None,
    system_prompt="",
    contexts=None,
    context_source="",
    actor=None,
    execution_mode=ExecutionMode.LIVE,
):
    """A draft run. Validates everything a launch would need, so a bad run is never saved."""
    name = (name or "").strip()
    if not name:
        raise RunError("Give the run a name.")
    if toolkit is None or not toolkits_for(study).filter(pk=toolkit.pk).exists():
        raise RunError("Choose a toolkit of this study or of the built-in library.")
    endpoints = list(endpoints or [])
    if not endpoints:
        raise RunError("Choose at least one model endpoint.")
    foreign = [str(e.pk) for e in endpoints if e.study_id != study.pk]
    if foreign:
        raise RunError(f"No endpoint {', '.join(foreign)} in this study.")
    try:
        trials = int(trials)
    except (TypeError, ValueError):
        raise RunError("Trials must be a whole number.") from None
    if not 1 <= trials <= MAX_TRIALS:
        raise RunError(f"Trials must be between 1 and {MAX_TRIALS}.")
    overrides = parse_overrides(param_overrides)
    execution_mode = check_mode(execution_mode or ExecutionMode.LIVE, endpoints)
    try:
        n = count_units(toolkit)
    except SlotError as exc:
        raise RunError(f"The toolkit cannot be expanded: {exc}") from None
    if n == 0:
        raise RunError("The toolkit has no items.")
    contexts = clean_contexts(contexts)
    if contexts and system_prompt and any(c["persona"] for c in contexts):
        raise RunError("The contexts' personas are the system messages; leave the system prompt empty.")
    n *= max(1, len(contexts))
    if n * len(endpoints) * trials > MAX_UNITS:
        raise RunError(f"{n * len(endpoints) * trials} units is more than the limit of {MAX_UNITS}.")
    run = GenerationRun.objects.create(
        study=study,
        name=name,
        toolkit=toolkit,
        trials=trials,
        param_overrides=overrides,
        system_prompt=system_prompt or "",
        contexts=contexts,
        context_source=(context_source or "")[:300],
        created_by=actor,
        execution_mode=execution_mode,
    )
    run.endpoints.set(endpoints)
    TOOLKITS.lock(toolkit)
    record_activity(study, actor, "created generation run", run.name)
    return run


@transaction.atomic
def delete_run(run, *, actor=None):
    """Delete a generation run that holds no work. Refused (RunError, saying what depends on it) while it is queued or
    running, and once it has outputs: paid or human work goes only with its study, into the trash."""
    run = GenerationRun.objects.select_for_update().get(pk=run.pk)
    try:
        refuse_if_live(run)
        refuse_if_work(run, f"The generation run “{run}”")
    except TrashError as exc:
        raise RunError(str(exc)) from None
    record_activity(run.study, actor, "deleted generation run", f"{run}")
    run.delete()


def check_mode(mode, endpoints):
    """The execution mode if every endpoint allows it; RunError otherwise."""
    try:
        return batches.check_mode(mode, endpoints)
    except ValueError as exc:
        raise RunError(str(exc)) from exc


def batch_allowed(run):
    """Every called endpoint of the run allows batch mode."""
    called = [e for e in run.endpoints.all() if e.provider != Provider.MANUAL]
    return bool(called) and all(e.batch_enabled and e.provider in BATCH_PROVIDERS for e in called)


def run_contexts(run):
    """The contexts a run asks its prompts in; one empty context ('') when it has none."""
    return run.contexts or [{"key": "", "persona": "", "turns": []}]


def messages_for(run, prompt, context_key=""):
    """One fresh conversation: the context's persona as system message (else the run's system prompt), the
    context's prior turns, then the rendered prompt — as a questionnaire run sends a context."""
    context = next((c for c in run.contexts or () if c["key"] == context_key), None) if context_key else None
    if context and context["persona"]:
        messages = [{"role": "system", "content": CONTEXT_SYSTEM.replace("{persona}", context["persona"])}]
    else:
        messages = [{"role": "system", "content": run.system_prompt}] if run.system_prompt else []
    messages += list(context["turns"]) if context else []
    return messages + [{"role": "user", "content": prompt}]


def plan(run, sample=50):
    """The dry run: calls, rendered prompts and estimated tokens and cost, before anything is spent."""
    units = list(expand_units(run.toolkit))
    contexts = run_contexts(run)
    endpoints = list(run.endpoints.order_by("name"))
    rows = []
    totals = {
        "calls": 0,
        "manual": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "cost_usd": Decimal("0"),
        "priced": True,
        "batch_cost_usd": Decimal("0"),
        "batch_priced": True,
    }
    prompt_tokens = sum(estimate_tokens(run.system_prompt) + estimate_tokens(u.prompt) for u in units) * len(contexts)
    problems = []
    for endpoint in endpoints:
        params = merged_params(endpoint, run.param_overrides)
        try:
            validate_params(params)
        except ProviderError as exc:
            problems.append(f"{endpoint.name}: {exc}")
        calls = len(units) * len(contexts) * run.trials
        out_tokens = calls * int(params.get("max_tokens") or DEFAULT_OUTPUT_TOKENS)
        in_tokens = prompt_tokens * run.trials
        estimate = batches.cost_estimate(endpoint, in_tokens, out_tokens)
        cost, batch_allowed, batch_cost = estimate["cost_usd"], estimate["batch_allowed"], estimate["batch_cost_usd"]
        manual = endpoint.provider == Provider.MANUAL
        if not manual:
            problems.extend(p.replace("“", "", 1).replace("”", "", 1) for p in connections.start_problems([endpoint]))
            if waiting := connections.pending_reason(endpoint.connection):
                problems.append(f"{endpoint.name}: {waiting} The run will wait for it.")
        rows.append(
            {
                "endpoint": endpoint,
                "calls": calls,
                "manual": manual,
                "params": params,
                "input_tokens": in_tokens,
                "output_tokens": out_tokens,
                "cost_usd": cost,
                "batch_allowed": batch_allowed,
                "batch_cost_usd": batch_cost,
            }
        )
        if batch_cost is None:
            totals["batch_priced"] = False
        else:
            totals["batch_cost_usd"] += batch_cost
        totals["manual" if manual else "calls"] += calls
        totals["input_tokens"] += in_tokens
        totals["output_tokens"] += out_tokens
        if cost is None:
            totals["priced"] = False
        else:
            totals["cost_usd"] += cost
    remaining = spending.remaining_budget(run.study)
    live_cost = totals["cost_usd"] if totals["priced"] else None
    totals["budget_remaining_usd"] = remaining
    if remaining is not None and live_cost is not None and live_cost > remaining:
        problems.append(
            f"The estimated cost (${live_cost:.2f}) is more than the study's remaining budget (${remaining:.2f}): "
            "the run will wait when the cap is reached until a study admin raises it."
        )
    return {
        "units_per_endpoint": len(units) * len(contexts) * run.trials,
        "prompts": len(units),
        "contexts": len(run.contexts or []),
        "endpoints": rows,
        "totals": totals,
        "problems": problems,
        "sample": [
            {
                "item": u.item.number,
                "slot_values": u.slot_values,
                "prompt": u.prompt,
                "context": c["key"],
                "messages": messages_for(run, u.prompt, c["key"]),
            }
            for c in contexts[:2]
            for u in units
        ][:sample],
    }


def materialize(run):
    """Create the pending Output row of every unit (idempotent: existing units are left alone)."""
    units = list(expand_units(run.toolkit))
    endpoints = list(run.endpoints.all())
    rows = [
        {
            "study": run.study_id,
            "run": run.pk,
            "item": u.item.pk if u.item else None,
            "endpoint": e.pk,
            "model_name": e.model_id,
            "trial": t,
            "context_key": c["key"],
            "variant_key": u.variant_key,
            "slot_values": u.slot_values,
            "prompt_text": u.prompt,
        }
        for e in endpoints
        for c in run_contexts(run)
        for u in units
        for t in range(1, run.trials + 1)
    ]
    insert_rows(Output, rows, ignore_conflicts=True)
    return len(rows)


def _enqueue(run):

    execute_run.delay(run.pk)


KEYED_PROVIDERS = (Provider.OPENAI, Provider.ANTHROPIC)


def key_variable_refusal(run):
    """A message naming the run's endpoints that their connection no longer allows, or ""."""
    problems = [
        f"“{e.name}”: {p}"
        for e in run.endpoints.select_related("connection")
        if e.provider != Provider.MANUAL and (p := connections.access_problem(e.connection, e.study_id, e.model_id))
    ]
    return ("Cannot start: " + "; ".join(problems)) if problems else ""


def check_ready(run):
    """Raise RunError when a run cannot be launched: missing key variables, bad parameters, no endpoints."""
    endpoints = list(run.endpoints.all())
    if not endpoints:
        raise RunError("The run has no endpoints.")
    problems = []
    for endpoint in endpoints:
        if endpoint.provider == Provider.MANUAL:
            continue
        found = connections.start_problems([endpoint])
        if found:
            problems.extend(found)
            continue
        try:
            validate_params(merged_params(endpoint, run.param_overrides))
        except ProviderError as exc:
            problems.append(f"“{endpoint.name}”: {exc}")
        if run.execution_mode == ExecutionMode.BATCH and not (
            endpoint.batch_enabled and endpoint.provider in BATCH_PROVIDERS
        ):
            problems.append(
                f"“{endpoint.name}” no longer allows batch mode (allow it again, or switch the run to live mode)"
            )
    if problems:
        raise RunError("Cannot start: " + "; ".join(problems) + ".")


def run_foreground(run, actor=None, progress_callback=None):
    """Start or resume a run in this process (the CLI). Returns RunStats, or None if workers hold all of it."""
    if run.is_import:
        raise RunError("An import run holds imported outputs; it has nothing to run.")
    check_ready(run)
    with transaction.atomic():
        materialize(run)
        jobs.queue(RUN_JOB, run, actor)
        record_activity(run.study, actor, "ran generation run in the foreground", run.name)
    return execute(run.pk, progress_callback)


def start(run, actor=None):
    if run.is_import:
        raise RunError("An import run holds imported outputs; it has nothing to start.")
    if run.status in (RunStatus.QUEUED, RunStatus.RUNNING) and jobs.is_live(run):
        raise RunError("The run is already running.")
    check_ready(run)
    return _queue_and_launch(run, actor, "started generation run")


def _queue_and_launch(run, actor, verb, message=""):
    with transaction.atomic():
        materialize(run)
        jobs.queue(RUN_JOB, run, actor, message)
        record_activity(run.study, actor, verb, run.name)
    jobs.launch(RUN_JOB, run)
    run.refresh_from_db()
    return run


def set_mode(run, mode, actor=None):
    """Switch a run between live and batch mode (e.g. units back from an expired batch run live)."""
    if jobs.is_live(run):
        raise RunError("Stop the run (or wait for its workers) before switching its execution mode.")
    mode = check_mode(mode, list(run.endpoints.exclude(provider=Provider.MANUAL)))
    GenerationRun.objects.filter(pk=run.pk).update(execution_mode=mode)
    run.execution_mode = mode
    record_activity(run.study, actor, f"switched to {mode} mode:", run.name)
    return run


def resume(run, actor=None):
    """Queue the run again; only units without an output (pending) are executed."""
    if run.is_import:
        raise RunError("An import run has nothing to resume.")
    check_ready(run)
    return _queue_and_launch(run, actor, "resumed generation run", "Resumed.")


def retry_failed(run, actor=None):
    """Failed units go back to pending (their attempts stay on record) and the run resumes."""
    if run.is_import:
        raise RunError("An import run has nothing to retry.")
    check_ready(run)

    def resume_run(n):
        record_activity(run.study, actor, f"retried {n} failed units of", run.name)
        resume(run, actor)

    jobs.retry_failed(RUN_JOB, run, actor, then=resume_run)
    return run


def cancel(run, actor=None):
    jobs.cancel(RUN_JOB, run)  # its open batches too
    record_activity(run.study, actor, "cancelled generation run", run.name)
    return run


OUTPUT_RESULT_FIELDS = [
    "text",
    "status",
    "finish_reason",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "latency_ms",
    "completed_at",
    "error",
    "provenance",
]


def _output_result(unit, result):
    truncated = result.finish_reason == "length"
    return {
        "text": normalize_text(result.text),
        "status": OutputStatus.DONE,
        "finish_reason": (result.finish_reason or "")[:50],
        "input_tokens": result.input_tokens,
        "output_tokens": result.output_tokens,
        "cost_usd": result.cost_usd,
        "latency_ms": result.latency_ms,
        "completed_at": timezone.now(),
        "error": "Truncated: the model stopped at max_tokens." if truncated else "",
        "provenance": {
            "source": "generated",
            "provider": unit.endpoint.provider,
            "model": unit.endpoint.model_id,
            "params": unit.params,
            "messages": unit.messages,
        },
    }


class OutputSink:
    """Writes each unit's result into its Output row (only while it is still pending)."""

    def on_success(self, unit, result):
        Output.objects.filter(pk=unit.payload, status=OutputStatus.PENDING).update(**_output_result(unit, result))

    def on_success_many(self, pairs):
        """A batch of results with one prepared UPDATE (the runner calls this inside a transaction)."""
        update_rows(
            Output,
            OUTPUT_RESULT_FIELDS,
            [(unit.payload, _output_result(unit, result)) for unit, result in pairs],
            where={"status": OutputStatus.PENDING},
        )

    def on_failure(self, unit, error):
        Output.objects.filter(pk=unit.payload, status=OutputStatus.PENDING).update(
            status=OutputStatus.FAILED, error=error, completed_at=timezone.now()
        )


def _callable_outputs(run):
    endpoints = {e.pk: e for e in run.endpoints.exclude(provider=Provider.MANUAL)}
    rows = run.outputs.filter(
        status__in=[OutputStatus.PENDING, OutputStatus.IN_FLIGHT], endpoint_id__in=list(endpoints)
    )
    return endpoints, rows


class GenerationRunJob(batches.BatchModeKind, jobs.JobKind):
    """A generation run for the job engine: a unit is one pending Output of a called (not manual) endpoint.
    In batch mode the units go to the providers' batch APIs (generation.runs.batches) instead of live calls."""

    name = "generation.run"
    model = GenerationRun
    task_name = "generation.execute_run"
    label = "run"
    error = RunError
    returned_hint = ", or switch the run to live"

    def warm_up(self):

        preload()

    def enqueue(self, job):
        _enqueue(job)

    def get(self, job_id):
        return GenerationRun.objects.select_related("study").get(pk=job_id)

    def pending_keys(self, run):
        held = self.held(run)
        return [pk for pk in _callable_outputs(run)[1].order_by("pk").values_list("pk", flat=True) if pk not in held]

    def load_units(self, run, keys, include_held=False):
        endpoints, rows = _callable_outputs(run)
        held = set() if include_held else self.held(run)
        params = {pk: merged_params(e, run.param_overrides) for pk, e in endpoints.items()}
        return [
            CallUnit(
                unit_ref=f"output:{pk}",
                endpoint=endpoints[ep],
                messages=messages_for(run, prompt, context_key),
                params=dict(params[ep]),
                purpose="generation",
                payload=pk,
            )
            for pk, ep, prompt, context_key in rows.filter(pk__in=keys)
            .order_by("pk")
            .values_list("pk", "endpoint_id", "prompt_text", "context_key")
            if pk not in held
        ]

    def batch_sink(self, run):
        return OutputSink()

    def run_live(self, run, source, cancel_check, progress):
        return execute_units(run.study, source, OutputSink(), cancel_check=cancel_check, progress=progress)

    def reset_failed(self, run):
        return run.outputs.filter(status=OutputStatus.FAILED).update(status=OutputStatus.PENDING, error="")

    def refuse(self, run):
        # re-checked when the run really starts: the allow-list may have changed while it was queued
        return key_variable_refusal(run)

    def outcome(self, run):
        pending = run.outputs.filter(status__in=[OutputStatus.PENDING, OutputStatus.IN_FLIGHT])
        left = pending.count()
        if left == 0:
            failed = run.outputs.filter(status=OutputStatus.FAILED).count()
            return RunStatus.COMPLETED, f"{failed} units failed; see their reasons and retry them." if failed else ""
        waiting = self.batches_waiting(run, left)
        if waiting:
            return waiting
        manual = pending.filter(endpoint__provider=Provider.MANUAL).count()
        if manual == left:
            return RunStatus.RUNNING, f"Waiting for {manual} manual answers."
        return self.batches_returned(run, left - manual) or (
            run.status,
            "Stopped with units left; resume to run them.",
        )


RUN_JOB = jobs.register(GenerationRunJob())


def execute(run_id, progress_callback=None):
    """Work on a run in this process (with any other workers on it). Returns RunStats, or None if nothing was left
    for this worker."""
    return jobs.execute(RUN_JOB, run_id, progress_callback)


def finish(run_id, cancelled=False):
    """Set the run's final status from its units."""
    jobs.finish(RUN_JOB, run_id, cancelled)


def counts(run):
    """done / failed / pending counts, overall and per endpoint, with token and cost totals."""
    rows = (
        run.outputs.values("endpoint_id", "endpoint__name", "model_name")
        .annotate(
            total=Count("id"),
            done=Count("id", filter=Q(status=OutputStatus.DONE)),
            failed=Count("id", filter=Q(status=OutputStatus.FAILED)),
            truncated=Count("id", filter=Q(finish_reason="length")),
            input_tokens=Sum("input_tokens"),
            output_tokens=Sum("output_tokens"),
            cost_usd=Sum("cost_usd"),
        )
        .order_by("endpoint__name", "model_name")
    )
    per_endpoint = []
    overall = {
        "total": 0,
        "done": 0,
        "failed": 0,
        "truncated": 0,
        "input_tokens": 0,
        "output_tokens": 0,
        "cost_usd": Decimal("0"),
    }
    for row in rows:
        row["pending"] = row["total"] - row["done"] - row["failed"]
        per_endpoint.append(row)
        for key in overall:
            overall[key] += row[key] or 0
    overall["pending"] = overall["total"] - overall["done"] - overall["failed"]
    progress = run.progress or {}
    live = jobs.is_live(run)
    overall["in_flight"] = progress.get("in_flight", 0) if live else 0
    overall["rate"] = progress.get("rate") if live else None
    overall["eta_s"] = progress.get("eta_s") if live else None
    overall["percent"] = (
        round(100 * (overall["done"] + overall["failed"]) / overall["total"]) if overall["total"] else 0
    )
    return {"overall": overall, "per_endpoint": per_endpoint}
