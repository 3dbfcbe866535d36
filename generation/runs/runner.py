"""The one runner for LLM calls. Generation, judging, psychometrics and code discovery all use it.

`execute_units` takes CallUnits (a list, or a UnitSource the job engine feeds chunk by chunk) and a ResultSink.
Network I/O runs on a private asyncio loop in a helper thread (so it works under any outer event loop, e.g.
Playwright's); results are written on the caller's thread in small batched transactions, so the caller's
connection and transaction see them. Each attempt's ProviderCall row is committed BEFORE its request is sent
(outcome "unknown", estimated tokens and cost) and completed after, so a crash leaves a row for every call the
provider may have received. The first attempts of the units handed out together (a job's chunk, at most
JOB_CHUNK_SIZE) are admitted against the ledger and committed in one transaction as they are taken, when no
spending cap applies (`_open_ahead`); a row whose request is never sent is deleted again and taken out of the
ledger, and a killed worker leaves at most its chunks' unsent units "unknown". Under a cap, and for retries, each
attempt opens its own row just before its request: outside a transaction the loop commits it on its own
connection (no wait for the caller's thread); inside one the caller's thread writes it while the request waits.
Limits per endpoint come from `generation.runs.limits`; retries back off exponentially with jitter and never
earlier than Retry-After.
"""

import asyncio
import collections
import json
import logging
import queue
import random
import threading
import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable, Protocol

from django.conf import settings
from django.db import connections, transaction
from django.utils import timezone

from stereoscope.bulk import insert_rows_returning_ids, update_rows
from stereoscope.outages import is_infrastructure_error, outage_backoff
from stereoscope.untrusted import whole_number

from ..models import CallOutcome, ModelEndpoint, ProviderCall
from . import spending
from .connections import runtime_problem
from .key_variables import key_value
from .limits import (
    LEASE_TTL,
    RENEW_EVERY,
    CombinedLimiter,
    EndpointLimiter,
    connection_limiter,
    estimate_call,
    make_store,
)
from .providers.base import ChatResult, ProviderError, current_attempt, get_provider

log = logging.getLogger(__name__)
BATCH_SECONDS = 0.1
BATCH_SIZE = 500


@dataclass
class CallUnit:
    unit_ref: str
    endpoint: ModelEndpoint
    messages: list
    params: dict
    purpose: str
    payload: Any = None
    # the first attempt's record once its row is committed ahead of the request (`_open_ahead`); None once sent
    opened: dict | None = field(default=None, repr=False, compare=False)


class ResultSink(Protocol):
    """Stores results. A sink may also define `on_success_many(pairs)` to store a batch of (unit, result) at once
    (one statement instead of one per unit); if that raises, the batch is stored one by one."""

    def on_success(self, unit: CallUnit, result: ChatResult) -> None: ...

    def on_failure(self, unit: CallUnit, error: str) -> None: ...


class UnitSource(Protocol):
    """Units handed out a chunk at a time, on the caller's thread. `take()` returns [] once nothing is left."""

    def take(self) -> list[CallUnit]: ...

    def finished(self, unit: CallUnit) -> None: ...


class ListSource:
    """A fixed list of units, handed out at once."""

    def __init__(self, units):
        self.units = list(units)

    def take(self):
        units, self.units = self.units, []
        return units

    def finished(self, unit):
        pass


class CallbackSink:
    def __init__(self, on_success=None, on_failure=None):
        self._success = on_success
        self._failure = on_failure

    def on_success(self, unit, result):
        if self._success:
            self._success(unit, result)

    def on_failure(self, unit, error):
        if self._failure:
            self._failure(unit, error)


@dataclass
class RunStats:
    total: int = 0
    succeeded: int = 0
    failed: int = 0
    not_started: int = 0
    attempts: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: Decimal = field(default_factory=lambda: Decimal("0"))
    elapsed_s: float = 0.0
    cancelled: bool = False
    held: str = ""  # why the job must wait (a cap reached, a connection not approved); its units stay pending
    held_need: Decimal | None = None  # the estimate of the call that did not fit under a cap

    @property
    def rate(self):
        return self.succeeded / self.elapsed_s if self.elapsed_s > 0 else 0.0


def backoff_seconds(attempt, endpoint, retry_after=None, rng=random):
    """Wait after failed attempt `attempt` (1-based): base·2^(attempt−1), capped, with jitter in [50%, 100%];
    never less than the server's Retry-After."""
    base = float(getattr(endpoint, "backoff_base_s", 1.0) or 0.0)
    cap = float(getattr(endpoint, "backoff_max_s", 60.0) or 60.0)
    delay = min(cap, base * (2 ** (attempt - 1))) * rng.uniform(0.5, 1.0)
    if retry_after is not None:
        delay = max(delay, retry_after * rng.uniform(1.0, 1.1))
    return delay


