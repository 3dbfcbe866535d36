"""Batch mode: a second way to execute the units of a job, through the providers' batch APIs at batch prices.

Submission (`submit_units`, called by a job kind's `run` in batch mode) groups the units by endpoint, cuts them at
the providers' limits (settings.BATCH_MAX_REQUESTS / BATCH_MAX_BYTES) and submits each part; a ProviderBatch row
with the part's units is committed BEFORE the upload, so units held by an open batch are never submitted again and
a crash mid-submission is found again (by metadata at OpenAI, by creation time and size at Anthropic).

Polling (`poll_open_batches`, the periodic task) retrieves each open batch; once it ends its results are matched to
units by custom_id, every request is recorded as a ProviderCall (with batch id and custom id) and each answer goes
to the job kind's usual sink. Errors and expired requests leave their units pending for the next batch or live.
When a job has no open batch left, the engine's `finish` sets its status.

A job kind supports batch mode with `batch_sink(job)` and `load_units(job, keys, include_held=True)`; a unit's
key is `kind.batch_key(unit)` when the kind has one, else its payload. When a job's last open batch ends, the
kind's `after_batches(job)` runs if it has one, then its `next_pass` may make more units pending (e.g. re-ask
missing verdicts): they go out in new batches.
"""

import logging
from datetime import timedelta
from decimal import Decimal

from django.conf import settings
from django.db import transaction
from django.db.models import Count
from django.utils import timezone

from stereoscope import jobs, worker_heartbeat

from ..models import BATCH_PROVIDERS, OPEN_BATCH, BatchStatus, CallOutcome, ExecutionMode, ProviderBatch, ProviderCall
from . import batch_format, connections, spending
from .limits import estimate_call
from .providers.base import ProviderError
from .providers.batch_api import batch_api
from .runner import RunStats, charged_tokens, cost_of, output_id_from_ref, redact_key

log = logging.getLogger(__name__)
DEFAULT_MAX_REQUESTS = {"openai": 50_000, "openai_compatible": 50_000, "anthropic": 100_000}
DEFAULT_MAX_BYTES = {
    "openai": 200 * 1024 * 1024,
    "openai_compatible": 200 * 1024 * 1024,
    "anthropic": 256 * 1024 * 1024,
}


def check_mode(mode, endpoints):
    """The execution mode (live or batch) if every endpoint allows it; ValueError with the reason otherwise."""
    if mode not in ExecutionMode.values:
        raise ValueError(f"Unknown execution mode {mode!r}: choose live or batch.")
    if mode == ExecutionMode.BATCH:
        refused = [e.name for e in endpoints if not batch_allowed(e)]
        if refused:
            raise ValueError(
                f"Batch mode is not allowed on: {', '.join(refused)}. Allow it in the endpoint's "
                "settings (OpenAI, Anthropic or OpenAI-compatible servers with a batch API)."
            )
    return mode


def limits(provider):
    """(max requests, max bytes) of one batch for a provider; settings may lower them (tests use small ones)."""
    requests = getattr(settings, "BATCH_MAX_REQUESTS", None) or DEFAULT_MAX_REQUESTS.get(provider, 50_000)
    size = getattr(settings, "BATCH_MAX_BYTES", None) or DEFAULT_MAX_BYTES.get(provider, 200 * 1024 * 1024)
    return min(int(requests), DEFAULT_MAX_REQUESTS.get(provider, requests)), min(
        int(size), DEFAULT_MAX_BYTES.get(provider, size)
    )


def batch_prices(endpoint):
    return batch_format.batch_prices(
        endpoint.input_price_per_mtok,
        endpoint.output_price_per_mtok,
        endpoint.batch_input_price_per_mtok,
        endpoint.batch_output_price_per_mtok,
    )


def batch_cost_of(endpoint, input_tokens, output_tokens):
    """USD at the endpoint's batch prices (None when it has no prices)."""
    return batch_format.price(input_tokens, output_tokens, *batch_prices(endpoint))


