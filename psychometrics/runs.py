"""Questionnaire runs: create (validated), plan, start, execute, cancel, resume, retry, audit sample, run files.

A run is an instrument form × a context set × endpoints × repetitions. Every unit (item, context, endpoint,
repetition) is one fresh conversation: [system persona] + prior turns + the item, and owns exactly one Response
row, created up front; executing only fills pending rows, so resuming never repeats work. Calls go through
generation.runs.runner.execute_units (limits, retries, Retry-After, one ProviderCall per attempt).
"""

import logging
import random
from pathlib import Path

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from generation import selectors as generation
from generation.models import ExecutionMode, Provider, RunStatus
from generation.runs import batches
from generation.runs.limits import estimate_tokens
from generation.runs.providers.base import ProviderError, merged_params, preload, validate_params
from generation.runs.runner import CallUnit, execute_units
from stereoscope import jobs, schemas
from stereoscope.services import record_activity
from stereoscope.trash import TrashError, refuse_if_live, refuse_if_work

from . import extraction, prompts
from .models import (
    BARE_CONTEXT_KEY,
    Context,
    ContextSet,
    Extracted,
    ExtractionAudit,
    QuestionnaireRun,
    Response,
    ResponseStatus,
)
from .services import INSTRUMENTS, PsychError, instruments_for
from .tasks import execute_questionnaire_run

log = logging.getLogger(__name__)
MAX_REPETITIONS = 100  # also in psychometrics/schema/run_config.schema.json (tests/architecture/test_input_schemas.py)
CONFIG_SCHEMA = schemas.register("run_config", Path(__file__).resolve().parent / "schema" / "run_config.schema.json")
MAX_UNITS = 500_000
RUN_FILE_VERSION = 1


def template_for(run):
    if run.template_key == "custom":
        return prompts.custom_template(run.custom_user, run.custom_system, run.option_format)
    return prompts.TEMPLATES[run.template_key]


def clean_seeds(seeds, repetitions):
    """A run's seed grid: distinct whole numbers, one per repetition. Returns (seeds, repetitions, problems); a run
    that lists seeds and keeps the default of one repetition gets one repetition per seed."""
    if seeds in (None, "", []):
        return [], repetitions, []
    if isinstance(seeds, str):
        seeds = [s for s in seeds.replace(",", " ").split() if s]
    try:
        if not isinstance(seeds, (list, tuple)) or any(isinstance(s, (bool, float)) for s in seeds):
            raise ValueError
        seeds = [int(s) for s in seeds]
    except (TypeError, ValueError):
        return [], repetitions, ["Seeds must be a list of whole numbers."]
    problems = []
    if len(set(seeds)) != len(seeds):
        problems.append("Seeds must be different from each other.")
    if repetitions in (1, "1", None, ""):
        repetitions = len(seeds)
    elif str(repetitions).strip() != str(len(seeds)):
        problems.append(f"List one seed per repetition: {len(seeds)} seeds for {repetitions} repetitions.")
    return seeds, repetitions, problems


