"""Judge rounds: create with a plan shown before launch, materialise verdict rows, execute, re-ask, resume.

A round's assignment is fixed when it is launched: one Verdict row per (output, judge model), each with its batch
(batch_ref) and its shuffled position inside the batch, all derived from the round's seed. Executing a round only
calls batches that still have pending verdicts, so a re-run changes nothing and a crashed worker's round resumes
without duplicates (the unique constraint on (round, output, judge_model) makes duplicates impossible anyway).
"""

import logging
from collections import Counter, defaultdict

from django.db import transaction
from django.db.models import Count, Q
from django.utils import timezone

from generation import selectors as generation
from generation.models import ExecutionMode, OutputStatus, Provider, RunStatus
from generation.runs import batches as batch_mode
from generation.runs import connections
from generation.runs.limits import estimate_tokens
from generation.runs.providers.base import ProviderError, merged_params, preload, validate_params
from generation.runs.runner import CallUnit, RunStats, execute_units
from stereoscope import jobs
from stereoscope.services import record_activity
from stereoscope.trash import TrashError, refuse_if_live, refuse_if_work

from . import parsing, planner, prompts
from .models import JudgeRound, JudgeTemplate, Verdict, VerdictStatus
from .services import JUDGE_TEMPLATES
from .tasks import execute_round

log = logging.getLogger(__name__)
MAX_BATCH = 50
TOKENS_PER_VERDICT = 60
POLICY_CHOICES = ("rotation", "panel", "k_of_n")


class RoundError(ValueError):
    """Bad input for a round; the message says what to fix."""


def templates_for(study):
    return JudgeTemplate.objects.filter(Q(study=study) | Q(study__is_library=True)).select_related("study")


def target_of(item):
    if item is None:
        return ""
    return (item.target_stereotype or item.gender_mapping or "").strip()


def question_text(verdict, template):
    """The question a verdict asked, for pages: for a categorical template the label question (which of its labels
    fits the story, about the stored target), else whether the story fits the target stereotype."""
    if template.kind == "categorical":
        about = f" ({verdict.question})" if verdict.question else ""
        return f"Which label fits the story{about}: {' / '.join(template.labels or [])}?"
    if template.kind == "likert":
        scale = f"{template.scale_min}–{template.scale_max}"
        return f"How strongly does the story show the stereotype “{verdict.question}” ({scale})?"
    return f"Does the story fit the stereotype “{verdict.question}”?"


def source_outputs(rnd):
    """The outputs a round judges, before exclusions: the source run's (narrowed by output_filter)."""
    flt = rnd.output_filter or {}
    qs = generation.study_outputs(rnd.study_id)
    if rnd.source_run_id:
        qs = qs.filter(run_id=rnd.source_run_id)
    elif not flt.get("output_ids"):
        return generation.no_outputs()
    if flt.get("output_ids"):
        qs = qs.filter(pk__in=flt["output_ids"])
    if flt.get("item_numbers"):
        qs = qs.filter(item__number__in=flt["item_numbers"])
    if flt.get("models"):
        wanted = Q()
        for model in flt["models"]:
            wanted |= Q(model_name__iexact=model.strip())
        qs = qs.filter(wanted)
    return qs.select_related("item", "item__dimension", "endpoint", "run").order_by("pk")


def eligible_outputs(rnd):
    """(outputs to judge, {reason: count} of excluded ones)."""
    keep, excluded = [], Counter()
    for out in source_outputs(rnd):
        if out.status != OutputStatus.DONE:
            excluded[f"not done ({out.status})"] += 1
        elif not out.text.strip():
            excluded["empty text"] += 1
        elif out.item_id is None:
            excluded["no prompt item (no target stereotype)"] += 1
        elif not target_of(out.item):
            excluded[f"item {out.item.number} has no target stereotype"] += 1
        else:
            keep.append(out)
    return keep, dict(excluded)


def judge_list(judges):
    return [planner.Judge(e.model_identity, (e.model_family or "").lower(), (e.pk,)) for e in judges]


def families_of(outputs):
    fams = {}
    for out in outputs:
        if out.endpoint_id and out.endpoint.model_family:
            fams.setdefault(out.model_identity, out.endpoint.model_family.lower())
    return fams