def cost_of(endpoint, input_tokens, output_tokens):
    """USD from the endpoint's prices per million tokens; None when the endpoint has no prices."""
    price_in = getattr(endpoint, "input_price_per_mtok", None)
    price_out = getattr(endpoint, "output_price_per_mtok", None)
    if price_in is None and price_out is None:
        return None
    total = Decimal(input_tokens or 0) * Decimal(price_in or 0) + Decimal(output_tokens or 0) * Decimal(price_out or 0)
    return (total / Decimal(1_000_000)).quantize(Decimal("0.000001"))


def charged_tokens(result, estimate):
    """(input, output) tokens a call is charged for: those the provider reported, its estimate for a count the
    provider did not report or that was not believable (ChatResult keeps those as None), so a call is never
    charged less than its estimate for want of a figure."""
    est_in, est_out = estimate
    return (
        est_in if result.input_tokens is None else result.input_tokens,
        est_out if result.output_tokens is None else result.output_tokens,
    )


def redact_key(endpoint, value):
    """Remove the endpoint's key from an error message or body a provider may have echoed it in."""
    var = (getattr(endpoint, "api_key_env", "") or "").strip()
    secret = key_value(var)
    if not secret or len(secret) < 4 or value is None:
        return value
    if isinstance(value, str):
        return value.replace(secret, "[redacted key]")
    text = json.dumps(value)
    return json.loads(text.replace(json.dumps(secret)[1:-1], "[redacted key]")) if secret in text else value


def output_id_from_ref(unit_ref):
    prefix, _, rest = unit_ref.partition(":")
    return whole_number(rest) if prefix == "output" else None