def validate_config(
    *,
    instrument,
    context_set,
    endpoints,
    repetitions,
    template_key,
    seeds=None,
    custom_user="",
    custom_system="",
    option_format="lines",
    option_order="fixed",
    option_numbering="position",
    extractors=None,
    refusal_policy="fallback",
    param_overrides=None,
    study=None,
    judge_endpoint=None,
):
    """Check a run's configuration; raise PsychError naming every problem. Returns cleaned values.

    The settings' shapes are the schema's (psychometrics/schema/run_config.schema.json); code checks the objects
    named (instrument, context set, endpoints, judge) and the rules across fields."""
    settings = {
        "repetitions": repetitions,
        "template_key": template_key,
        "custom_user": custom_user,
        "custom_system": custom_system,
        "option_format": option_format,
        "option_order": option_order,
        "option_numbering": option_numbering,
        "refusal_policy": refusal_policy,
        "extractors": extractors or None,
        "param_overrides": param_overrides or None,
    }
    seeds, repetitions, problems = clean_seeds(seeds, repetitions)
    settings["repetitions"] = repetitions
    shape = [p.message for p in schemas.problems(settings, CONFIG_SCHEMA, what="The run configuration")]
    problems += shape
    repetitions = int(repetitions) if not any(m.startswith("Repetitions") for m in shape) else 1
    endpoints = list(endpoints or [])
    problems += _object_problems(instrument, context_set, endpoints, study)
    template = _template(template_key, custom_user, custom_system, option_format, instrument, problems)
    if template is not None and option_order in prompts.ORDER_MODES and option_order != "fixed":
        if not prompts.lists_options(template):
            problems.append("This template does not list the answer options ({options}), so their order cannot change.")
    try:
        extractors = extraction.validate_chain(
            extractors or (list(template.suggested_extractors) if template else ["number"])
        )
    except ValueError as exc:
        problems.append(str(exc))
    judge_endpoint = _judge(extractors, judge_endpoint, study, problems)
    overrides = param_overrides if isinstance(param_overrides, dict) else {}
    try:
        validate_params({k: v for k, v in overrides.items() if v not in (None, "")})
    except ProviderError as exc:
        problems.append(str(exc))
    _context_problems(template, context_set, problems)
    if not problems and instrument is not None:
        n_contexts = context_set.contexts.filter(included=True).count() if context_set is not None else 1
        n = instrument.items.count() * n_contexts * len(endpoints) * repetitions
        if n > MAX_UNITS:
            problems.append(f"{n} units is more than the limit of {MAX_UNITS}.")
    if problems:
        raise PsychError(" ".join(problems))
    return {
        "endpoints": endpoints,
        "repetitions": repetitions,
        "extractors": extractors,
        "param_overrides": overrides,
        "seeds": seeds,
        "judge_endpoint": judge_endpoint,
    }


def _object_problems(instrument, context_set, endpoints, study):
    problems = []
    if instrument is None:
        problems.append("Choose an instrument.")
    elif instrument.continuous:
        problems.append("A continuous instrument holds imported human data; it cannot be asked as options.")
    if context_set is not None and study is not None and context_set.study_id != study.pk:
        problems.append(f"No context set {context_set.pk} in this study.")
    if not endpoints:
        problems.append("Choose at least one model endpoint.")
    foreign = [str(e.pk) for e in endpoints if study is not None and e.study_id != study.pk]
    if foreign:
        problems.append(f"No endpoint {', '.join(foreign)} in this study.")
    return problems


def _template(template_key, custom_user, custom_system, option_format, instrument, problems):
    """The prompt template chosen, checked against the instrument (Fang's 1–7 scale, items with own options)."""
    template = None
    if template_key == "custom":
        try:
            template = prompts.custom_template(custom_user, custom_system, option_format)
        except prompts.PromptError as exc:
            problems.append(str(exc))
    elif isinstance(template_key, str) and template_key in prompts.TEMPLATES:
        template = prompts.TEMPLATES[template_key]
    else:
        problems.append(
            f"Unknown template {template_key!r}; choose one of {', '.join(list(prompts.TEMPLATES) + ['custom'])}."
        )
    if template_key == "fang2025" and instrument is not None and (instrument.scale_min, instrument.scale_max) != (1, 7):
        problems.append(
            f"Fang's template states a 1–7 scale, but the instrument's scale is "
            f"{instrument.scale_min:g}–{instrument.scale_max:g}; use another template."
        )
    if (
        template is not None
        and instrument is not None
        and not prompts.lists_options(template)
        and any(item.options for item in instrument.items.all())
    ):
        problems.append(
            f"Some items have their own answer options, but the template “{template.name}” does not "
            "list options ({options}); use another template."
        )
    return template


def _judge(extractors, judge_endpoint, study, problems):
    """The judge endpoint of an llm extraction step (None when no step uses one)."""
    if not (isinstance(extractors, list) and extraction.JUDGE_STEP in extractors):
        return None  # no llm step: the judge is not used
    if judge_endpoint is None:
        problems.append("The model judge step (llm) needs a judge endpoint.")
    elif study is not None and judge_endpoint.study_id != study.pk:
        problems.append(f"No endpoint {judge_endpoint.pk} in this study.")
    elif judge_endpoint.provider == Provider.MANUAL:
        problems.append("The judge endpoint must be callable (not a manual endpoint).")
    return judge_endpoint