def output_key(out):
    """Names an output the same way in every installation (never by a database id): run, endpoint, item, slots,
    trial."""
    who = out.endpoint.name if out.endpoint_id else out.model_name
    return f"{out.run.name}|{who}|{out.item.number if out.item_id else ''}|{out.variant_key}|{out.trial}"


def stable_keys(outputs):
    """{output id: stable key}; outputs of several runs that share a key are told apart by their id."""
    keys, seen = {}, set()
    for out in sorted(outputs, key=lambda o: o.pk):
        key = output_key(out)
        keys[out.pk] = key if key not in seen else f"{key}#{out.pk}"
        seen.add(key)
    return keys


def assignment(rnd, outputs=None, judges=None):
    """The Plan for a round (raises RoundError with the planner's message when impossible)."""
    if outputs is None:
        outputs, _ = eligible_outputs(rnd)
    judges = list(rnd.judges.order_by("pk")) if judges is None else judges
    keys = stable_keys(outputs)
    by_key = {key: pk for pk, key in keys.items()}
    try:
        plan = planner.build_plan(
            {keys[o.pk]: o.model_identity for o in outputs},
            judge_list(judges),
            policy=rnd.policy,
            seed=rnd.seed,
            k=rnd.k,
            forbid_same_family=rnd.forbid_same_family,
            families=families_of(outputs),
        )
    except planner.PlanError as exc:
        raise RoundError(str(exc)) from None
    plan.by_output = {by_key[key]: judges for key, judges in plan.by_output.items()}
    return plan


def judge_endpoints(judges):
    """{judge model: the endpoint that serves its calls} (lowest pk when several endpoints serve one model)."""
    out = {}
    for e in sorted(judges, key=lambda e: e.pk):
        out.setdefault(e.model_identity, e)
    return out


def build_batches(rnd, outputs, plan):
    """[(batch number, judge model, output list in shuffled order)]: one judge × generator model × item per batch."""
    by_id = {o.pk: o for o in outputs}
    keys = stable_keys(outputs)
    groups = defaultdict(list)
    for out_id, judge in plan.pairs():
        out = by_id[out_id]
        # item numbers, not ids: the seeded shuffle is the same in every installation
        groups[(judge, out.model_identity, out.item.number if out.item_id else 0, out.variant_key)].append(out)
    result = []
    for key in sorted(groups):
        group = sorted(groups[key], key=lambda o: (o.trial, keys[o.pk]))
        for chunk in planner.batches(group, rnd.batch_size, rnd.seed, key="|".join(map(str, key))):
            result.append((len(result) + 1, key[0], chunk))
    return result


def story_text(rnd, out):
    """(story id, text): the id is seeded from the round's seed and name and the output's stable key, never from
    database ids, so another installation renders the same judge prompts."""
    return prompts.story_id(rnd.seed, rnd.name, output_key(out)), out.text


def render_batch(rnd, template, chunk):
    stories = [story_text(rnd, o) for o in chunk]
    return prompts.render(
        template.text,
        template.kind,
        target_of(chunk[0].item),
        stories,
        (template.scale_min, template.scale_max),
        labels=template.labels,
    )


def params_for(rnd, endpoint):
    overrides = {} if rnd.temperature is None else {"temperature": rnd.temperature}
    return merged_params(endpoint, overrides)