def batch_allowed(endpoint):
    return endpoint.batch_enabled and endpoint.provider in BATCH_PROVIDERS


def cost_estimate(endpoint, input_tokens, output_tokens):
    """A dry run's cost of these tokens on one endpoint, live and in batch mode: {"cost_usd", "batch_allowed",
    "batch_cost_usd"} (a cost is None when the endpoint has no prices, or does not allow batch mode)."""
    allowed = batch_allowed(endpoint)
    return {
        "cost_usd": cost_of(endpoint, input_tokens, output_tokens),
        "batch_allowed": allowed,
        "batch_cost_usd": batch_cost_of(endpoint, input_tokens, output_tokens) if allowed else None,
    }


def cost_totals(estimates):
    """The sums of several `cost_estimate`s: {"cost_usd", "priced", "batch_cost_usd", "batch_priced"}; a total is
    priced only when every part is."""
    live = [e["cost_usd"] for e in estimates]
    batch = [e["batch_cost_usd"] for e in estimates]
    return {
        "cost_usd": sum((c for c in live if c is not None), Decimal("0")),
        "priced": None not in live,
        "batch_cost_usd": sum((c for c in batch if c is not None), Decimal("0")),
        "batch_priced": None not in batch,
    }


def job_batches(kind_name, job_id):
    return ProviderBatch.objects.filter(job_kind=kind_name, job_id=job_id)


def held_keys(kind_name, job_id):
    """Keys of the job's units in open batches (not to be submitted or called again)."""
    held = set()
    for units in job_batches(kind_name, job_id).filter(status__in=OPEN_BATCH).values_list("units", flat=True):
        held.update(key for _, key in units)
    return held


def open_count(kind_name, job_id):
    return job_batches(kind_name, job_id).filter(status__in=OPEN_BATCH).count()


def unit_key(kind, unit):
    """The engine's key of a unit (what pending_keys lists)."""
    key_of = getattr(kind, "batch_key", None)
    return key_of(unit) if key_of else unit.payload


def _estimate(unit):
    return estimate_call(unit.messages, unit.params)


# -- submission -----------------------------------------------------------------------------------------------------


