"""LLM-assisted code discovery as a job on the one engine: sample stories, ask models for codes, decide the
suggestions.

A discovery's units are its requests: one per endpoint and group of sampled stories. They run live through the
shared runner or, in batch mode, through the providers' batch APIs (generation.runs.batches, the same machinery as
generation runs, judge rounds and questionnaire runs); either way each answer is parsed into suggestions the
researcher accepts, edits or rejects.
"""

import random

from django.db import transaction
from django.utils import timezone

from generation import selectors as generation
from generation.models import ExecutionMode, ModelEndpoint, Provider
from generation.runs import batches
from generation.runs.limits import estimate_call
from generation.runs.providers.base import merged_params
from generation.runs.runner import CallUnit, execute_units
from stereoscope import jobs
from stereoscope.services import record_activity

from .. import discovery as disc
from ..models import CodeDiscovery, CodeKind, CodeSuggestion, DiscoveryRequest, DiscoveryStatus, SuggestionStatus
from ..tasks import run_code_discovery
from .codebooks import CODEBOOKS, create_code
from .errors import AnnotationError, _to_int

MAX_GROUPS = 20


def _endpoints_of(study, endpoint, endpoints):
    chosen = list(endpoints or []) + ([endpoint] if endpoint is not None else [])
    if not chosen:
        raise AnnotationError("Choose a model endpoint of this study.")
    unique = []
    for e in chosen:
        if not isinstance(e, ModelEndpoint) or e.study_id != study.pk:
            raise AnnotationError("Choose a model endpoint of this study.")
        if e.provider == Provider.MANUAL:
            raise AnnotationError(
                f"“{e.name}” is a manual endpoint and cannot be called; choose an API or local model."
            )
        if e not in unique:
            unique.append(e)
    return unique


def sample_groups(ids, size, groups, seed):
    """`groups` groups of up to `size` story ids, no id in two groups, each sorted. One group is what the
    synchronous discovery sampled: sorted(Random(seed).sample(ids, size))."""
    picked = random.Random(seed).sample(ids, min(size * groups, len(ids)))
    return [sorted(picked[i : i + size]) for i in range(0, len(picked), size)]


def _plan(
    study,
    codebook,
    *,
    item,
    endpoint=None,
    endpoints=None,
    sample_size=5,
    seed=0,
    story_groups=1,
    execution_mode=ExecutionMode.LIVE,
    run=None,
):
    """Check a discovery's settings and sample its stories: (endpoints, sample size, groups, seed, mode,
    [(group number, story ids, messages)]). The settings of start_discovery and estimate_discovery: one item, one
    or more endpoints (`endpoint` and/or `endpoints`), `sample_size` stories per group (1-50), `story_groups`
    groups (1-MAX_GROUPS) drawn with `seed`, live or batch `execution_mode`, optionally only stories of `run`."""
    if codebook.study_id != study.pk:
        raise AnnotationError(f"No codebook {codebook.pk} in this study.")
    chosen = _endpoints_of(study, endpoint, endpoints)
    if item is None or (item.toolkit.study_id != study.pk):
        raise AnnotationError("Choose a prompt item of this study's toolkits.")
    n = _to_int(sample_size, "The sample size") or 0
    if not 1 <= n <= 50:
        raise AnnotationError("The sample size must be between 1 and 50 stories.")
    groups = _to_int(story_groups, "The number of story groups") or 1
    if not 1 <= groups <= MAX_GROUPS:
        raise AnnotationError(f"The number of story groups must be between 1 and {MAX_GROUPS}.")
    seed = _to_int(seed, "Seed") or 0
    try:
        mode = batches.check_mode(execution_mode or ExecutionMode.LIVE, chosen)
    except ValueError as exc:
        raise AnnotationError(str(exc)) from None
    pool = generation.finished_outputs(study, item=item, run_ids=[run.pk] if run is not None else None)
    ids = sorted(pool.values_list("pk", flat=True))
    if not ids:
        raise AnnotationError(f"Item {item.number} has no finished stories yet.")
    samples = sample_groups(ids, n, groups, seed)
    texts = generation.output_texts([i for g in samples for i in g])
    planned = [
        (g, sample, disc.build_messages(item.text, item.target_stereotype, [texts[pk] for pk in sample]))
        for g, sample in enumerate(samples, 1)
    ]
    return chosen, n, groups, seed, mode, planned