def _context_problems(template, context_set, problems):
    if template is not None and template.persona_required:
        if context_set is None or context_set.contexts.filter(included=True, persona="").exists():
            problems.append(
                f"The template “{template.name}” needs a persona in every context"
                f"{'; a run without a context set has none' if context_set is None else ''}."
            )
    if context_set is not None and not context_set.contexts.filter(included=True).exists():
        problems.append("The context set has no included contexts.")


@transaction.atomic
def create_run(
    study,
    *,
    name,
    instrument,
    context_set,
    endpoints,
    repetitions=1,
    seeds=None,
    template_key="jung2025",
    custom_user="",
    custom_system="",
    option_format="lines",
    option_order="fixed",
    option_numbering="position",
    order_seed=0,
    extractors=None,
    refusal_policy="fallback",
    json_field="answer",
    param_overrides=None,
    audit_per_model=100,
    judge_endpoint=None,
    actor=None,
    execution_mode=ExecutionMode.LIVE,
):
    name = (name or "").strip()
    if not name:
        raise PsychError("Give the run a name.")
    if instrument is not None and not instruments_for(study).filter(pk=instrument.pk).exists():
        raise PsychError(f"No instrument {instrument.pk} in this study.")
    try:
        order_seed = int(order_seed)
        audit_per_model = int(audit_per_model)
    except (TypeError, ValueError):
        raise PsychError("The order seed and the audit sample size must be whole numbers.") from None
    if audit_per_model < 0:
        raise PsychError("The audit sample size cannot be negative.")
    try:
        execution_mode = batches.check_mode(execution_mode or ExecutionMode.LIVE, list(endpoints or []))
    except ValueError as exc:
        raise PsychError(str(exc)) from exc
    clean = validate_config(
        instrument=instrument,
        context_set=context_set,
        endpoints=endpoints,
        repetitions=repetitions,
        seeds=seeds,
        template_key=template_key,
        custom_user=custom_user,
        custom_system=custom_system,
        option_format=option_format,
        option_order=option_order,
        option_numbering=option_numbering,
        extractors=extractors,
        refusal_policy=refusal_policy,
        param_overrides=param_overrides,
        study=study,
        judge_endpoint=judge_endpoint,
    )
    run = QuestionnaireRun.objects.create(
        study=study,
        name=name,
        instrument=instrument,
        context_set=context_set,
        repetitions=clean["repetitions"],
        seeds=clean["seeds"],
        template_key=template_key,
        custom_user=custom_user or "",
        custom_system=custom_system or "",
        option_format=option_format,
        option_order=option_order,
        option_numbering=option_numbering,
        order_seed=order_seed,
        extractors=clean["extractors"],
        judge_endpoint=clean["judge_endpoint"],
        refusal_policy=refusal_policy,
        json_field=json_field or "answer",
        param_overrides=clean["param_overrides"],
        audit_per_model=audit_per_model,
        created_by=actor,
        execution_mode=execution_mode,
    )
    run.endpoints.set(clean["endpoints"])
    INSTRUMENTS.lock(instrument)
    record_activity(study, actor, "created questionnaire run", run.name)
    return run


@transaction.atomic
def delete_run(run, *, actor=None):
    """Delete a questionnaire run that holds no work. Refused (PsychError, saying what depends on it) while it is
    queued or running, and once it has responses: paid or human work goes only with its study, into the trash."""
    run = QuestionnaireRun.objects.select_for_update().get(pk=run.pk)
    try:
        refuse_if_live(run)
        refuse_if_work(run, f"The questionnaire run “{run}”")
    except TrashError as exc:
        raise PsychError(str(exc)) from None
    record_activity(run.study, actor, "deleted questionnaire run", f"{run}")
    run.delete()


def run_contexts(run):
    """The contexts a run asks, in order; a run without a context set asks one implicit empty context ('none'),
    an unsaved Context whose responses store no context row."""
    if run.context_set_id is None:
        return [Context(key=BARE_CONTEXT_KEY)]
    return list(run.context_set.contexts.filter(included=True).order_by("order", "key"))


def unit_rng(run, context_key, item_id, endpoint_key, repetition):
    """The per-prompt random generator of option permutations: a string seed of stable keys (run seed, context key,
    item id, endpoint name, repetition), never database ids, so another installation renders the same prompts."""
    return random.Random(f"{run.order_seed}|{context_key}|{item_id}|{endpoint_key}|{repetition}")