def submit_units(kind, job, units, sink, on_submitted=None, stats=None):
    """Submit units as batches (one endpoint per batch, split at the limits). Every part's row is written first, so
    all the units are held before the first upload. Units of a part the provider refuses fail through the sink with
    the reason. Each part reserves its estimated cost in the spending ledger; a part that would cross a cap is not
    submitted (its units stay pending) and `stats.held` says why. Returns the ProviderBatch rows submitted."""
    by_endpoint = {}
    for unit in units:
        by_endpoint.setdefault(unit.endpoint.pk, []).append(unit)
    planned = []  # (row, api, lines, units)
    refused = []
    with transaction.atomic():
        number = job_batches(kind.name, job.pk).count()
        for group in by_endpoint.values():
            endpoint = group[0].endpoint
            api = batch_api(endpoint)
            max_requests, max_bytes = limits(endpoint.provider)
            lines, kept = [], []
            for unit in group:
                line = api.line(batch_format.custom_id(unit.unit_ref), unit.messages, unit.params)
                size = batch_format.line_size(line)
                if size > max_bytes:  # larger than a whole batch may be: it can only run live
                    sink.on_failure(
                        unit,
                        f"The request is {size} bytes, more than a batch may hold ({max_bytes}); run it in live mode.",
                    )
                    refused.append(unit)
                    continue
                lines.append(line)
                kept.append(unit)
            group = kept
            sizes = [batch_format.line_size(line) for line in lines]
            parts = batch_format.split(sizes, max_requests, max_bytes)
            for start, stop in parts:
                number += 1
                part = group[start:stop]
                estimate = [_estimate(u) for u in part]
                estimated_cost = batch_cost_of(endpoint, sum(e[0] for e in estimate), sum(e[1] for e in estimate))
                if endpoint.connection_id and (stats is None or not stats.held):
                    charge = spending.Charge(
                        endpoint.connection_id, spending.month_of(None), estimated_cost, label=endpoint.name
                    )
                    accepted, reason, need = spending.admit(job.study_id, [charge], reserve=True)
                    if not accepted[0] and stats is not None:
                        stats.held, stats.held_need = reason, need
                if stats is not None and stats.held:
                    continue  # over a cap: these units stay pending and the job waits
                row = ProviderBatch.objects.create(
                    study_id=job.study_id,
                    job_kind=kind.name,
                    job_id=job.pk,
                    endpoint=endpoint,
                    provider=endpoint.provider,
                    number=number,
                    request_count=len(part),
                    size_bytes=sum(sizes[start:stop]),
                    units=[
                        [line["custom_id"], unit_key(kind, u)] for line, u in zip(lines[start:stop], part, strict=True)
                    ],
                    estimated_cost_usd=estimated_cost,
                )
                planned.append((row, api, lines[start:stop], part))
    if refused and on_submitted:
        on_submitted(refused)
    submitted = []
    for row, api, lines, part in planned:
        endpoint = row.endpoint
        try:
            batch_id, file_id = api.submit(lines, {"stereoscope_batch": str(row.pk)})
        except Exception as exc:
            message = redact_key(endpoint, str(_sdk_error(exc)))
            with transaction.atomic():
                if ProviderBatch.objects.filter(pk=row.pk, status__in=OPEN_BATCH).update(
                    status=BatchStatus.FAILED, error=message, ended_at=timezone.now()
                ):
                    _release(row)
                for unit in part:
                    sink.on_failure(unit, f"The batch was not accepted: {message}")
        else:
            got = ProviderBatch.objects.filter(pk=row.pk, status=BatchStatus.SUBMITTING).update(
                provider_batch_id=batch_id,
                input_file_id=file_id,
                status=BatchStatus.SUBMITTED,
                submitted_at=timezone.now(),
            )
            if got:
                submitted.append(row)
            else:  # recovery gave this row up meanwhile (its units may be in another batch): withdraw it
                log.warning(
                    "batch %s of %s %s arrived after it was given up; cancelling it", batch_id, kind.name, job.pk
                )
                try:
                    api.cancel(batch_id)
                except Exception:
                    log.exception("could not cancel batch %s", batch_id)
        if on_submitted:
            on_submitted(part)
    return submitted


def _sdk_error(exc):
    from .providers.openai_provider import sdk_error  # lazy: its module imports the SDK (0.5-1.5 s)

    if isinstance(exc, ProviderError):
        return exc
    import anthropic  # lazy: an SDK takes 0.5-1.5 s to import; workers warm it up
    import openai  # lazy: an SDK takes 0.5-1.5 s to import; workers warm it up

    module = anthropic if type(exc).__module__.startswith("anthropic") else openai
    return sdk_error(exc, module)


def run_in_batches(kind, job, source, cancel_check, progress):
    """A job kind's `run` in batch mode: take every chunk this worker can lease and submit its units as batches.
    Units count as finished for the engine once submitted; the job then waits for the poller."""
    stats = RunStats()
    sink = kind.batch_sink(job)
    units = []
    while True:
        got = source.take()
        if not got:
            break
        units.extend(got)
        stats.total += len(got)
        progress(stats, 0)
    if cancel_check():
        stats.cancelled = True
        return stats

    def submitted(part):
        for unit in part:
            source.finished(unit)
        progress(stats, 0)

    submit_units(kind, job, units, sink, on_submitted=submitted, stats=stats)
    return stats