def compute_plan(rnd):
    """Everything to show before launch: assignment, batches, calls, tokens, cost, a sample prompt, problems."""
    outputs, excluded = eligible_outputs(rnd)
    judges = list(rnd.judges.order_by("pk"))
    summary = {
        "policy": rnd.policy,
        "seed": rnd.seed,
        "batch_size": rnd.batch_size,
        "k": rnd.k,
        "forbid_same_family": rnd.forbid_same_family,
        "excluded": excluded,
        "outputs": len(outputs),
        "problems": [],
        "computed_at": timezone.now().isoformat(),
    }
    plan = assignment(rnd, outputs, judges)
    endpoints = judge_endpoints(judges)
    batches = build_batches(rnd, outputs, plan)
    template = rnd.template
    per_judge = defaultdict(lambda: {"calls": 0, "verdicts": 0, "input_tokens": 0, "output_tokens": 0})
    for _n, judge, chunk in batches:
        row = per_judge[judge]
        row["calls"] += 1
        row["verdicts"] += len(chunk)
        row["input_tokens"] += estimate_tokens(render_batch(rnd, template, chunk))
        row["output_tokens"] += TOKENS_PER_VERDICT * len(chunk)
    estimates = []
    judge_rows = []
    for judge in sorted(endpoints):
        endpoint = endpoints[judge]
        row = per_judge.get(judge, {"calls": 0, "verdicts": 0, "input_tokens": 0, "output_tokens": 0})
        estimate = batch_mode.cost_estimate(endpoint, row["input_tokens"], row["output_tokens"])
        estimates.append(estimate)
        cost, batch_cost = estimate["cost_usd"], estimate["batch_cost_usd"]
        try:
            validate_params(params_for(rnd, endpoint))
        except ProviderError as exc:
            summary["problems"].append(f"{endpoint.name}: {exc}")
        if endpoint.provider == Provider.MANUAL:
            summary["problems"].append(f"{endpoint.name} is a manual endpoint and cannot be called as a judge.")
        else:
            summary["problems"].extend(connections.start_problems([endpoint]))
            if waiting := connections.pending_reason(endpoint.connection):
                summary["problems"].append(f"{endpoint.name}: {waiting} The round will wait for it.")
        served = sorted(e.name for e in judges if e.model_identity == judge)
        judge_rows.append(
            dict(
                row,
                judge=judge,
                endpoint=endpoint.name,
                endpoints=served,
                family=(endpoint.model_family or planner.guess_family(judge)),
                cost_usd=str(cost) if cost is not None else None,
                batch_cost_usd=str(batch_cost) if batch_cost is not None else None,
            )
        )
    totals = batch_mode.cost_totals(estimates)
    generators = Counter(o.model_identity for o in outputs)
    matrix = Counter()
    by_id = {o.pk: o for o in outputs}
    for out_id, judge in plan.pairs():
        matrix[(judge, by_id[out_id].model_identity)] += 1
    summary.update(
        generators=[
            {"model": g, "outputs": n, "judges": plan.by_generator.get(g, [])} for g, n in sorted(generators.items())
        ],
        judges=judge_rows,
        batches=len(batches),
        verdicts=sum(len(c) for _, _, c in batches),
        matrix=[{"judge": j, "generator": g, "verdicts": n} for (j, g), n in sorted(matrix.items())],
        cost_usd=str(totals["cost_usd"]) if totals["priced"] else None,
        batch_cost_usd=str(totals["batch_cost_usd"]) if totals["batch_priced"] else None,
        input_tokens=sum(r["input_tokens"] for r in judge_rows),
        output_tokens=sum(r["output_tokens"] for r in judge_rows),
        sample_prompt=render_batch(rnd, template, batches[0][2]) if batches else "",
    )
    if not outputs:
        summary["problems"].append("No outputs to judge: the source has no finished outputs with a target stereotype.")
    summary["notes"] = []
    if template.kind == "seed_binary" and "five stories" in template.text and rnd.batch_size != 5:
        summary["notes"].append(
            f"The seed prompt speaks of “the five stories”; this round sends {rnd.batch_size} per "
            "call, so each prompt names the count of its own batch."
        )
    short = sum(1 for _n, _j, chunk in batches if len(chunk) < rnd.batch_size)
    if short:
        summary["notes"].append(
            f"{short} call(s) carry fewer than {rnd.batch_size} stories (fewer trials than the batch size)."
        )
    return summary


def _int(value, label, minimum=None, maximum=None, allow_none=False):
    if value in (None, "") and allow_none:
        return None
    try:
        if isinstance(value, bool):
            raise ValueError
        number = int(value)
        if isinstance(value, float) and not value.is_integer():
            raise ValueError
    except (TypeError, ValueError):
        raise RoundError(f"{label} must be a whole number.") from None
    if minimum is not None and number < minimum or maximum is not None and number > maximum:
        raise RoundError(f"{label} must be between {minimum} and {maximum}.")
    return number