class _Loop:
    """The asyncio side: per-endpoint workers pull units, respect limits, retry, and report events.

    Units arrive in batches from the caller's thread (`add`); when fewer than `low_water` are queued the loop asks
    for more with a "more" event, so a job's chunks stream through without a pause between them."""

    def __init__(self, events, stop, max_attempts, per_endpoint_cap=None):
        self.events = events  # what the caller's thread must act on at once: rows to open, units wanted, the end
        self.results = collections.deque()  # the rest, collected by the caller's thread on its next turn
        self.stop = stop
        self.max_attempts = max_attempts
        self.cap = per_endpoint_cap
        self.in_flight = 0
        self.queues = {}  # endpoint pk -> list of units (popped from the end)
        self.workers = {}  # endpoint pk -> [tasks]
        self.limiters = {}
        self.connection_limiters = {}  # connection pk -> its limiter, shared by every endpoint on it
        self.providers = {}
        self.exhausted = False
        self.asked = False
        self.low_water = 1
        self.loop = None
        self.changed = None
        self.own_writer = None  # an _AttemptWriter when the loop writes attempt rows itself
        self.hold_reason = ""  # set once a call did not fit under a cap: no more calls start
        self.hold_need = None
        self.outage_waits = 0  # how often a unit went back to pending because a service was away

    def hold(self, reason, need=None):
        """No call starts any more (on the loop's thread): the units left are handed back unfinished."""
        if not self.hold_reason:
            self.hold_reason, self.hold_need = reason, need
        self.exhausted = True
        if self.changed is not None:
            self.changed.set()

    def add_threadsafe(self, units):
        self.call_threadsafe(self._add, units)

    def call_threadsafe(self, fn, *args):
        """Schedule on the loop from the caller's thread; a loop that already ended (stopped) needs nothing."""
        try:
            self.loop.call_soon_threadsafe(fn, *args)
        except RuntimeError:
            pass

    def _add(self, units):
        self.asked = False
        if not units:
            self.exhausted = True
        for unit in units:
            pk = unit.endpoint.pk
            if pk not in self.queues:
                self.queues[pk] = []
                self.workers[pk] = []
                self.limiters[pk] = self.limiter_for(unit.endpoint)
                self.providers[pk] = get_provider(unit.endpoint)
            self.queues[pk].insert(0, unit)
        for pk, pending in self.queues.items():
            limit = self.limiters[pk].max_concurrency
            if self.cap:
                limit = min(limit, self.cap)
            alive = [t for t in self.workers[pk] if not t.done()]
            for _ in range(min(len(pending), limit - len(alive))):
                alive.append(asyncio.create_task(self.worker(pk)))
            self.workers[pk] = alive
        self.low_water = max(
            1, sum(min(self.cap or lim.max_concurrency, lim.max_concurrency) for lim in self.limiters.values())
        )
        self.changed.set()

    def limiter_for(self, endpoint):
        """The endpoint's limiter, behind its connection's (one per connection in this loop) when staff set any."""
        limiter = EndpointLimiter(endpoint, self.store)
        connection = endpoint.connection if endpoint.connection_id else None
        if connection is None:
            return limiter
        if connection.pk not in self.connection_limiters:
            self.connection_limiters[connection.pk] = connection_limiter(connection, self.store)
        shared = self.connection_limiters[connection.pk]
        return CombinedLimiter(shared, limiter) if shared is not None else limiter

    def report(self, kind, unit, value):
        """An attempt's or unit's outcome, stored with the next batch; it does not wake the caller's thread."""
        self.results.append((kind, unit, value))

    def queued(self):
        return sum(len(q) for q in self.queues.values())

    def ask_more(self):
        if not self.asked and not self.exhausted and not self.stop.is_set():
            self.asked = True
            self.events.put(("more", None, None))

    async def main(self):
        self.loop = asyncio.get_running_loop()
        self.changed = asyncio.Event()
        self.store = make_store()
        try:
            renewer = asyncio.create_task(self.renew())
            self.ask_more()
            while True:
                if self.stop.is_set():
                    for tasks in self.workers.values():
                        for task in tasks:
                            task.cancel()
                running = [t for tasks in self.workers.values() for t in tasks if not t.done()]
                if (self.exhausted or self.stop.is_set()) and not running and (self.stop.is_set() or not self.queued()):
                    break
                if self.queued() < self.low_water:
                    self.ask_more()
                self.changed.clear()
                try:
                    await asyncio.wait_for(self.changed.wait(), 0.05)
                except asyncio.TimeoutError:
                    pass
            await asyncio.gather(*[t for tasks in self.workers.values() for t in tasks], return_exceptions=True)
            renewer.cancel()
        finally:
            for provider in self.providers.values():
                try:
                    await provider.aclose()
                except Exception:  # closing a pool must not hide the run's outcome
                    log.exception("closing a provider client failed")
            await self.store.close()

    async def renew(self):
        while True:
            await asyncio.sleep(min(RENEW_EVERY, LEASE_TTL / 3))
            for limiter in list(self.limiters.values()):
                try:
                    await limiter.renew()
                except Exception:
                    log.warning("could not renew concurrency leases", exc_info=True)

    async def wait_out_outage(self, unit, exc, outages):
        """Back off while Redis, the broker or the database is away; the unit stays pending in this worker (its
        chunk stays leased while the job's progress ticks renew it, and goes to another worker if this one dies)."""
        delay = outage_backoff(outages)
        self.outage_waits += 1
        log.warning(
            "unit %s waits %.1f s for a service to return (%s: %s); it is not failed",
            unit.unit_ref,
            delay,
            type(exc).__name__,
            exc,
        )
        await asyncio.sleep(delay)

    async def worker(self, pk):
        pending = self.queues[pk]
        limiter, provider = self.limiters[pk], self.providers[pk]
        outages = 0  # outage errors in a row
        try:
            while not self.stop.is_set():
                if not pending:
                    if self.exhausted:
                        return
                    self.ask_more()
                    self.changed.set()
                    try:
                        await asyncio.wait_for(self.changed.wait(), 0.05)
                    except asyncio.TimeoutError:
                        pass
                    continue
                unit = pending.pop()
                if len(pending) < self.low_water:
                    self.ask_more()
                try:
                    await self.run_unit(unit, limiter, provider)
                    outages = 0
                except asyncio.CancelledError:
                    self.report("cancelled", unit, None)
                    raise
                except Exception as exc:
                    if is_infrastructure_error(exc):  # not the unit's fault: it waits, pending, for the service
                        outages += 1
                        pending.append(unit)  # taken again first
                        await self.wait_out_outage(unit, exc, outages)
                        continue
                    log.exception("unit %s crashed", unit.unit_ref)  # a bug must fail the unit, not the run
                    self.report("failed", unit, f"Internal error: {type(exc).__name__}: {exc}")
        finally:
            self.changed.set()

    async def open_attempt(self, record):
        """Commit the attempt row (on the loop's own connection if it has one, else on the caller's thread); only
        then may the request go out."""
        record["written"] = self.loop.create_future()
        if self.own_writer is not None:
            self.own_writer.submit(record)
        else:
            self.events.put(("open", record["unit"], record))
        await record["written"]

    async def _open_or_report(self, record):
        """Write the attempt row before its request; a cancellation meanwhile is reported as not sent (after its row,
        if the writer is still opening it)."""
        try:
            await self.open_attempt(record)
        except asyncio.CancelledError:
            record["not_sent"] = True
            if self.own_writer is not None:
                self.own_writer.submit_report("attempt", record["unit"], record)
            else:
                self.report("attempt", record["unit"], record)
            raise

    async def run_unit(self, unit, limiter, provider):
        endpoint = unit.endpoint
        max_attempts = max(1, self.max_attempts or endpoint.max_attempts or 1)
        est_in, est_out = estimate_call(unit.messages, unit.params)
        est = est_in + est_out
        for attempt in range(1, max_attempts + 1):
            if self.hold_reason:
                self.report("held", unit, None)
                return
            lease = await limiter.acquire(est, stop=self.stop)
            if lease is None:
                self.report("cancelled", unit, None)
                return
            opened = (
                getattr(unit, "opened", None) if attempt == 1 else None
            )  # its row, committed with its chunk's (_open_ahead)
            actual = None
            try:
                if opened is not None:
                    record, unit.opened = opened, None  # sent now: no await between this and the request
                    record["sent_at"] = timezone.now()
                else:
                    record = {
                        "unit": unit,
                        "attempt": attempt,
                        "started_at": timezone.now(),
                        "estimate": (est_in, est_out),
                    }
                    await self._open_or_report(record)
                if record.get("refused"):  # it would cross a spending cap: not sent, the unit stays pending
                    self.report("held", unit, None)
                    return
                self.in_flight += 1
                t0 = time.perf_counter()
                named = current_attempt.set(record.get("row_id"))  # the request names its row (providers.base)
                try:
                    result = await provider.acomplete(unit.messages, unit.params)
                    actual = (result.input_tokens or 0) + (result.output_tokens or 0) or None
                except ProviderError as exc:
                    result, error = None, exc
                except asyncio.CancelledError:
                    record.update(error="Cancelled while in flight.", latency_ms=int((time.perf_counter() - t0) * 1000))
                    self.report("attempt", unit, record)
                    raise
                except Exception as exc:
                    if is_infrastructure_error(exc):  # the attempt is closed as interrupted; the unit waits
                        record.update(
                            error=f"Interrupted: a service was away ({type(exc).__name__}).",
                            latency_ms=int((time.perf_counter() - t0) * 1000),
                        )
                        self.report("attempt", unit, record)
                        raise
                    result, error = None, ProviderError(f"{type(exc).__name__}: {exc}", retryable=False)
                finally:
                    current_attempt.reset(named)
                    self.in_flight -= 1
            finally:
                try:
                    await limiter.release(lease, est, actual)
                except Exception as exc:  # Redis away: the slot's lease expires on its own (LEASE_TTL)
                    if not is_infrastructure_error(exc):
                        raise
                    log.warning("could not release a concurrency slot (%s); it expires on its own", exc)
            if result is not None:
                result.cost_usd = cost_of(endpoint, *charged_tokens(result, record["estimate"]))
                record["result"] = result
                self.report("attempt", unit, record)
                self.report("succeeded", unit, result)
                return
            message = redact_key(endpoint, str(error))
            record.update(
                error=message,
                http_status=error.http_status,
                retry_after=error.retry_after,
                latency_ms=int((time.perf_counter() - t0) * 1000),
                raw=redact_key(endpoint, error.raw),
            )
            if not error.retryable or attempt == max_attempts:
                self.report("attempt", unit, record)
                reason = message if not error.retryable else f"Gave up after {attempt} attempts: {message}"
                self.report("failed", unit, reason)
                return
            delay = backoff_seconds(attempt, endpoint, error.retry_after)
            record["backoff"] = delay
            self.report("attempt", unit, record)
            if error.retry_after and error.http_status == 429:
                await limiter.pause(error.retry_after)
            await asyncio.sleep(delay)