class BatchModeKind:
    """What every job kind with an `execution_mode` column shares; mix it in before jobs.JobKind. Units held by open
    batches are left out of `pending_keys`/`load_units` (through `held`), `run` submits batches in batch mode and
    calls the kind's `run_live` otherwise, and `batches_waiting`/`batches_returned` word the outcome."""

    returned_hint = ""  # e.g. ", or switch the run to live"
    endpoints_field = "endpoints"  # the job's many-to-many of the endpoints it calls

    def hold(self, job):
        """Wait while an endpoint's connection is not approved (or no longer allows it) or a cap is reached."""
        endpoints = list(getattr(job, self.endpoints_field).all())
        need = (job.progress or {}).get("waiting_need") if job.status == jobs.JobStatus.WAITING else None
        return connections.hold_reason(endpoints) or spending.budget_hold(job.study, endpoints, need)

    def held(self, job):
        """Keys of the job's units in open batches (empty in live mode: nothing holds them)."""
        return held_keys(self.name, job.pk) if job.execution_mode == ExecutionMode.BATCH else set()

    def run(self, job, source, cancel_check, progress):
        if job.execution_mode == ExecutionMode.BATCH:
            return run_in_batches(self, job, source, cancel_check, progress)
        return self.run_live(job, source, cancel_check, progress)

    def run_live(self, job, source, cancel_check, progress):
        raise NotImplementedError

    def waits_elsewhere(self, job):
        """A batch-mode job with open batches waits for the poller (which finishes it), not for a worker."""
        return job.execution_mode == ExecutionMode.BATCH and open_count(self.name, job.pk) > 0

    def batches_waiting(self, job, left):
        """(RUNNING, message) while a batch-mode job with `left` units pending has open batches, else None."""
        if job.execution_mode != ExecutionMode.BATCH:
            return None
        waiting = open_count(self.name, job.pk)
        if not waiting:
            return None
        return jobs.JobStatus.RUNNING, f"Waiting for {waiting} batches at the provider ({left} {self.units_label})."

    def batches_returned(self, job, left):
        """(status, message) of a batch-mode job whose `left` pending units came back unanswered, else None."""
        if job.execution_mode != ExecutionMode.BATCH:
            return None
        return job.status, (
            f"{left} {self.units_label} came back from their batches without an answer (errors or expiry); resume "
            f"to submit them in a new batch{self.returned_hint}."
        )


# -- polling --------------------------------------------------------------------------------------------------------


def submit_grace_seconds():
    """How long a row may stay `submitting` before recovery looks for it at the provider."""
    return float(getattr(settings, "BATCH_SUBMIT_GRACE_SECONDS", 600))


def poll_open_batches():
    """Poll every open batch once; collect the ended ones. Returns {"polled": n, "ended": n}."""
    polled = ended = 0
    for pk in list(ProviderBatch.objects.filter(status__in=OPEN_BATCH).order_by("pk").values_list("pk", flat=True)):
        try:
            if poll_batch(pk):
                ended += 1
        except Exception as exc:  # one bad batch must not stop the others; its page shows why
            log.exception("polling provider batch %s failed", pk)
            ProviderBatch.objects.filter(pk=pk).update(
                error=f"Polling failed: {type(exc).__name__}: {exc}"[:2000], polled_at=timezone.now()
            )
        polled += 1
    return {"polled": polled, "ended": ended}


def poll_batch(pk):
    """Poll one batch; True when it ended and its results were handed to the job."""
    row = ProviderBatch.objects.select_related("endpoint").get(pk=pk)
    if row.status not in OPEN_BATCH:
        return False
    if row.endpoint is None:
        _close(row, BatchStatus.FAILED, "The endpoint was deleted.")
        return False
    api = batch_api(row.endpoint)
    if row.status == BatchStatus.SUBMITTING:
        return _recover(row, api)
    try:
        state = api.retrieve(row.provider_batch_id)
    except Exception as exc:
        ProviderBatch.objects.filter(pk=pk).update(
            error=redact_key(row.endpoint, str(_sdk_error(exc))), polled_at=timezone.now()
        )
        return False
    ProviderBatch.objects.filter(pk=pk, status__in=OPEN_BATCH).update(
        provider_status=state.provider_status[:30],
        counts=state.counts,
        polled_at=timezone.now(),
        **({} if state.ended else {"status": state.status}),
    )
    if not state.ended:
        return False
    results = list(api.results(row.provider_batch_id)) if state.status != BatchStatus.FAILED else []
    return collect(pk, state, results)