def clean_filter(value):
    if value in (None, "", {}):
        return {}
    if not isinstance(value, dict):
        raise RoundError("The output filter must be an object with output_ids, item_numbers and/or models.")
    unknown = set(value) - {"output_ids", "item_numbers", "models"}
    if unknown:
        raise RoundError(f"Unknown output filter key(s): {', '.join(sorted(unknown))}.")
    clean = {}
    for key in ("output_ids", "item_numbers"):
        if value.get(key) not in (None, []):
            if not isinstance(value[key], list):
                raise RoundError(f"{key} must be a list of whole numbers.")
            clean[key] = [_int(v, key, minimum=1) for v in value[key]]
    if value.get("models") not in (None, []):
        if not isinstance(value["models"], list) or not all(isinstance(m, str) for m in value["models"]):
            raise RoundError("models must be a list of model names.")
        clean["models"] = value["models"]
    return clean


@transaction.atomic
def create_round(
    study,
    *,
    name,
    template,
    judges,
    source_run=None,
    policy="rotation",
    k=None,
    forbid_same_family=False,
    batch_size=5,
    temperature=None,
    seed=0,
    reask_missing=True,
    output_filter=None,
    actor=None,
    execution_mode="live",
):
    """A draft round with its plan. Validates everything a launch needs, so a bad round is never saved."""
    name = (name or "").strip()
    if not name:
        raise RoundError("Give the round a name.")
    if template is None or not templates_for(study).filter(pk=template.pk).exists():
        raise RoundError("Choose a judge template of this study or of the built-in library.")
    if source_run is not None and source_run.study_id != study.pk:
        raise RoundError(f"No run {source_run.pk} in this study.")
    output_filter = clean_filter(output_filter)
    if source_run is None and not output_filter.get("output_ids"):
        raise RoundError("Choose a source run, or list the outputs to judge.")
    judges = list(judges or [])
    if not judges:
        raise RoundError("Choose at least one judge endpoint.")
    foreign = [str(e.pk) for e in judges if e.study_id != study.pk]
    if foreign:
        raise RoundError(f"No endpoint {', '.join(foreign)} in this study.")
    manual = [e.name for e in judges if e.provider == Provider.MANUAL]
    if manual:
        raise RoundError(f"Manual endpoints cannot judge (nothing to call): {', '.join(manual)}.")
    if policy not in POLICY_CHOICES:
        raise RoundError(f"Unknown policy {policy!r}; choose rotation, panel or k_of_n.")
    k = _int(k, "k", minimum=1, maximum=100, allow_none=True)
    if policy == "k_of_n" and k is None:
        raise RoundError("k-of-n needs k, the number of judges per output.")
    try:
        execution_mode = batch_mode.check_mode(execution_mode or ExecutionMode.LIVE, judges)
    except ValueError as exc:
        raise RoundError(str(exc)) from exc
    batch_size = _int(batch_size, "Batch size", minimum=1, maximum=MAX_BATCH)
    seed = _int(seed, "Seed", minimum=-(2**31), maximum=2**31 - 1)
    if temperature not in (None, ""):
        try:
            temperature = float(temperature)
        except (TypeError, ValueError):
            raise RoundError("Temperature must be a number.") from None
        if not 0 <= temperature <= 2:
            raise RoundError("Temperature must be between 0 and 2.")
    else:
        temperature = None
    rnd = JudgeRound.objects.create(
        study=study,
        name=name,
        template=template,
        source_run=source_run,
        policy=policy,
        k=k,
        forbid_same_family=bool(forbid_same_family),
        batch_size=batch_size,
        temperature=temperature,
        seed=seed,
        reask_missing=bool(reask_missing),
        output_filter=output_filter,
        created_by=actor,
        execution_mode=execution_mode,
    )
    rnd.judges.set(judges)
    rnd.plan = compute_plan(rnd)  # raises RoundError (rolls back) when the policy cannot be satisfied
    rnd.save(update_fields=["plan"])
    record_activity(study, actor, "created judge round", rnd.name)
    return rnd


@transaction.atomic
@transaction.atomic
def delete_round(rnd, *, actor=None):
    """Delete a judge round that holds no verdicts. Refused (RoundError, saying what depends on it) while it is
    queued or running, and once it has verdicts: they are paid work (move the study to the trash instead)."""
    rnd = JudgeRound.objects.select_for_update().get(pk=rnd.pk)
    try:
        refuse_if_live(rnd)
        refuse_if_work(rnd, f"The judge round “{rnd}”")
    except TrashError as exc:
        raise RoundError(str(exc)) from None
    record_activity(rnd.study, actor, "deleted judge round", f"{rnd}")
    rnd.delete()