def unit_seed(run, repetition, endpoint_seed=None):
    """The provider seed of a repetition: its own from the run's seed grid, else the endpoint's (or none)."""
    if run.seeds:
        return run.seeds[repetition - 1]
    return endpoint_seed if isinstance(endpoint_seed, int) and not isinstance(endpoint_seed, bool) else None


def build_unit(run, template, item, context, endpoint_key, repetition, points, labels):
    """One unit's option order (scale points, or file positions of the item's own options), options and messages."""
    rng = unit_rng(run, context.key, item.item_id, endpoint_key, repetition)
    if item.options:
        order = prompts.option_order(prompts.item_option_keys(item.options), run.option_order, rng)
        options = prompts.presented_item_options(order, item.options, run.option_numbering)
    else:
        order = prompts.option_order(points, run.option_order, rng)
        options = prompts.presented_options(order, labels, points, run.option_numbering)
    messages = prompts.render_messages(
        template,
        item.text,
        options,
        persona=context.persona,
        turns=context.turns,
        instruction=run.instrument.instruction,
    )
    return order, options, messages


def materialize(run):
    """Create every pending Response row (idempotent)."""
    template = template_for(run)
    instrument = run.instrument
    points = list(range(int(instrument.scale_min), int(instrument.scale_max) + 1))
    labels = {int(k): v for k, v in (instrument.scale_labels or {}).items()}
    items = list(instrument.items.order_by("position"))
    contexts = run_contexts(run)
    existing = set(run.responses.values_list("item_id", "context_id", "endpoint_id", "repetition"))
    rows = []
    for endpoint in run.endpoints.all():
        endpoint_seed = merged_params(endpoint, run.param_overrides).get("seed")
        for context in contexts:
            for rep in range(1, run.repetitions + 1):
                for item in items:
                    if (item.pk, context.pk, endpoint.pk, rep) in existing:
                        continue
                    order, options, messages = build_unit(
                        run, template, item, context, endpoint.name, rep, points, labels
                    )
                    rows.append(
                        Response(
                            run=run,
                            item=item,
                            context=context if context.pk else None,
                            endpoint=endpoint,
                            model_name=endpoint.model_id,
                            repetition=rep,
                            seed=unit_seed(run, rep, endpoint_seed),
                            options=options,
                            permutation=order,
                            messages=messages,
                        )
                    )
    Response.objects.bulk_create(rows, batch_size=1000, ignore_conflicts=True)
    return len(rows)


ANSWER_TOKENS = 100  # output tokens per answer in a dry run when the endpoint sets no max_tokens


def plan(run, sample=5):
    """The dry run: number of calls per endpoint and a few rendered conversations."""
    template = template_for(run)
    instrument = run.instrument
    points = list(range(int(instrument.scale_min), int(instrument.scale_max) + 1))
    labels = {int(k): v for k, v in (instrument.scale_labels or {}).items()}
    items = list(instrument.items.order_by("position"))
    all_contexts = run_contexts(run)
    contexts, n_contexts = all_contexts[:2], len(all_contexts)
    endpoints = list(run.endpoints.order_by("name"))
    per_endpoint = len(items) * n_contexts * run.repetitions
    examples = []
    for context in contexts:
        for item in items[:sample]:
            order, options, messages = build_unit(
                run, template, item, context, endpoints[0].name if endpoints else "", 1, points, labels
            )
            examples.append({"context": context.key, "item": item.item_id, "permutation": order, "messages": messages})
    # every unit rendered once, for the first endpoint: other endpoints and repetitions differ only in option order
    in_tokens = run.repetitions * sum(
        estimate_tokens(m["content"])
        for context in all_contexts
        for item in items
        for m in build_unit(run, template, item, context, endpoints[0].name if endpoints else "", 1, points, labels)[2]
    )
    rows = []
    for endpoint in endpoints:
        max_tokens = merged_params(endpoint, run.param_overrides).get("max_tokens")
        out_tokens = per_endpoint * int(max_tokens or ANSWER_TOKENS)
        estimate = batches.cost_estimate(endpoint, in_tokens, out_tokens)
        rows.append(
            {"endpoint": endpoint, "calls": per_endpoint, "input_tokens": in_tokens, "output_tokens": out_tokens}
            | estimate
        )
    return {
        "calls_per_endpoint": per_endpoint,
        "calls": per_endpoint * len(endpoints),
        "endpoints": endpoints,
        "endpoint_rows": rows,
        "totals": batches.cost_totals(rows),
        "output_tokens_per_answer": ANSWER_TOKENS,
        "examples": examples[:sample],
    }