def _opened_call(study, record):
    """The attempt row as written before the request: outcome unknown, with the estimated tokens and cost."""
    unit = record["unit"]
    endpoint = unit.endpoint
    est_in, est_out = record["estimate"]
    record["est_cost"] = cost_of(endpoint, est_in, est_out)
    return {
        "study": study.pk,
        "endpoint": endpoint.pk,
        "purpose": unit.purpose,
        "unit_ref": unit.unit_ref[:200],
        "output": output_id_from_ref(unit.unit_ref),
        "provider": endpoint.provider,
        "model": endpoint.model_id,
        "messages": unit.messages,
        "params": unit.params,
        "attempt": record["attempt"],
        "started_at": record["started_at"],
        "outcome": CallOutcome.UNKNOWN,
        "input_tokens": est_in,
        "output_tokens": est_out,
        "cost_usd": record["est_cost"],
    }


def _charge(record, *, closing=False):
    """The ledger entry of an attempt: its estimate when opened, the real figures minus the estimate when closed,
    minus the estimate when it was never sent; None for calls outside the ledger (manual entry)."""
    endpoint = record["unit"].endpoint
    if not endpoint.connection_id or endpoint.provider == "manual":
        return None
    est_in, est_out = record["estimate"]
    est_cost = record.get("est_cost")
    if est_cost is None and "est_cost" not in record:
        est_cost = cost_of(endpoint, est_in, est_out)
    month = spending.month_of(record["started_at"])
    if not closing:
        return spending.Charge(endpoint.connection_id, month, est_cost, est_in, est_out, 1, endpoint.name)
    if record.get("not_sent"):
        return spending.Charge(endpoint.connection_id, month, -(est_cost or 0), -est_in, -est_out, -1)
    fields = _closed_fields(record)
    return spending.Charge(
        endpoint.connection_id,
        month,
        (fields["cost_usd"] or 0) - (est_cost or 0),
        (fields["input_tokens"] or 0) - est_in,
        (fields["output_tokens"] or 0) - est_out,
        0,
    )