def _submitter_may_be_alive(row):
    """Whether a worker may still be uploading this `submitting` row: its job is held by a live executor (a lease
    that has not expired, or one whose worker's heartbeat goes on), and the grace period has not passed. A job no
    live worker holds cannot be submitting anything, so its row is looked up at once."""
    if row.created_at <= timezone.now() - timedelta(seconds=submit_grace_seconds()):
        return False
    job = jobs.get_kind(row.job_kind).model.objects.filter(pk=row.job_id).first()
    if job is None or job.status not in jobs.ACTIVE or not job.lease_token:
        return False
    if jobs.is_live(job):
        return True
    mark = worker_heartbeat.INSTANCE_MARK
    return mark in job.lease_token and job.lease_token.rsplit(mark, 1)[1] in worker_heartbeat.live_instances()


def _recover(row, api):
    """A row left in `submitting` by a crash: adopt the batch the provider has for it, or give its units back
    (they go out again in the next batch, see `_after_batch`)."""
    if _submitter_may_be_alive(row):
        return False  # the submitting worker may still be at it
    known = set(ProviderBatch.objects.exclude(provider_batch_id="").values_list("provider_batch_id", flat=True))
    try:
        if row.provider == "anthropic":
            found = api.find({}, created_after=row.created_at, request_count=row.request_count, known=known)
        else:
            found = api.find({"stereoscope_batch": str(row.pk)})
    except Exception as exc:
        ProviderBatch.objects.filter(pk=row.pk).update(error=str(_sdk_error(exc))[:500], polled_at=timezone.now())
        return False
    if found:
        ProviderBatch.objects.filter(pk=row.pk).update(
            provider_batch_id=found, status=BatchStatus.SUBMITTED, submitted_at=timezone.now(), error=""
        )
    else:
        _close(
            row,
            BatchStatus.FAILED,
            "The submission was cut short before the provider accepted it; its units are pending again.",
        )
        _after_batch(row.job_kind, row.job_id)
    return False


def _close(row, status, message):
    with transaction.atomic():
        if ProviderBatch.objects.filter(pk=row.pk, status__in=OPEN_BATCH).update(
            status=status, error=message, ended_at=timezone.now()
        ):
            _release(row)


def _release(row):
    """Give back a batch's reserved estimate (it ended unanswered, or its answers are being counted instead)."""
    connection_id = row.endpoint.connection_id if row.endpoint_id and row.endpoint else None
    if connection_id and row.estimated_cost_usd:
        spending.release_reservation(
            row.study_id, connection_id, spending.month_of(row.created_at), row.estimated_cost_usd
        )