def estimate_discovery(study, codebook, *, item, **settings):
    """What a discovery with these settings would send and cost, without creating anything: {"requests", "stories",
    "groups", "mode", "endpoints": [{"endpoint", "requests", "input_tokens", "output_tokens", "cost_usd",
    "batch_cost_usd", "batch_allowed"}], "cost_usd", "batch_cost_usd"}; a cost is None (or a total, when one part
    is) where the endpoint has no prices. Tokens are estimated as the runner estimates an attempt's. The settings:
    see _plan."""
    chosen, _, groups, _, mode, planned = _plan(study, codebook, item=item, **settings)
    rows, estimates = [], []
    for e in chosen:
        calls = [estimate_call(messages, merged_params(e)) for _, _, messages in planned]
        tokens_in, tokens_out = sum(c[0] for c in calls), sum(c[1] for c in calls)
        estimate = batches.cost_estimate(e, tokens_in, tokens_out)
        estimates.append(estimate)
        rows.append(
            {
                "endpoint": e.name,
                "endpoint_id": e.pk,
                "requests": len(planned),
                "input_tokens": tokens_in,
                "output_tokens": tokens_out,
                "cost_usd": _money(estimate["cost_usd"]),
                "batch_cost_usd": _money(estimate["batch_cost_usd"]),
                "batch_allowed": estimate["batch_allowed"],
            }
        )
    totals = batches.cost_totals(estimates)
    return {
        "requests": len(planned) * len(chosen),
        "stories": sum(len(sample) for _, sample, _ in planned),
        "groups": groups,
        "mode": mode,
        "endpoints": rows,
        "cost_usd": _money(totals["cost_usd"]) if totals["priced"] else None,
        "batch_cost_usd": _money(totals["batch_cost_usd"]) if totals["batch_priced"] else None,
    }


def _money(value):
    return None if value is None else str(value)


def start_discovery(study, codebook, *, item, actor=None, **settings):
    """Sample stories of one prompt item into groups, write one request per endpoint and group, and start the
    job (its tasks go out once the transaction commits). Returns the CodeDiscovery. The settings: see _plan."""
    with transaction.atomic():
        CODEBOOKS.ensure_editable(codebook)
        chosen, n, groups, seed, mode, planned = _plan(study, codebook, item=item, **settings)
        discovery = CodeDiscovery.objects.create(
            study=study,
            codebook=codebook,
            item=item,
            sample_size=n,
            story_groups=groups,
            seed=seed,
            execution_mode=mode,
            created_by=actor if getattr(actor, "pk", None) else None,
        )
        discovery.endpoints.set(chosen)
        number = 0
        rows = []
        for g, sample, messages in planned:
            for e in chosen:
                number += 1
                rows.append(
                    DiscoveryRequest(
                        discovery=discovery, number=number, endpoint=e, group=g, output_ids=sample, messages=messages
                    )
                )
        DiscoveryRequest.objects.bulk_create(rows)
        names = ", ".join(e.name for e in chosen)
        record_activity(study, actor, "asked for code suggestions", f"item {item.number} via {names} ({mode})")
        jobs.queue(DISCOVERY_JOB, discovery, actor)
        transaction.on_commit(lambda: jobs.launch(DISCOVERY_JOB, discovery))
    discovery.refresh_from_db()
    return discovery


def resume_discovery(discovery, actor=None):
    """Queue the discovery again: only its pending requests are asked (never one an open batch holds). Pressing
    Resume says the old workers are gone (the engine re-plans their chunks at once)."""
    if discovery.execution_mode == ExecutionMode.BATCH:
        try:
            batches.check_mode(ExecutionMode.BATCH, list(discovery.endpoints.all()))
        except ValueError as exc:
            raise AnnotationError(f"{exc} Or start a new discovery in live mode.") from None
    record_activity(discovery.study, actor, "resumed code discovery", f"#{discovery.pk}")
    return jobs.resume(DISCOVERY_JOB, discovery, actor)