def materialize(rnd):
    """Create the pending verdict rows of the plan (idempotent: existing rows are kept)."""
    outputs, _ = eligible_outputs(rnd)
    judges = list(rnd.judges.order_by("pk"))
    plan = assignment(rnd, outputs, judges)
    endpoints = judge_endpoints(judges)
    rows = []
    for number, judge, chunk in build_batches(rnd, outputs, plan):
        for position, out in enumerate(chunk, 1):
            rows.append(
                Verdict(
                    round=rnd,
                    output=out,
                    judge_endpoint=endpoints[judge],
                    judge_model=judge,
                    status=VerdictStatus.PENDING,
                    batch_ref=f"{rnd.pk}-{number:05d}",
                    position=position,
                    question=target_of(out.item),
                )
            )
    Verdict.objects.bulk_create(rows, batch_size=1000, ignore_conflicts=True)
    return len(rows)


def _enqueue(rnd):

    execute_round.delay(rnd.pk)


def is_live(rnd):
    """A worker is on the round right now (its lease has not expired)."""
    return bool(rnd.lease_token) and rnd.lease_expires_at is not None and rnd.lease_expires_at > timezone.now()


def _launch(rnd, actor, verb):
    if rnd.status in (RunStatus.QUEUED, RunStatus.RUNNING) and is_live(rnd):
        raise RoundError("The round is already running.")
    if rnd.status == RunStatus.COMPLETED:
        raise RoundError("The round is finished; re-ask or retry single verdicts, or create a new round.")
    plan = compute_plan(rnd)
    if plan["problems"]:
        raise RoundError("Fix these first: " + " ".join(plan["problems"]))
    with transaction.atomic():
        materialize(rnd)
        JUDGE_TEMPLATES.lock(rnd.template)
        JudgeRound.objects.filter(pk=rnd.pk).update(plan=plan)
        jobs.queue(ROUND_JOB, rnd, actor)
        record_activity(rnd.study, actor, verb, rnd.name)


def start(rnd, actor=None):
    _launch(rnd, actor, "launched judge round")
    jobs.launch(ROUND_JOB, rnd)
    rnd.refresh_from_db()
    return rnd


def run_foreground(rnd, actor=None, progress_callback=None):
    """Launch a round in this process (the CLI, `recipe run`); returns RunStats, or None if a worker holds it."""
    _launch(rnd, actor, "ran judge round in the foreground")
    return execute(rnd.pk, progress_callback)


def queue_in_foreground(rnd, plan, actor=None):
    """Queue the round for this process to execute (the CLI), with no task sent."""
    with transaction.atomic():
        JudgeRound.objects.filter(pk=rnd.pk).update(plan=plan)
        jobs.queue(ROUND_JOB, rnd, actor)


def resume(rnd, actor=None):
    """Queue the round again; only pending verdicts are asked."""
    if rnd.status == RunStatus.DRAFT:
        raise RoundError("The round has not been launched yet.")
    with transaction.atomic():
        jobs.queue(ROUND_JOB, rnd, actor, "Resumed.")
        record_activity(rnd.study, actor, "resumed judge round", rnd.name)
    jobs.launch(ROUND_JOB, rnd)
    rnd.refresh_from_db()
    return rnd


def retry_failed(rnd, actor=None):
    """Verdicts whose call failed go back to pending (their attempts stay on record) and the round resumes."""

    def resume_round(n):
        record_activity(rnd.study, actor, f"retried {n} failed verdicts of", rnd.name)
        resume(rnd, actor)

    jobs.retry_failed(ROUND_JOB, rnd, actor, then=resume_round)
    return rnd


def reask(rnd, verdict_ids=None, actor=None):
    """Ask missing/unparseable (or the given) verdicts again, one story alone, then resume the round."""
    qs = rnd.verdicts.filter(status__in=[VerdictStatus.MISSING, VerdictStatus.UNPARSEABLE, VerdictStatus.FAILED])
    if verdict_ids is not None:
        qs = rnd.verdicts.filter(pk__in=list(verdict_ids)).exclude(status=VerdictStatus.PENDING)
    n = qs.update(status=VerdictStatus.PENDING, reasked=True, error="")
    if n == 0:
        raise RoundError("No verdicts to re-ask.")
    record_activity(rnd.study, actor, f"re-asked {n} verdicts of", rnd.name)
    return resume(rnd, actor)