def _admit(study, records):
    """Count the attempts about to be sent in the ledger; mark those that would cross a cap as refused (with the
    reason). Call inside the transaction that writes their rows. Returns the records admitted."""
    charged = [(r, _charge(r)) for r in records]
    to_check = [(r, c) for r, c in charged if c is not None]
    accepted, reason, need = spending.admit(study.pk, [c for _, c in to_check])
    refused = {id(r) for (r, _), ok in zip(to_check, accepted, strict=True) if not ok}
    admitted = []
    for record, _ in charged:
        if id(record) in refused:
            record["refused"], record["need"] = reason, need
        else:
            admitted.append(record)
    return admitted


class _AttemptWriter:
    """Commits attempt rows on a thread of its own, with that thread's own connection, so a request never waits for
    the caller's thread (busy writing results): every attempt waiting when the thread turns to them is admitted
    against the caps and inserted in one transaction (`_open_attempts`), and their requests are let go together.

    Not on the loop's thread: Django refuses ORM calls from a thread running an event loop (SynchronousOnlyOperation)
    unless DJANGO_ALLOW_ASYNC_UNSAFE is set; each attempt then failed, logged a traceback and fell back to the
    caller's thread (issue 36). Should a write fail here, its attempts are handed to the caller's thread as before."""

    def __init__(self, study, loop_runner):
        self.study, self.loop_runner = study, loop_runner
        self.waiting = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._serve, name="llm-attempt-writer", daemon=True)
        self.thread.start()

    def submit(self, record):
        self.waiting.put(("open", record))

    def submit_report(self, kind, unit, record):
        """Report an attempt that was not sent once its row is written (its row id is then known, for deletion)."""
        self.waiting.put(("report", (kind, unit, record)))

    def close(self):
        self.waiting.put(None)
        self.thread.join()

    def _serve(self):
        try:
            done = False
            while not done:
                items = [self.waiting.get()]
                while True:
                    try:
                        items.append(self.waiting.get_nowait())
                    except queue.Empty:
                        break
                done = None in items
                events = [("open", item[1]["unit"], item[1]) for item in items if item and item[0] == "open"]
                try:
                    _open_attempts(self.study, events, self.loop_runner)
                except Exception:
                    log.warning(
                        "the attempt writer could not write %d rows; the caller's thread writes them",
                        len(events),
                        exc_info=True,
                    )
                    for event in events:
                        if event[2].get("row_id") is None and not event[2].get("refused"):
                            self.loop_runner.events.put(event)
                for item in items:  # reports after the rows they name (queued after them)
                    if item and item[0] == "report":
                        self.loop_runner.report(*item[1])
        finally:
            connections.close_all()  # this thread's own connection


def _closed_fields(record):
    """The columns an attempt row gets once its answer (or error) is known."""
    result = record.get("result")
    sent_at = record.get("sent_at") or record["started_at"]  # a row opened ahead of its request: when it went out
    if result is not None:
        return {
            "started_at": sent_at,
            "outcome": CallOutcome.OK,
            "ok": True,
            "response_text": result.text,
            "raw_response": result.raw,
            "finish_reason": (result.finish_reason or "")[:50],
            "input_tokens": result.input_tokens,
            "output_tokens": result.output_tokens,
            "cost_usd": result.cost_usd,
            "latency_ms": result.latency_ms,
            "http_status": result.http_status,
            "completed_at": timezone.now(),
        }
    return {
        "started_at": sent_at,
        "outcome": CallOutcome.ERROR,
        "ok": False,
        "error": record.get("error", ""),
        "http_status": record.get("http_status"),
        "retry_after_s": record.get("retry_after"),
        "backoff_s": record.get("backoff"),
        "latency_ms": record.get("latency_ms"),
        "raw_response": record.get("raw"),
        "input_tokens": None,
        "output_tokens": None,
        "cost_usd": None,
        "completed_at": timezone.now(),
    }