def _enqueue(run):

    execute_questionnaire_run.delay(run.pk)


def _queue(run, actor, verb):
    if run.status in (RunStatus.QUEUED, RunStatus.RUNNING) and jobs.is_live(run):
        raise PsychError("The run is already running.")
    with transaction.atomic():
        materialize(run)
        jobs.queue(QUESTIONNAIRE_JOB, run, actor)
        record_activity(run.study, actor, verb, run.name)


def start(run, actor=None):
    _queue(run, actor, "started questionnaire run")
    jobs.launch(QUESTIONNAIRE_JOB, run)
    run.refresh_from_db()
    return run


def run_foreground(run, actor=None, progress_callback=None):
    """Start or resume a run in this process (`recipe run`); returns RunStats, or None if a worker holds it."""
    _queue(run, actor, "ran questionnaire run in the foreground")
    return execute(run.pk, progress_callback)


resume = start


def retry_failed(run, actor=None):
    def restart(n):
        record_activity(run.study, actor, f"retried {n} failed units of", run.name)
        start(run, actor)

    jobs.retry_failed(QUESTIONNAIRE_JOB, run, actor, then=restart)
    return run


def cancel(run, actor=None):
    jobs.cancel(QUESTIONNAIRE_JOB, run)  # its open batches too
    record_activity(run.study, actor, "cancelled questionnaire run", run.name)
    return run


class ResponseSink:
    """Extracts the answer of each finished unit and stores it with the raw text (pending rows only)."""

    def __init__(self, run):
        self.chain = run.extractors or ["number"]
        self.policy = run.refusal_policy
        self.field = run.json_field or "answer"

    def on_success(self, unit, result):
        options = unit.payload["options"]
        got = extraction.extract(result.text, options, self.chain, self.policy, self.field)
        Response.objects.filter(pk=unit.payload["pk"], status=ResponseStatus.PENDING).update(
            status=ResponseStatus.DONE,
            raw_text=result.text or "",
            extraction=got.status,
            extracted_code=got.code or "",
            value=got.value if got.status == "ok" else None,
            extraction_method=got.method[:30],
            extraction_detail=got.detail[:300],
            error="",
            completed_at=timezone.now(),
        )

    def on_failure(self, unit, error):
        Response.objects.filter(pk=unit.payload["pk"], status=ResponseStatus.PENDING).update(
            status=ResponseStatus.FAILED, error=error, completed_at=timezone.now()
        )


class JudgeSink:
    """Stores the judge model's reading of an open answer (method "llm"); the raw answer stays as it was."""

    def on_success(self, unit, result):
        got = extraction.read_judgement(result.text, unit.payload["options"])
        Response.objects.filter(pk=unit.payload["pk"]).exclude(extraction_method=extraction.JUDGE_STEP).update(
            extraction=got.status,
            extracted_code=got.code or "",
            value=got.value if got.status == "ok" else None,
            extraction_method=extraction.JUDGE_STEP,
            extraction_detail=got.detail[:300],
        )

    def on_failure(self, unit, error):
        Response.objects.filter(pk=unit.payload["pk"]).exclude(extraction_method=extraction.JUDGE_STEP).update(
            extraction_method=extraction.JUDGE_STEP, extraction_detail=f"judge call failed: {error}"[:300]
        )


def judge_units(run):
    """One judge call per finished answer the rule chain left inconclusive or not present (never twice)."""
    if extraction.JUDGE_STEP not in (run.extractors or []) or run.judge_endpoint_id is None:
        return []
    judge = generation.endpoint(run.judge_endpoint_id)
    params = merged_params(judge, {})
    rows = (
        run.responses.filter(status=ResponseStatus.DONE, extraction__in=extraction.JUDGED)
        .exclude(extraction_method=extraction.JUDGE_STEP)
        .order_by("pk")
    )
    return [
        CallUnit(
            unit_ref=f"response-judge:{pk}",
            endpoint=judge,
            purpose="psychometrics_judge",
            messages=extraction.judge_messages(statement, options, raw),
            params=dict(params),
            payload={"pk": pk, "options": options},
        )
        for pk, statement, options, raw in rows.values_list("pk", "item__text", "options", "raw_text")
    ]