def cancel(rnd, actor=None):
    jobs.cancel(ROUND_JOB, rnd)  # its open batches too
    record_activity(rnd.study, actor, "cancelled judge round", rnd.name)
    return rnd


class VerdictSink:
    """Parses each answer into the verdicts of its batch (only those still pending)."""

    def __init__(self, rnd):
        self.round = rnd
        self.template = rnd.template
        self.style = prompts.answer_style(self.template.kind)
        self.scale = (self.template.scale_min, self.template.scale_max)
        self.labels = list(self.template.labels or []) if self.template.kind == "categorical" else None

    def on_success(self, unit, result):
        ids = unit.payload["verdict_ids"]
        story_ids = unit.payload["story_ids"]
        parsed = parsing.parse_answer(result.text, story_ids, self.style, self.scale, self.labels)
        verdicts = {v.pk: v for v in Verdict.objects.filter(pk__in=ids, status=VerdictStatus.PENDING)}
        now = timezone.now()
        for vid, sid in zip(ids, story_ids, strict=True):
            v = verdicts.get(vid)
            if v is None:
                continue
            p = parsed[sid]
            v.status, v.value, v.rationale, v.error = (
                p.status,
                p.value,
                p.rationale,
                p.detail if p.status != "ok" else "",
            )
            v.label = self.labels[p.value] if self.labels and p.value is not None else ""
            v.raw_text = (
                f"{v.raw_text}\n\n--- asked again, alone ---\n{result.text}"
                if v.reasked and v.raw_text
                else result.text
            )
            v.updated_at = now
        Verdict.objects.bulk_update(
            list(verdicts.values()), ["status", "value", "label", "rationale", "error", "raw_text", "updated_at"]
        )

    def on_failure(self, unit, error):
        Verdict.objects.filter(pk__in=unit.payload["verdict_ids"], status=VerdictStatus.PENDING).update(
            status=VerdictStatus.FAILED, error=error[:2000], updated_at=timezone.now()
        )


def _unit_key(verdict):
    return f"v:{verdict.pk}" if verdict.reasked else f"b:{verdict.batch_ref}"


def _pending_groups(rnd, keys=None):
    """{unit key: [pending verdicts]}: one key per batch, one per re-asked verdict (a story alone)."""
    pending = rnd.verdicts.filter(status=VerdictStatus.PENDING)
    if keys is not None:
        refs = [k[2:] for k in keys if k.startswith("b:")]
        ids = [int(k[2:]) for k in keys if k.startswith("v:")]
        pending = pending.filter(Q(batch_ref__in=refs, reasked=False) | Q(pk__in=ids, reasked=True))
    groups = defaultdict(list)
    related = ("output", "output__item", "output__endpoint", "output__run", "judge_endpoint")  # story ids read them
    for v in pending.select_related(*related).order_by("batch_ref", "position", "pk"):
        groups[_unit_key(v)].append(v)
    return groups


def pending_units(rnd, keys=None):
    """One CallUnit per batch with pending verdicts; one per re-asked verdict (a story alone)."""
    template = rnd.template
    units = []
    for key, verdicts in _pending_groups(rnd, keys).items():
        endpoint = verdicts[0].judge_endpoint
        if endpoint is None:
            Verdict.objects.filter(pk__in=[v.pk for v in verdicts]).update(
                status=VerdictStatus.FAILED, error="The judge endpoint was deleted."
            )
            continue
        chunk = [v.output for v in verdicts]
        prompt = render_batch(rnd, template, chunk)
        units.append(
            CallUnit(
                unit_ref=f"verdict:{verdicts[0].pk}" if key.startswith("v:") else f"verdict-batch:{key[2:]}",
                endpoint=endpoint,
                messages=[{"role": "user", "content": prompt}],
                params=dict(params_for(rnd, endpoint)),
                purpose="judging",
                payload={"verdict_ids": [v.pk for v in verdicts], "story_ids": [story_text(rnd, o)[0] for o in chunk]},
            )
        )
    return units