def execute_units(
    study,
    units,
    sink: ResultSink,
    *,
    cancel_check: Callable[[], bool] | None = None,
    progress: Callable[[RunStats, int], None] | None = None,
    max_attempts: int | None = None,
    cancel_every: float = 0.5,
    per_endpoint_cap: int | None = None,
) -> RunStats:
    """Run every unit to success or recorded failure. Returns the totals. Thread-safe for the caller.

    `units` is a list of CallUnits or a UnitSource; `per_endpoint_cap` bounds this process's concurrent calls per
    endpoint (default settings.JOB_WORKER_CONCURRENCY; the endpoint's own limit holds across all processes)."""
    source = units if hasattr(units, "take") else ListSource(units)
    if per_endpoint_cap is None:
        per_endpoint_cap = getattr(settings, "JOB_WORKER_CONCURRENCY", None)
    stats = RunStats()
    events, stop = queue.SimpleQueue(), threading.Event()
    loop_runner = _Loop(events, stop, max_attempts, per_endpoint_cap)
    # Outside a transaction the loop commits attempt rows on a connection of its own, so a request does not wait
    # for this thread; inside one (rows another connection cannot see yet) this thread writes them.
    own_rows = not transaction.get_connection().in_atomic_block
    crashed = {}
    checked = {}  # endpoint pk -> its connection's problem, checked once per chunk taken
    opened_ahead = []  # units taken whose first attempt row may be open and not yet sent
    ahead = int(getattr(settings, "JOB_CHUNK_SIZE", 100))  # a long list opens rows for its first units only
    finished = set()

    def take():
        """The next units, or [] once the job must wait: every endpoint's connection is checked again before
        its calls go out (staff may have closed it, or struck its model off, since the run started)."""
        if stats.held:
            return []
        units = source.take()
        checked.clear()
        for unit in units:
            endpoint = unit.endpoint
            if endpoint.connection_id:
                endpoint.connection  # noqa: B018 - loaded here: the network thread must not query
            if endpoint.pk not in checked:
                checked[endpoint.pk] = runtime_problem(endpoint)
            if checked[endpoint.pk]:
                stats.held = f"Waiting: “{endpoint.name}”: {checked[endpoint.pk]}"
                return []
        _try_open_ahead(study, units[:ahead], opened_ahead)
        return units

    first = take()
    stats.total = len(first)
    if not first:
        return stats
    started_loop = threading.Event()

    def run_loop():
        try:
            if own_rows:
                loop_runner.own_writer = _AttemptWriter(study, loop_runner)

            async def main():
                loop_runner.loop = asyncio.get_running_loop()
                task = asyncio.create_task(loop_runner.main())
                await asyncio.sleep(0)
                started_loop.set()
                await task

            asyncio.run(main())
        except BaseException as exc:
            crashed["error"] = exc
        finally:
            if loop_runner.own_writer is not None:
                loop_runner.own_writer.close()
            started_loop.set()
            events.put(("end", None, None))

    started = time.perf_counter()
    thread = threading.Thread(target=run_loop, name="llm-runner", daemon=True)
    thread.start()
    started_loop.wait()
    pending_first = [first]
    last_check = last_progress = last_flush = time.perf_counter()
    ended = False
    rest = []
    backlog = []  # events taken off the queue by serve_opens, handled by the next turn of the loop

    def serve_opens():
        """Open the attempts waiting now, between the loop's longer steps (writing results, leasing a chunk, a
        progress tick): a request waits for its row, so its wait must not add up over several steps."""
        opens = []
        while True:
            try:
                event = events.get_nowait()
            except queue.Empty:
                break
            (opens if event[0] == "open" else backlog).append(event)
        _open_attempts(study, opens, loop_runner)

    def take_results():
        taken = []
        while True:
            try:
                taken.append(loop_runner.results.popleft())
            except IndexError:
                return taken

    try:
        while not ended:
            # Attempt rows to open are written at once (their requests wait for them); results are gathered for
            # up to BATCH_SECONDS and written together.
            batch, backlog = backlog, []
            try:
                if not batch:
                    batch.append(events.get(timeout=max(0.0, last_flush + BATCH_SECONDS - time.perf_counter())))
                while len(batch) < BATCH_SIZE:
                    batch.append(events.get_nowait())
            except queue.Empty:
                pass
            ended = any(kind == "end" for kind, _, _ in batch)
            wants_more = any(kind == "more" for kind, _, _ in batch)
            _open_attempts(study, [e for e in batch if e[0] == "open"], loop_runner)
            rest.extend(take_results())
            now = time.perf_counter()
            due = now - last_flush >= BATCH_SECONDS
            if due:
                last_flush = now
            if rest and (ended or wants_more or due or len(rest) >= BATCH_SIZE):
                _write_batch(study, rest, sink, stats, finished, loop_runner, source)
                rest = []
                serve_opens()
            if wants_more and not ended:
                if pending_first:
                    more = pending_first.pop()
                elif stop.is_set():
                    more = []
                else:
                    more = take()
                    stats.total += len(more)
                    serve_opens()
                if "error" not in crashed:
                    loop_runner.add_threadsafe(more)
            now = time.perf_counter()
            if cancel_check is not None and not stop.is_set() and now - last_check >= cancel_every:
                last_check = now
                if cancel_check():
                    stats.cancelled = True
                    stop.set()
                    loop_runner.add_threadsafe([])
            if progress is not None and (now - last_progress >= 1.0 or ended):
                last_progress = now
                stats.elapsed_s = now - started
                progress(stats, loop_runner.in_flight)
                serve_opens()
    except BaseException:
        stop.set()
        thread.join(timeout=30)
        _try_close_unsent(thread, study, opened_ahead, sink, stats, finished)
        raise
    thread.join()
    _close_unsent(study, opened_ahead, sink, stats, finished)
    stats.elapsed_s = time.perf_counter() - started
    stats.not_started = stats.total - stats.succeeded - stats.failed
    if loop_runner.hold_reason and not stats.held:
        stats.held, stats.held_need = loop_runner.hold_reason, loop_runner.hold_need
    if "error" in crashed:
        raise crashed["error"]
    return stats