def judge_open_answers(run, cancel_check=None):
    """The extraction chain's last step: the judge endpoint reads the answers the rules left open."""
    units = judge_units(run)
    return execute_units(run.study, units, JudgeSink(), cancel_check=cancel_check) if units else None


def _callable_responses(run):
    endpoints = {e.pk: e for e in run.endpoints.exclude(provider=Provider.MANUAL)}
    return endpoints, run.responses.filter(status=ResponseStatus.PENDING, endpoint_id__in=list(endpoints))


def pending_units(run, keys=None):
    endpoints, rows = _callable_responses(run)
    if keys is not None:
        rows = rows.filter(pk__in=keys)
    params = {pk: merged_params(e, run.param_overrides) for pk, e in endpoints.items()}
    return [
        CallUnit(
            unit_ref=f"response:{pk}",
            endpoint=endpoints[ep],
            messages=messages,
            params={**params[ep], **({"seed": seed} if seed is not None else {})},
            purpose="psychometrics",
            payload={"pk": pk, "options": options},
        )
        for pk, ep, messages, options, seed in rows.order_by("pk").values_list(
            "pk", "endpoint_id", "messages", "options", "seed"
        )
    ]


class QuestionnaireRunJob(batches.BatchModeKind, jobs.JobKind):
    """A questionnaire run for the job engine: a unit is one pending Response of a called endpoint."""

    name = "psychometrics.run"
    model = QuestionnaireRun
    task_name = "psychometrics.execute_questionnaire_run"
    label = "run"
    error = PsychError

    def warm_up(self):

        preload()

    def enqueue(self, job):
        _enqueue(job)

    def get(self, job_id):
        return QuestionnaireRun.objects.select_related("study").get(pk=job_id)

    def pending_keys(self, run):
        held = self.held(run)
        return [pk for pk in _callable_responses(run)[1].order_by("pk").values_list("pk", flat=True) if pk not in held]

    def load_units(self, run, keys, include_held=False):
        held = set() if include_held else self.held(run)
        return [u for u in pending_units(run, keys) if u.payload["pk"] not in held]

    @staticmethod
    def batch_key(unit):
        return unit.payload["pk"]

    def batch_sink(self, run):
        return ResponseSink(run)

    def run_live(self, run, source, cancel_check, progress):
        """Live calls, then the extraction chain's judge step (in batch mode it follows the last batch)."""
        stats = execute_units(run.study, source, ResponseSink(run), cancel_check=cancel_check, progress=progress)
        if not stats.cancelled:  # the extraction chain's last step: the judge reads the answers the rules left open
            judge_open_answers(run, cancel_check)
        return stats

    def after_batches(self, run):
        """Once the last batch has ended: the judge reads the answers the rules left open (live calls)."""
        judge_open_answers(run, lambda: False)

    def reset_failed(self, run):
        return run.responses.filter(status=ResponseStatus.FAILED).update(status=ResponseStatus.PENDING, error="")

    def outcome(self, run):
        pending = run.responses.filter(status=ResponseStatus.PENDING)
        left = pending.count()
        if left == 0:
            failed = run.responses.filter(status=ResponseStatus.FAILED).count()
            return RunStatus.COMPLETED, f"{failed} units failed; see their reasons and retry them." if failed else ""
        manual = pending.filter(endpoint__provider=Provider.MANUAL).count()
        if manual == left:
            return RunStatus.RUNNING, f"Waiting for {manual} manual answers."
        return (
            self.batches_waiting(run, left)
            or self.batches_returned(run, left)
            or (run.status, "Stopped with units left; resume to run them.")
        )

    def on_finished(self, job_id, status):
        if status == RunStatus.COMPLETED:
            draw_audit_sample(QuestionnaireRun.objects.get(pk=job_id))


QUESTIONNAIRE_JOB = jobs.register(QuestionnaireRunJob())


def execute(run_id, progress_callback=None):
    """Work on a run in this process (with any other workers on it). Returns RunStats, or None if nothing was
    left for this worker."""
    return jobs.execute(QUESTIONNAIRE_JOB, run_id, progress_callback)