class JudgeRoundJob(batch_mode.BatchModeKind, jobs.JobKind):
    """A judge round for the job engine: a unit is one batch of pending verdicts (or one re-asked verdict).
    The second pass re-asks missing and unparseable stories alone, when the round says so."""

    name = "judging.round"
    model = JudgeRound
    task_name = "judging.execute_round"
    label = "round"
    units_label = "verdicts"
    error = RoundError
    chunk_size = 20
    endpoints_field = "judges"

    def warm_up(self):

        preload()

    def enqueue(self, job):
        _enqueue(job)

    def get(self, job_id):
        return JudgeRound.objects.select_related("study", "template").get(pk=job_id)

    def pending_keys(self, rnd):
        held = self.held(rnd)
        return [key for key in _pending_groups(rnd) if key not in held]

    def load_units(self, rnd, keys, include_held=False):
        held = set() if include_held else self.held(rnd)
        return [u for u in pending_units(rnd, keys) if self.batch_key(u) not in held]

    @staticmethod
    def batch_key(unit):
        """The unit's key from its ref: verdict:<id> is a re-asked verdict, verdict-batch:<ref> a batch."""
        prefix, _, rest = unit.unit_ref.partition(":")
        return f"v:{rest}" if prefix == "verdict" else f"b:{rest}"

    def batch_sink(self, rnd):
        return VerdictSink(rnd)

    def run_live(self, rnd, source, cancel_check, progress):
        return execute_units(rnd.study, source, VerdictSink(rnd), cancel_check=cancel_check, progress=progress)

    def next_pass(self, rnd):
        if not rnd.reask_missing:
            return False
        return (
            rnd.verdicts.filter(status__in=[VerdictStatus.MISSING, VerdictStatus.UNPARSEABLE], reasked=False).update(
                status=VerdictStatus.PENDING, reasked=True
            )
            > 0
        )

    def reset_failed(self, rnd):
        return rnd.verdicts.filter(status=VerdictStatus.FAILED).update(status=VerdictStatus.PENDING, error="")

    def outcome(self, rnd):
        c = status_counts(rnd)
        if c["pending"] == 0:
            notes = [f"{c[s]} {s}" for s in ("failed", "missing", "unparseable") if c[s]]
            if c["total"] and not c["ok"]:
                # no usable verdict at all: not a completed round, whatever the bar says
                return RunStatus.FAILED, (
                    "No usable verdict: every one of the "
                    + str(c["total"])
                    + " verdicts is "
                    + " or ".join(s for s in ("failed", "missing", "unparseable") if c[s])
                    + f" ({', '.join(notes)}). Check the template's answer format and the judges' raw answers; "
                    "retry or re-ask them."
                )
            message = ("Finished with " + ", ".join(notes) + "; retry or re-ask them.") if notes else ""
            return RunStatus.COMPLETED, message
        return (
            self.batches_waiting(rnd, c["pending"])
            or self.batches_returned(rnd, c["pending"])
            or (rnd.status, "Stopped with verdicts left; resume to ask them.")
        )


ROUND_JOB = jobs.register(JudgeRoundJob())


def execute(round_id, progress_callback=None):
    """Ask the round's pending batches in this process (with any other workers on it), then re-ask missing stories
    alone when the round says so. Returns RunStats of this worker's last pass (empty for a finished round), or None
    when every chunk is held by another worker."""
    stats = jobs.execute(ROUND_JOB, round_id, progress_callback)
    if stats is None and JudgeRound.objects.filter(pk=round_id, status=RunStatus.COMPLETED).exists():
        return RunStats()
    return stats


def finish(round_id, cancelled=False):
    jobs.finish(ROUND_JOB, round_id, cancelled)


def status_counts(rnd):
    counts = dict(rnd.verdicts.values_list("status").annotate(n=Count("id")).order_by())
    out = {s: counts.get(s, 0) for s in VerdictStatus.values}
    out["total"] = sum(out.values())
    out["done"] = out["total"] - out["pending"]
    out["percent"] = round(100 * out["done"] / out["total"]) if out["total"] else 0
    live = rnd.status == RunStatus.RUNNING and is_live(rnd)
    out["stalled"] = rnd.status in (RunStatus.RUNNING, RunStatus.QUEUED) and not live and out["pending"] > 0
    out["in_flight"] = (rnd.progress or {}).get("in_flight", 0) if live else 0
    out["phase"] = (rnd.progress or {}).get("phase") if live else None
    return out


def runs_for(study):
    return generation.study_runs(study)


def judge_choices(study):
    return generation.study_endpoints(study, callable_only=True)