def collect(pk, state, results):
    """Record every request of an ended batch and hand each answer to the job's sink, all in one transaction
    (a second poller finds the row closed and does nothing)."""
    with transaction.atomic():
        row = ProviderBatch.objects.select_for_update(of=("self",)).select_related("endpoint").get(pk=pk)
        if row.status not in OPEN_BATCH:
            return False
        kind = jobs.get_kind(row.job_kind)
        job = kind.get(row.job_id)
        endpoint = row.endpoint
        by_cid = {r.custom_id: r for r in results}
        keys = [key for _, key in row.units]
        units = {unit_key(kind, u): u for u in kind.load_units(job, keys, include_held=True)}
        attempts = dict(
            ProviderCall.objects.filter(unit_ref__in=[u.unit_ref[:200] for u in units.values()])
            .values_list("unit_ref")
            .annotate(n=Count("id"))
        )
        sink = kind.batch_sink(job)
        now = timezone.now()
        calls, ok, errored, cost = [], [], 0, None
        for cid, key in row.units:
            unit = units.get(key)
            if unit is None:
                continue  # done or removed meanwhile (e.g. answered live)
            got = by_cid.get(cid)
            call = ProviderCall(
                study_id=row.study_id,
                endpoint=endpoint,
                purpose=unit.purpose,
                unit_ref=unit.unit_ref[:200],
                output_id=output_id_from_ref(unit.unit_ref),
                provider=endpoint.provider,
                model=endpoint.model_id,
                messages=unit.messages,
                params=unit.params,
                attempt=attempts.get(unit.unit_ref[:200], 0) + 1,
                started_at=row.submitted_at or row.created_at,
                completed_at=now,
                batch_id=row.provider_batch_id,
                custom_id=cid,
            )
            if got is not None and got.result is not None:
                result = got.result
                charged = charged_tokens(result, estimate_call(unit.messages, unit.params))
                result.cost_usd = batch_cost_of(endpoint, *charged)
                result.latency_ms = None
                call.outcome, call.ok = CallOutcome.OK, True
                call.response_text, call.raw_response = result.text, got.raw
                call.finish_reason = (result.finish_reason or "")[:50]
                call.input_tokens, call.output_tokens = result.input_tokens, result.output_tokens
                call.cost_usd, call.http_status = result.cost_usd, result.http_status
                ok.append((unit, result))
                if result.cost_usd is not None:
                    cost = (cost or 0) + result.cost_usd
            else:
                error = (
                    got.error
                    if got is not None
                    else ProviderError(f"No result for this request in batch {row.provider_batch_id} ({state.status}).")
                )
                call.outcome, call.ok = CallOutcome.ERROR, False
                call.error = redact_key(endpoint, str(error)) + " The unit is pending again."
                call.http_status = error.http_status
                call.raw_response = redact_key(endpoint, got.raw) if got is not None else None
                errored += 1
            calls.append(call)
        ProviderCall.objects.bulk_create(calls, batch_size=500)
        _release(row)
        if endpoint is not None and endpoint.connection_id:
            month = spending.month_of(row.created_at)
            spending.record(
                row.study_id,
                [
                    spending.Charge(
                        endpoint.connection_id, month, c.cost_usd, c.input_tokens or 0, c.output_tokens or 0
                    )
                    for c in calls
                ],
            )
        for unit, result in ok:
            sink.on_success(unit, result)
        ProviderBatch.objects.filter(pk=pk).update(
            status=state.status,
            provider_status=state.provider_status[:30],
            counts=state.counts,
            succeeded=len(ok),
            errored=errored,
            cost_usd=cost,
            ended_at=now,
            error=state.error[:2000],
            polled_at=now,
        )
    _after_batch(row.job_kind, row.job_id)
    return True


def _after_batch(kind_name, job_id):
    """Once a job has no open batch left: start its next pass if the kind has one (in new batches), else let the
    engine set its status from its units. The job row's lock makes one poller do it."""
    kind = jobs.get_kind(kind_name)
    with transaction.atomic():
        job = kind.model.objects.select_for_update().get(pk=job_id)
        if open_count(kind_name, job_id) or job.status not in jobs.ACTIVE or jobs.is_live(job):
            return
        if not job.cancel_requested and hasattr(kind, "after_batches"):
            kind.after_batches(kind.get(job_id))  # e.g. a questionnaire run's judge reads the open answers
        more = not job.cancel_requested and kind.next_pass(kind.get(job_id))
        again = 0 if more or job.cancel_requested else _retry_returned(kind, kind.get(job_id))
    if more:
        jobs.start(kind, kind.get(job_id), message="Next pass (in new batches).")
    elif again:
        jobs.start(kind, kind.get(job_id), message=f"{again} {kind.units_label} came back unanswered; sent again.")
    else:
        jobs.finish(kind, job_id)