CLOSE_FIELDS = [
    "started_at",
    "outcome",
    "ok",
    "response_text",
    "raw_response",
    "finish_reason",
    "input_tokens",
    "output_tokens",
    "cost_usd",
    "latency_ms",
    "http_status",
    "error",
    "retry_after_s",
    "backoff_s",
    "completed_at",
]


def _close_calls(study, records):
    """Complete the attempt rows (one prepared UPDATE run for many rows) and correct the ledger by the real figures
    (call inside a transaction)."""
    update_rows(ProviderCall, CLOSE_FIELDS, [(record["row_id"], _closed_fields(record)) for record in records])
    spending.record(study.pk, [c for r in records if (c := _charge(r, closing=True)) is not None])


def _open_attempts(study, events, loop_runner):
    """Commit the attempt rows of requests about to be sent, then let those requests go."""
    if not events:
        return
    records = [record for _, _, record in events]
    rows = [_opened_call(study, record) for record in records]
    with transaction.atomic():
        admitted = {id(r) for r in _admit(study, records)}
        ids = insert_rows_returning_ids(
            ProviderCall, [row for r, row in zip(records, rows, strict=True) if id(r) in admitted]
        )
    for record, row_id in zip([r for r in records if id(r) in admitted], ids, strict=True):
        record["row_id"] = row_id
    refused = [r for r in records if r.get("refused")]
    if refused and loop_runner is not None:
        loop_runner.call_threadsafe(loop_runner.hold, refused[0]["refused"], refused[0].get("need"))
    if loop_runner is not None:  # one wake-up of the loop lets every request of the batch go
        loop_runner.call_threadsafe(_resolve_all, [record["written"] for record in records])


def _open_ahead(study, units):
    """Commit the first attempt rows of a chunk's units in one transaction before any of them is sent (a request
    never goes out before its row), so a request does not wait for its own row. Only when no spending cap applies
    (decided under the ledger's locks): under a cap each attempt is admitted just before its request, against the
    real costs of the calls answered by then. A row whose request is never sent is deleted (`_close_unsent`); a
    worker killed meanwhile leaves such rows "unknown", at most its chunks' units not yet sent."""
    records = []
    for unit in units:
        est_in, est_out = estimate_call(unit.messages, unit.params)
        records.append({"unit": unit, "attempt": 1, "started_at": timezone.now(), "estimate": (est_in, est_out)})
    if not records:
        return
    rows = [_opened_call(study, record) for record in records]
    charged = [(record, _charge(record)) for record in records]
    with transaction.atomic():
        to_check = [charge for _, charge in charged if charge is not None]
        accepted, _, _ = spending.admit(study.pk, to_check, only_uncapped=True)
        if to_check and not all(accepted):
            return  # a cap applies (nothing was counted): each attempt is opened on its own
        ids = insert_rows_returning_ids(ProviderCall, rows)
    for record, row_id in zip(records, ids, strict=True):
        record["row_id"] = row_id
        record["unit"].opened = record


