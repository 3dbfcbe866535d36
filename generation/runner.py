"""The one runner for LLM calls. Generation, judging, psychometrics and code discovery all use it.

`execute_units` takes CallUnits and a ResultSink. Network I/O runs on a private asyncio loop in a helper thread
(so it works under any outer event loop, e.g. Playwright's); every database write (one ProviderCall per attempt,
then the sink's callbacks) happens on the caller's thread in small batched transactions, so the caller's
connection and transaction see them. Limits per endpoint come from `generation.limits`; retries back off
exponentially with jitter and never earlier than Retry-After.
"""
import asyncio
import json
import logging
import queue
import random
import threading
import time
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, Callable, Iterable, Protocol

from django.db import transaction
from django.utils import timezone

from .key_variables import key_value
from .limits import LEASE_TTL, RENEW_EVERY, EndpointLimiter, estimate_tokens, make_store
from .models import ModelEndpoint, ProviderCall
from .providers.base import ChatResult, ProviderError, get_provider

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


class ResultSink(Protocol):
    def on_success(self, unit: CallUnit, result: ChatResult) -> None: ...

    def on_failure(self, unit: CallUnit, error: str) -> None: ...


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
    return int(rest) if prefix == "output" and rest.isdigit() else None


class _Loop:
    """The asyncio side: per-endpoint workers pull units, respect limits, retry, and report events."""

    def __init__(self, units, events, stop, max_attempts):
        self.units = units
        self.events = events
        self.stop = stop
        self.max_attempts = max_attempts
        self.in_flight = 0

    async def main(self):
        store = make_store()
        by_endpoint = {}
        for unit in self.units:
            by_endpoint.setdefault(unit.endpoint.pk, []).append(unit)
        limiters, providers, workers = [], [], []
        try:
            for units in by_endpoint.values():
                endpoint = units[0].endpoint
                limiter = EndpointLimiter(endpoint, store)
                provider = get_provider(endpoint)
                limiters.append(limiter)
                providers.append(provider)
                pending = list(reversed(units))
                for _ in range(min(len(units), limiter.max_concurrency)):
                    workers.append(asyncio.create_task(self.worker(pending, limiter, provider)))
            renewer = asyncio.create_task(self.renew(limiters))
            watcher = asyncio.create_task(self.watch_stop(workers))
            await asyncio.gather(*workers, return_exceptions=True)
            renewer.cancel()
            watcher.cancel()
        finally:
            for provider in providers:
                try:
                    await provider.aclose()
                except Exception:  # closing a pool must not hide the run's outcome
                    log.exception("closing a provider client failed")
            await store.close()

    async def renew(self, limiters):
        while True:
            await asyncio.sleep(min(RENEW_EVERY, LEASE_TTL / 3))
            for limiter in limiters:
                try:
                    await limiter.renew()
                except Exception:
                    log.warning("could not renew concurrency leases", exc_info=True)

    async def watch_stop(self, workers):
        while not self.stop.is_set():
            await asyncio.sleep(0.05)
        for task in workers:
            task.cancel()

    async def worker(self, pending, limiter, provider):
        while pending and not self.stop.is_set():
            unit = pending.pop()
            try:
                await self.run_unit(unit, limiter, provider)
            except asyncio.CancelledError:
                self.events.put(("cancelled", unit, None))
                raise
            except Exception as exc:  # a bug must fail the unit, not the run
                log.exception("unit %s crashed", unit.unit_ref)
                self.events.put(("failed", unit, f"Internal error: {type(exc).__name__}: {exc}"))

    async def run_unit(self, unit, limiter, provider):
        endpoint = unit.endpoint
        max_attempts = max(1, self.max_attempts or endpoint.max_attempts or 1)
        est = sum(estimate_tokens(str(m.get("content", ""))) for m in unit.messages) + int(unit.params.get("max_tokens") or 256)
        for attempt in range(1, max_attempts + 1):
            lease = await limiter.acquire(est, stop=self.stop)
            if lease is None:
                self.events.put(("cancelled", unit, None))
                return
            started_at = timezone.now()
            record = {"unit": unit, "attempt": attempt, "started_at": started_at}
            self.in_flight += 1
            actual = None
            t0 = time.perf_counter()
            try:
                result = await provider.acomplete(unit.messages, unit.params)
                actual = (result.input_tokens or 0) + (result.output_tokens or 0) or None
            except ProviderError as exc:
                result, error = None, exc
            except asyncio.CancelledError:
                record.update(error="Cancelled while in flight.", latency_ms=int((time.perf_counter() - t0) * 1000))
                self.events.put(("attempt", unit, record))
                raise
            except Exception as exc:
                result, error = None, ProviderError(f"{type(exc).__name__}: {exc}", retryable=False)
            finally:
                self.in_flight -= 1
                await limiter.release(lease, est, actual)
            if result is not None:
                result.cost_usd = cost_of(endpoint, result.input_tokens, result.output_tokens)
                record["result"] = result
                self.events.put(("attempt", unit, record))
                self.events.put(("succeeded", unit, result))
                return
            message = redact_key(endpoint, str(error))
            record.update(error=message, http_status=error.http_status, retry_after=error.retry_after,
                          latency_ms=int((time.perf_counter() - t0) * 1000), raw=redact_key(endpoint, error.raw))
            if not error.retryable or attempt == max_attempts:
                self.events.put(("attempt", unit, record))
                reason = message if not error.retryable else f"Gave up after {attempt} attempts: {message}"
                self.events.put(("failed", unit, reason))
                return
            delay = backoff_seconds(attempt, endpoint, error.retry_after)
            record["backoff"] = delay
            self.events.put(("attempt", unit, record))
            if error.retry_after and error.http_status == 429:
                await limiter.pause(error.retry_after)
            await asyncio.sleep(delay)