def retry_discovery(discovery, actor=None):
    """Failed requests back to pending (their calls stay on record), then resume."""
    n = jobs.retry_failed(DISCOVERY_JOB, discovery, actor)
    record_activity(discovery.study, actor, f"retried {n} failed requests of code discovery", f"#{discovery.pk}")
    discovery.refresh_from_db()
    return discovery


def cancel_discovery(discovery, actor=None):
    """Stop the discovery; its open batches are cancelled at the provider (what they finished is still stored)."""
    jobs.cancel(DISCOVERY_JOB, discovery)  # its open batches too
    record_activity(discovery.study, actor, "cancelled code discovery", f"#{discovery.pk}")
    discovery.refresh_from_db()
    return discovery


def run_discovery(discovery_id, progress_callback=None):
    """Work on a discovery in this process (the task). Returns RunStats, or None when nothing was left for it."""
    return jobs.execute(DISCOVERY_JOB, discovery_id, progress_callback)


def _clean(text):
    return (text or "").replace("\x00", "")


class SuggestionSink:
    """Parses each answered request into suggestions (pending requests only); a failed call or an answer without
    a list of codes fails the request with the reason, shown on the discovery."""

    def __init__(self, study):
        self.study = study

    def _call(self, unit):
        call = generation.last_unit_call(self.study, "discovery", unit.unit_ref[:200])
        return call.pk if call is not None else None

    def on_success(self, unit, result):
        text = _clean(result.text)
        with transaction.atomic():
            request = (
                DiscoveryRequest.objects.select_for_update()
                .filter(pk=unit.payload, status=DiscoveryStatus.PENDING)
                .first()
            )
            if request is None:
                return
            request.response_text, request.provider_call_id = text, self._call(unit)
            request.finished_at = timezone.now()
            try:
                suggestions = disc.parse_suggestions(text)
            except disc.DiscoveryParseError as exc:
                request.status, request.error = DiscoveryStatus.FAILED, str(exc)
                request.save()
                return
            request.suggestions.all().delete()
            CodeSuggestion.objects.bulk_create(
                [
                    CodeSuggestion(
                        discovery_id=request.discovery_id,
                        request=request,
                        order=i,
                        name=_clean(s["name"]),
                        description=_clean(s["description"]),
                        gender_tag=s["gender_tag"],
                        example=_clean(s["example"]),
                    )
                    for i, s in enumerate(suggestions)
                ]
            )
            request.status, request.error = DiscoveryStatus.DONE, ""
            if not disc.MIN_CODES <= len(suggestions) <= disc.MAX_CODES:
                request.error = (
                    f"Note: the model proposed {len(suggestions)} codes (asked for {disc.MIN_CODES}–{disc.MAX_CODES})."
                )
            request.save()

    def on_failure(self, unit, error):
        DiscoveryRequest.objects.filter(pk=unit.payload, status=DiscoveryStatus.PENDING).update(
            status=DiscoveryStatus.FAILED,
            error=_clean(error),
            provider_call_id=self._call(unit),
            finished_at=timezone.now(),
        )


def _pending(discovery):
    return discovery.requests.filter(status=DiscoveryStatus.PENDING)