def _try_open_ahead(study, units, opened_ahead):
    """`_open_ahead`, keeping `opened_ahead` the list of units whose row may be open and not sent yet. With the
    database away each attempt opens its own row instead, waiting out the outage."""
    try:
        if units:
            _open_ahead(study, units)
    except Exception as exc:
        if not is_infrastructure_error(exc):
            raise
        log.warning("could not open a chunk's attempt rows ahead (%s: %s)", type(exc).__name__, exc)
    opened_ahead[:] = [unit for unit in opened_ahead if getattr(unit, "opened", None) is not None] + units


def _try_close_unsent(thread, study, units, sink, stats, finished):
    """`_close_unsent` once the loop's thread has ended (while it runs a request may be on its way: its row stays)."""
    if thread.is_alive():
        return
    try:
        _close_unsent(study, units, sink, stats, finished)
    except Exception:  # the database is away: the rows stay "unknown", like a killed worker's
        log.warning("could not delete the rows of requests never sent", exc_info=True)


def _close_unsent(study, units, sink, stats, finished):
    """Delete the rows opened ahead for units whose request was never sent (cancelled, held, stopped) and take
    their estimates out of the ledger."""
    unsent = []
    for unit in units:
        record, unit.opened = getattr(unit, "opened", None), None
        if record is not None:
            record["not_sent"] = True
            unsent.append(("attempt", unit, record))
    _write_batch(study, unsent, sink, stats, finished)


def _write_batch(study, batch, sink, stats, finished, loop_runner=None, source=None):
    if not batch:
        return
    _open_attempts(study, [e for e in batch if e[0] == "open"], loop_runner)
    closing = [record for kind, _, record in batch if kind == "attempt"]
    with transaction.atomic():
        unsent = [r for r in closing if r.get("not_sent") and r.get("row_id")]
        if unsent:  # cancelled before the request went out: it was never an attempt
            ProviderCall.objects.filter(pk__in=[r["row_id"] for r in unsent]).delete()
            spending.record(study.pk, [c for r in unsent if (c := _charge(r, closing=True)) is not None])
        done = [r for r in closing if not r.get("not_sent") and r.get("row_id") is not None]
        if done:
            _close_calls(study, done)
            stats.attempts += len(done)
        stored = _store_successes(sink, batch)
        for kind, unit, value in batch:
            if kind not in ("succeeded", "failed") or getattr(unit, "_finished", False):
                continue
            unit._finished = True  # on the unit itself: ids of finished units are reused once they are freed
            try:
                if kind == "succeeded" and id(unit) in stored:
                    pass
                else:
                    with transaction.atomic():
                        if kind == "succeeded":
                            sink.on_success(unit, value)
                        else:
                            sink.on_failure(unit, value)
            except Exception as exc:
                if is_infrastructure_error(exc):  # the database is away: the unit stays pending, the job pauses
                    unit._finished = False
                    raise
                log.exception("storing the result of %s failed", unit.unit_ref)
                kind = "failed"
                with transaction.atomic():
                    sink.on_failure(unit, f"Could not store the result: {type(exc).__name__}: {exc}")
            if source is not None:
                source.finished(unit)
            if kind == "succeeded":
                stats.succeeded += 1
                stats.input_tokens += value.input_tokens or 0
                stats.output_tokens += value.output_tokens or 0
                stats.cost_usd += value.cost_usd or 0
            else:
                stats.failed += 1


def _store_successes(sink, batch):
    """Store the batch's successes with the sink's `on_success_many` if it has one; the ids of the units stored
    (none if it has not, or if it failed: then each is stored on its own, and a bad one fails alone)."""
    many = getattr(sink, "on_success_many", None)
    if many is None:
        return set()
    pairs, seen = [], set()
    for kind, unit, value in batch:
        if kind == "succeeded" and not getattr(unit, "_finished", False) and id(unit) not in seen:
            seen.add(id(unit))
            pairs.append((unit, value))
    if not pairs:
        return set()
    try:
        with transaction.atomic():
            many(pairs)
    except Exception:
        log.warning("storing %d results at once failed; storing them one by one", len(pairs), exc_info=True)
        return set()
    return seen


def _resolve_all(futures):
    for future in futures:
        if not future.done():
            future.set_result(True)