def _provider_call(study, record):
    unit = record["unit"]
    endpoint = unit.endpoint
    result = record.get("result")
    row = ProviderCall(
        study=study, endpoint=endpoint, purpose=unit.purpose, unit_ref=unit.unit_ref[:200],
        output_id=output_id_from_ref(unit.unit_ref), provider=endpoint.provider, model=endpoint.model_id,
        messages=unit.messages, params=unit.params, attempt=record["attempt"], started_at=record["started_at"],
    )
    if result is not None:
        row.ok = True
        row.response_text = result.text
        row.raw_response = result.raw
        row.finish_reason = (result.finish_reason or "")[:50]
        row.input_tokens, row.output_tokens = result.input_tokens, result.output_tokens
        row.cost_usd = result.cost_usd
        row.latency_ms = result.latency_ms
        row.http_status = result.http_status
    else:
        row.error = record.get("error", "")
        row.http_status = record.get("http_status")
        row.retry_after_s = record.get("retry_after")
        row.backoff_s = record.get("backoff")
        row.latency_ms = record.get("latency_ms")
        row.raw_response = record.get("raw")
    return row


def execute_units(study, units: Iterable[CallUnit], sink: ResultSink, *, cancel_check: Callable[[], bool] | None = None,
                  progress: Callable[[RunStats, int], None] | None = None, max_attempts: int | None = None,
                  cancel_every: float = 0.5) -> RunStats:
    """Run every unit to success or recorded failure. Returns the totals. Thread-safe for the caller."""
    units = list(units)
    stats = RunStats(total=len(units))
    if not units:
        return stats
    events, stop = queue.SimpleQueue(), threading.Event()
    loop_runner = _Loop(units, events, stop, max_attempts)
    crashed = {}

    def run_loop():
        try:
            asyncio.run(loop_runner.main())
        except BaseException as exc:
            crashed["error"] = exc
        finally:
            events.put(("end", None, None))

    started = time.perf_counter()
    thread = threading.Thread(target=run_loop, name="llm-runner", daemon=True)
    thread.start()
    finished = set()
    last_check = last_progress = time.perf_counter()
    ended = False
    try:
        while not ended:
            batch = []
            try:
                batch.append(events.get(timeout=BATCH_SECONDS))
                deadline = time.perf_counter() + BATCH_SECONDS
                while len(batch) < BATCH_SIZE and time.perf_counter() < deadline:
                    try:
                        batch.append(events.get(timeout=max(0.0, deadline - time.perf_counter())))
                    except queue.Empty:
                        break
            except queue.Empty:
                pass
            ended = any(kind == "end" for kind, _, _ in batch)
            _write_batch(study, batch, sink, stats, finished)
            now = time.perf_counter()
            if cancel_check is not None and not stop.is_set() and now - last_check >= cancel_every:
                last_check = now
                if cancel_check():
                    stats.cancelled = True
                    stop.set()
            if progress is not None and (now - last_progress >= 1.0 or ended):
                last_progress = now
                stats.elapsed_s = now - started
                progress(stats, loop_runner.in_flight)
    except BaseException:
        stop.set()
        thread.join(timeout=30)
        raise
    thread.join()
    stats.elapsed_s = time.perf_counter() - started
    stats.not_started = stats.total - stats.succeeded - stats.failed
    if "error" in crashed:
        raise crashed["error"]
    return stats


def _write_batch(study, batch, sink, stats, finished):
    if not batch:
        return
    calls = [_provider_call(study, record) for kind, _, record in batch if kind == "attempt"]
    with transaction.atomic():
        if calls:
            ProviderCall.objects.bulk_create(calls)
            stats.attempts += len(calls)
        for kind, unit, value in batch:
            if kind not in ("succeeded", "failed") or id(unit) in finished:
                continue
            finished.add(id(unit))
            try:
                with transaction.atomic():
                    if kind == "succeeded":
                        sink.on_success(unit, value)
                    else:
                        sink.on_failure(unit, value)
            except Exception as exc:
                log.exception("storing the result of %s failed", unit.unit_ref)
                kind = "failed"
                with transaction.atomic():
                    sink.on_failure(unit, f"Could not store the result: {type(exc).__name__}: {exc}")
            if kind == "succeeded":
                stats.succeeded += 1
                stats.input_tokens += value.input_tokens or 0
                stats.output_tokens += value.output_tokens or 0
                stats.cost_usd += value.cost_usd or 0
            else:
                stats.failed += 1