def finish(run_id, cancelled=False):
    jobs.finish(QUESTIONNAIRE_JOB, run_id, cancelled)


def draw_audit_sample(run, per_model=None, seed=None):
    """Mark a seeded random sample of N finished responses per endpoint for the extraction audit (idempotent:
    responses already sampled stay; the sample is topped up to N)."""
    per_model = run.audit_per_model if per_model is None else per_model
    seed = run.order_seed if seed is None else seed
    added = 0
    endpoints = run.responses.order_by().values_list("endpoint_id", "endpoint__name").distinct()
    for endpoint_id, endpoint_name in endpoints:
        done = run.responses.filter(endpoint_id=endpoint_id, status=ResponseStatus.DONE)
        have = done.filter(audit_sampled=True).count()
        if have >= per_model:
            continue
        # Stable keys, not database ids: the same sample in any installation.
        candidates = list(
            done.filter(audit_sampled=False)
            .order_by("context__key", "item__item_id", "repetition")
            .values_list("pk", flat=True)
        )
        rng = random.Random(f"audit|{seed}|{endpoint_name}")
        picked = rng.sample(candidates, min(per_model - have, len(candidates)))
        added += Response.objects.filter(pk__in=picked).update(audit_sampled=True)
    return added


def record_audit(response, user, correct, corrected_value=None, note=""):

    if corrected_value not in (None, ""):
        try:
            corrected_value = float(corrected_value)
        except (TypeError, ValueError):
            raise PsychError("The corrected value must be a number.") from None
        instrument = response.run.instrument
        if not instrument.scale_min <= corrected_value <= instrument.scale_max:
            raise PsychError(
                f"The corrected value must lie on the {instrument.scale_min:g}–{instrument.scale_max:g} scale."
            )
    else:
        corrected_value = None
    audit, _ = ExtractionAudit.objects.update_or_create(
        response=response,
        user=user,
        defaults={"correct": bool(correct), "corrected_value": corrected_value, "note": (note or "")[:300]},
    )
    return audit


def counts(run):
    rows = (
        run.responses.values("endpoint_id", "endpoint__name", "model_name")
        .annotate(
            total=Count("id"),
            done=Count("id", filter=Q(status=ResponseStatus.DONE)),
            failed=Count("id", filter=Q(status=ResponseStatus.FAILED)),
            ok=Count("id", filter=Q(extraction=Extracted.OK)),
            refused=Count("id", filter=Q(extraction=Extracted.REFUSED)),
            inconclusive=Count("id", filter=Q(extraction=Extracted.INCONCLUSIVE)),
            not_present=Count("id", filter=Q(extraction=Extracted.NOT_PRESENT)),
        )
        .order_by("endpoint__name")
    )
    overall = {k: 0 for k in ("total", "done", "failed", "ok", "refused", "inconclusive", "not_present")}
    per_endpoint = []
    for row in rows:
        row["pending"] = row["total"] - row["done"] - row["failed"]
        per_endpoint.append(row)
        for k in overall:
            overall[k] += row[k]
    overall["pending"] = overall["total"] - overall["done"] - overall["failed"]
    overall["percent"] = (
        round(100 * (overall["done"] + overall["failed"]) / overall["total"]) if overall["total"] else 0
    )
    live = jobs.is_live(run)
    progress = run.progress or {}
    overall["in_flight"] = progress.get("in_flight", 0) if live else 0
    overall["rate"] = progress.get("rate") if live else None
    overall["eta_s"] = progress.get("eta_s") if live else None
    return {"overall": overall, "per_endpoint": per_endpoint}


# -- run files ---------------------------------------------------------------------------------------------------
def export_run_file(run):
    """A declarative, re-runnable description of the run (R.U.Psycho style)."""
    return {
        "stereoscope_questionnaire_run": RUN_FILE_VERSION,
        "name": run.name,
        "instrument": {"name": run.instrument.name, "version": run.instrument.version},
        "context_set": run.context_set.name if run.context_set_id else None,
        "endpoints": [e.name for e in run.endpoints.order_by("name")],
        "repetitions": run.repetitions,
        "seeds": list(run.seeds or []),
        "template": {
            "key": run.template_key,
            "user": run.custom_user,
            "system": run.custom_system,
            "option_format": run.option_format,
        }
        if run.template_key == "custom"
        else {"key": run.template_key},
        "options": {"order": run.option_order, "numbering": run.option_numbering, "seed": run.order_seed},
        "extraction": {
            "chain": run.extractors,
            "refusal_policy": run.refusal_policy,
            "json_field": run.json_field,
            **({"judge_endpoint": run.judge_endpoint.name} if run.judge_endpoint_id else {}),
        },
        "params": run.param_overrides,
        "audit_per_model": run.audit_per_model,
    }