class CodeDiscoveryJob(batches.BatchModeKind, jobs.JobKind):
    """A code discovery for the job engine: a unit is one pending request of an endpoint that still exists."""

    name = "annotation.discovery"
    model = CodeDiscovery
    task_name = "annotation.run_code_discovery"
    label = "discovery"
    units_label = "requests"
    error = AnnotationError

    def enqueue(self, job):

        run_code_discovery.delay(job.pk)

    def get(self, job_id):
        return CodeDiscovery.objects.select_related("study", "item").get(pk=job_id)

    def pending_keys(self, discovery):
        _pending(discovery).filter(endpoint__isnull=True).update(
            status=DiscoveryStatus.FAILED, error="The endpoint was deleted.", finished_at=timezone.now()
        )
        held = self.held(discovery)
        return [pk for pk in _pending(discovery).order_by("number").values_list("pk", flat=True) if pk not in held]

    def load_units(self, discovery, keys, include_held=False):
        held = set() if include_held else self.held(discovery)
        rows = _pending(discovery).filter(pk__in=keys, endpoint__isnull=False).select_related("endpoint")
        return [
            CallUnit(
                unit_ref=r.unit_ref,
                endpoint=r.endpoint,
                messages=r.messages,
                params=merged_params(r.endpoint),
                purpose="discovery",
                payload=r.pk,
            )
            for r in rows.order_by("number")
            if r.pk not in held
        ]

    @staticmethod
    def batch_key(unit):
        return unit.payload

    def batch_sink(self, discovery):
        return SuggestionSink(discovery.study)

    def run_live(self, discovery, source, cancel_check, progress):
        return execute_units(
            discovery.study, source, SuggestionSink(discovery.study), cancel_check=cancel_check, progress=progress
        )

    def reset_failed(self, discovery):
        return discovery.requests.filter(status=DiscoveryStatus.FAILED).update(
            status=DiscoveryStatus.PENDING, error="", finished_at=None
        )

    def outcome(self, discovery):
        left = _pending(discovery).count()
        if left == 0:
            requests = list(discovery.requests.order_by("number").values_list("status", "error"))
            failed = [error for status, error in requests if status == DiscoveryStatus.FAILED]
            notes = [error for status, error in requests if status == DiscoveryStatus.DONE and error]
            if failed and len(failed) == len(requests):
                reason = failed[0] if len(failed) == 1 else f"All {len(failed)} requests failed; the first: {failed[0]}"
                return jobs.JobStatus.FAILED, reason
            if failed:
                return jobs.JobStatus.COMPLETED, (
                    f"{len(failed)} of {len(requests)} requests failed; see their reasons and retry them."
                )
            return jobs.JobStatus.COMPLETED, " ".join(dict.fromkeys(notes))
        return (
            self.batches_waiting(discovery, left)
            or self.batches_returned(discovery, left)
            or (discovery.status, "Stopped with requests left; resume to ask them.")
        )

    def progress_extra(self, job_id):
        requests = DiscoveryRequest.objects.filter(discovery_id=job_id)
        return {
            "total": requests.count(),
            "done": requests.exclude(status=DiscoveryStatus.PENDING).count(),
        }


DISCOVERY_JOB = jobs.register(CodeDiscoveryJob())


@transaction.atomic
def decide_suggestion(suggestion, *, accept, actor=None, name=None, description=None, gender_tag=None, parent=None):
    """Accept (optionally edited) into the codebook as an inductive code, or reject. Deciding twice is refused."""

    suggestion = (
        CodeSuggestion.objects.select_for_update(of=("self",))
        .select_related("discovery__codebook", "discovery__item")
        .get(pk=suggestion.pk)
    )
    if suggestion.status != SuggestionStatus.PENDING:
        raise AnnotationError(f"“{suggestion.name}” was already {suggestion.status}.")
    if accept:
        discovery = suggestion.discovery
        code = create_code(
            discovery.codebook,
            actor=actor,
            name=name if name is not None else suggestion.name,
            description=description if description is not None else suggestion.description,
            gender_tag=gender_tag if gender_tag is not None else suggestion.gender_tag,
            kind=CodeKind.INDUCTIVE,
            parent=parent,
            item=discovery.item,
            stereotype=discovery.item.target_stereotype if discovery.item_id else "",
            color="#f08c00",
        )
        suggestion.code = code
        suggestion.status = SuggestionStatus.ACCEPTED
    else:
        suggestion.status = SuggestionStatus.REJECTED
    suggestion.decided_by = actor if getattr(actor, "pk", None) else None
    suggestion.decided_at = timezone.now()
    suggestion.save()
    return suggestion