# -- automatic retries ----------------------------------------------------------------------------------------------


def _retry_returned(kind, job):
    """Units that came back from their batches without an answer (a request's error, expiry, or a submission cut
    short by a crash) go out again in the next batch while their attempts stay under their endpoint's limit
    (`max_attempts`, the same limit live calls have); a unit at the limit fails with the reason. Returns how many
    are to be sent again (0: nothing to do). Only batch-mode jobs; no one has to press Resume."""
    if getattr(job, "execution_mode", None) != ExecutionMode.BATCH:
        return 0
    keys = list(kind.pending_keys(job))
    if not keys:
        return 0
    units = list(kind.load_units(job, keys))
    refs = [u.unit_ref[:200] for u in units]
    calls = dict(ProviderCall.objects.filter(unit_ref__in=refs).values_list("unit_ref").annotate(n=Count("id")))
    last_error = dict(
        ProviderCall.objects.filter(unit_ref__in=refs, ok=False)
        .order_by("unit_ref", "pk")
        .values_list("unit_ref", "error")
    )
    sink, again = kind.batch_sink(job), 0
    for unit in units:
        ref = unit.unit_ref[:200]
        limit = max(1, unit.endpoint.max_attempts or 1)
        made = calls.get(ref, 0)
        if made >= limit:
            reason = (last_error.get(ref) or "no answer").removesuffix(" The unit is pending again.")
            sink.on_failure(unit, f"Gave up after {made} attempts: {reason}")
        else:
            again += 1
    return again


def cancel_open(kind_name, job_id):
    """Cancel the job's open batches at the provider; the poller collects what they finished. Returns how many."""
    n = 0
    for row in job_batches(kind_name, job_id).filter(status__in=OPEN_BATCH).select_related("endpoint"):
        if not row.provider_batch_id or row.endpoint is None:
            continue
        try:
            batch_api(row.endpoint).cancel(row.provider_batch_id)
        except Exception as exc:
            ProviderBatch.objects.filter(pk=row.pk).update(error=redact_key(row.endpoint, str(_sdk_error(exc))))
            continue
        ProviderBatch.objects.filter(pk=row.pk, status__in=OPEN_BATCH).update(status=BatchStatus.CANCELLING)
        n += 1
    return n


def summary(kind_name, job_id):
    """The job's batches and their cost figures, for its page and API."""
    rows = list(job_batches(kind_name, job_id).select_related("endpoint").order_by("number"))
    estimated = sum((r.estimated_cost_usd or 0) for r in rows if r.status != BatchStatus.FAILED)
    actual = sum((r.cost_usd or 0) for r in rows)
    return {
        "batches": rows,
        "open": sum(1 for r in rows if r.is_open),
        "estimated_cost_usd": estimated,
        "cost_usd": actual,
    }


def _money(value):
    return None if value is None else str(value)


def summary_data(kind_name, job_id):
    """The job's batches and their cost as plain data, for every job kind's API: {"batches": [...], "batch_cost"}."""
    info = summary(kind_name, job_id)
    return {
        "batches": [
            {
                "number": b.number,
                "endpoint": b.endpoint_id,
                "provider": b.provider,
                "provider_batch_id": b.provider_batch_id,
                "status": b.status,
                "requests": b.request_count,
                "provider_counts": b.counts,
                "succeeded": b.succeeded,
                "errored": b.errored,
                "estimated_cost_usd": _money(b.estimated_cost_usd),
                "cost_usd": _money(b.cost_usd),
                "submitted_at": b.submitted_at,
                "ended_at": b.ended_at,
            }
            for b in info["batches"]
        ],
        "batch_cost": {"estimated_usd": str(info["estimated_cost_usd"]), "actual_usd": str(info["cost_usd"])},
    }