def create_run_from_file(study, data, actor=None, name=None):
    """Create a run from a run file; names are resolved in the study (instruments also in the library)."""
    if not isinstance(data, dict) or data.get("stereoscope_questionnaire_run") != RUN_FILE_VERSION:
        raise PsychError(
            f'Not a questionnaire run file (expected "stereoscope_questionnaire_run": {RUN_FILE_VERSION}).'
        )
    problems = []
    inst = data.get("instrument") or {}
    instrument = (
        instruments_for(study)
        .filter(name=inst.get("name"), version=inst.get("version"))
        .order_by("-study__is_library")
        .first()
        if isinstance(inst, dict)
        else None
    )
    if instrument is None:
        problems.append(
            f"No instrument {inst.get('name') if isinstance(inst, dict) else inst!r} "
            f"v{inst.get('version') if isinstance(inst, dict) else ''}."
        )
    context_set = ContextSet.objects.filter(study=study, name=data.get("context_set")).first()
    if context_set is None and data.get("context_set") is not None:
        problems.append(f"No context set named {data.get('context_set')!r} in this study.")
    names = data.get("endpoints") or []
    endpoints = generation.endpoints_named(study, names) if isinstance(names, list) else []
    missing = sorted(set(names if isinstance(names, list) else []) - {e.name for e in endpoints})
    if missing or not isinstance(names, list):
        problems.append(f"No endpoint(s) named {', '.join(map(str, missing)) or names!r} in this study.")
    ext = data.get("extraction") or {}
    judge = None
    if isinstance(ext, dict) and ext.get("judge_endpoint"):
        judge = generation.endpoint_named(study, ext["judge_endpoint"])
        if judge is None:
            problems.append(f"No judge endpoint named {ext['judge_endpoint']!r} in this study.")
    if problems:
        raise PsychError(" ".join(problems))
    template = data.get("template") or {}
    options = data.get("options") or {}
    ext = data.get("extraction") or {}
    return create_run(
        study,
        name=name or data.get("name") or "Run from file",
        instrument=instrument,
        context_set=context_set,
        endpoints=endpoints,
        repetitions=data.get("repetitions", 1),
        seeds=data.get("seeds") or [],
        template_key=template.get("key", "jung2025"),
        custom_user=template.get("user", ""),
        custom_system=template.get("system", ""),
        option_format=template.get("option_format", "lines"),
        option_order=options.get("order", "fixed"),
        option_numbering=options.get("numbering", "position"),
        order_seed=options.get("seed", 0),
        extractors=ext.get("chain"),
        refusal_policy=ext.get("refusal_policy", "fallback"),
        json_field=ext.get("json_field", "answer"),
        param_overrides=data.get("params") or {},
        audit_per_model=data.get("audit_per_model", 100),
        judge_endpoint=judge,
        actor=actor,
    )


def record_manual_answer(response, text, user=None):
    """Store an answer pasted from a chat interface (manual endpoints) and extract it like an API answer."""
    text = (text or "").replace("\r\n", "\n").strip()
    if not text:
        raise PsychError("Paste the model's answer (it is empty).")
    if response.status != ResponseStatus.PENDING:
        raise PsychError("This unit is answered already.")
    run = response.run
    got = extraction.extract(
        text, response.options, run.extractors or ["number"], run.refusal_policy, run.json_field or "answer"
    )
    Response.objects.filter(pk=response.pk, status=ResponseStatus.PENDING).update(
        status=ResponseStatus.DONE,
        raw_text=text,
        extraction=got.status,
        extracted_code=got.code or "",
        value=got.value if got.status == "ok" else None,
        extraction_method=got.method[:30],
        extraction_detail=got.detail[:300],
        error="",
        completed_at=timezone.now(),
    )
    if not run.responses.filter(status=ResponseStatus.PENDING).exists():
        finish(run.pk)
    response.refresh_from_db()
    return response
