"""The shared runner: every unit completes or fails with its reason, attempts obey backoff and Retry-After,
limits hold (asserted from the server's own in-flight counters), cancellation stops new work."""

import os
import threading
from itertools import pairwise

import pytest

from generation.models import ProviderCall
from generation.runs.limits import LocalStore, make_store
from generation.runs.runner import CallbackSink, CallUnit, backoff_seconds, execute_units

pytestmark = pytest.mark.django_db


def units_for(endpoint, prompts, purpose="test", params=None):
    return [
        CallUnit(
            unit_ref=f"u:{p}",
            endpoint=endpoint,
            messages=[{"role": "user", "content": p}],
            params=dict(params or {}),
            purpose=purpose,
        )
        for p in prompts
    ]


class Collect:
    def __init__(self):
        self.ok, self.failed = {}, {}

    def on_success(self, unit, result):
        assert unit.unit_ref not in self.ok
        self.ok[unit.unit_ref] = result

    def on_failure(self, unit, error):
        assert unit.unit_ref not in self.failed
        self.failed[unit.unit_ref] = error


def test_all_units_complete_within_concurrency(study, make_endpoint, fake_provider):
    endpoint = make_endpoint(study, max_concurrency=4)
    fake_provider.default_delay = 0.05
    sink = Collect()
    stats = execute_units(study, units_for(endpoint, [f"prompt-{i}" for i in range(30)]), sink)
    assert stats.succeeded == 30 and stats.failed == 0 and stats.attempts == 30
    assert sorted(sink.ok) == sorted(f"u:prompt-{i}" for i in range(30))
    assert sink.ok["u:prompt-7"].text.endswith("prompt-7")
    assert fake_provider.max_in_flight_by_model[endpoint.model_id] == 4  # reached, never exceeded
    assert ProviderCall.objects.filter(study=study, ok=True).count() == 30
    call = ProviderCall.objects.get(unit_ref="u:prompt-3")
    assert call.messages == [{"role": "user", "content": "prompt-3"}] and call.model == endpoint.model_id
    assert call.input_tokens and call.output_tokens and call.response_text.endswith("prompt-3")


def test_retries_honour_retry_after_and_back_off(study, make_endpoint, fake_provider):
    endpoint = make_endpoint(study, backoff_base_s=0.2, backoff_max_s=5, max_attempts=5)
    fake_provider.script(
        [{"status": 429, "retry_after": 1}, {"status": 500}, {"status": 503}, {"text": "finally"}], match="flaky"
    )
    sink = Collect()
    stats = execute_units(study, units_for(endpoint, ["flaky one", "steady one"]), sink)
    assert stats.succeeded == 2 and sink.ok["u:flaky one"].text == "finally"
    calls = list(ProviderCall.objects.filter(unit_ref="u:flaky one").order_by("attempt"))
    assert [c.attempt for c in calls] == [1, 2, 3, 4]
    assert [c.http_status for c in calls] == [429, 500, 503, 200] and [c.ok for c in calls] == [
        False,
        False,
        False,
        True,
    ]
    assert calls[0].retry_after_s == 1.0 and calls[0].backoff_s >= 1.0
    # exponential with jitter: attempt n waits base·2^(n−1)·[0.5, 1]
    assert 0.2 <= calls[1].backoff_s <= 0.4 and 0.4 <= calls[2].backoff_s <= 0.8
    seen = [r["t"] for r in fake_provider.requests_for("flaky")]
    gaps = [b - a for a, b in pairwise(seen)]
    assert gaps[0] >= 1.0  # never earlier than Retry-After (server-side arrival times)
    assert gaps[1] >= calls[1].backoff_s and gaps[2] >= calls[2].backoff_s


def test_permanent_failures_are_recorded_and_do_not_stop_the_rest(study, make_endpoint, fake_provider):
    endpoint = make_endpoint(study, max_attempts=3)
    fake_provider.script([{"status": 400, "message": "prompt rejected"}], match="bad")
    fake_provider.script([{"status": 500}] * 3, match="down")
    fake_provider.script([{"malformed": True}, {"text": "recovered"}], match="garbled")
    fake_provider.script([{"empty": True}] * 3, match="silent")
    sink = Collect()
    stats = execute_units(study, units_for(endpoint, ["bad", "down", "garbled", "silent", "fine"]), sink)
    assert (stats.succeeded, stats.failed) == (2, 3)
    assert "prompt rejected" in sink.failed["u:bad"] and ProviderCall.objects.filter(unit_ref="u:bad").count() == 1
    assert (
        sink.failed["u:down"].startswith("Gave up after 3 attempts")
        and ProviderCall.objects.filter(unit_ref="u:down").count() == 3
    )
    assert "empty completion" in sink.failed["u:silent"]
    assert sink.ok["u:garbled"].text == "recovered"
    assert "not a valid response" in ProviderCall.objects.get(unit_ref="u:garbled", attempt=1).error


def test_timeouts_are_retried_then_recorded(study, make_endpoint, fake_provider):
    endpoint = make_endpoint(study, timeout_seconds=0.3, max_attempts=2)
    fake_provider.script([{"hang": 2}, {"hang": 2}], match="slow")
    sink = Collect()
    execute_units(study, units_for(endpoint, ["slow"]), sink)
    assert "Timed out" in sink.failed["u:slow"]
    assert ProviderCall.objects.filter(unit_ref="u:slow").count() == 2


def test_cancel_stops_new_units(study, make_endpoint, fake_provider):
    endpoint = make_endpoint(study, max_concurrency=2)
    fake_provider.default_delay = 0.1
    sink = Collect()
    stats = execute_units(
        study,
        units_for(endpoint, [f"p{i}" for i in range(200)]),
        sink,
        cancel_check=lambda: len(sink.ok) >= 4,
        cancel_every=0.05,
    )
    assert stats.cancelled and 4 <= stats.succeeded < 200 and stats.not_started == 200 - stats.succeeded - stats.failed
    assert len(sink.ok) == stats.succeeded and not sink.failed


def test_sink_error_becomes_a_recorded_failure(study, make_endpoint, fake_provider):
    endpoint = make_endpoint(study)
    failures = {}

    def explode(unit, result):
        raise RuntimeError("disk full")

    sink = CallbackSink(on_success=explode, on_failure=lambda unit, error: failures.setdefault(unit.unit_ref, error))
    stats = execute_units(study, units_for(endpoint, ["a"]), sink)
    assert stats.failed == 1 and "disk full" in failures["u:a"]


def test_backoff_formula():
    class E:
        backoff_base_s, backoff_max_s = 1.0, 8.0

    class Fixed:
        @staticmethod
        def uniform(a, b):
            return b

    assert [backoff_seconds(n, E, rng=Fixed) for n in (1, 2, 3, 4, 5)] == [1, 2, 4, 8, 8]
    assert backoff_seconds(1, E, retry_after=30, rng=Fixed) == pytest.approx(33.0)


def test_rate_buckets_allow_one_minute_budget_then_wait():
    import asyncio

    async def go(store):
        waits = [await store.take("t:rpm", 60, 1) for _ in range(61)]
        big = await store.take("t:tpm", 1000, 900)
        after = await store.take("t:tpm", 1000, 900)
        return waits, big, after

    waits, big, after = asyncio.run(go(LocalStore()))
    assert waits[:60] == [0.0] * 60 and 0.5 < waits[60] <= 1.0  # 61st request waits ~1 s (60/min)
    assert big == 0.0 and 40 < after <= 48  # 800 tokens short at 1000/min ≈ 48 s


@pytest.mark.django_db(transaction=True)
def test_limits_hold_across_two_runners_sharing_the_store(make_endpoint, fake_provider):
    """Two runners at once (as two workers would) never exceed the endpoint's limit together; with Redis
    configured the counters live in Redis."""
    from stereoscope.models import Study

    study = Study.objects.create(name="shared limits")
    endpoint = make_endpoint(study, max_concurrency=3)
    fake_provider.default_delay = 0.05
    results = []

    def run(tag):
        from django.db import connection

        try:
            results.append(execute_units(study, units_for(endpoint, [f"{tag}-{i}" for i in range(15)]), Collect()))
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(t,)) for t in "ab"]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert sum(r.succeeded for r in results) == 30
    assert fake_provider.max_in_flight_by_model[endpoint.model_id] == 3
    assert type(make_store()).__name__ == (
        "RedisStore" if __import__("django.conf").conf.settings.REDIS_URL else "LocalStore"
    )


@pytest.mark.django_db
def test_attempts_opened_together_wake_the_loop_once(study, make_endpoint):
    """The attempt rows written in one go are committed before any of their requests may go, and their requests
    are released with one wake-up of the event loop (not one per row: each costs the loop a turn)."""
    from django.utils import timezone

    from generation.runs.runner import _open_attempts

    endpoint = make_endpoint(study)
    released = []

    class Loop:
        def call_threadsafe(self, fn, *args):
            assert ProviderCall.objects.filter(study=study, outcome="unknown").count() == 5  # rows first
            released.append((fn, args))

    records = [
        {"unit": u, "attempt": 1, "started_at": timezone.now(), "estimate": (3, 10), "written": object()}
        for u in units_for(endpoint, [f"p{i}" for i in range(5)])
    ]
    _open_attempts(study, [("open", r["unit"], r) for r in records], Loop())
    assert len(released) == 1
    assert sorted(r["row_id"] for r in records) == sorted(
        ProviderCall.objects.filter(study=study).values_list("pk", flat=True)
    )


def record_hand_offs(runner, monkeypatch):
    """The attempt rows the caller's thread is asked to open, as a list that fills during the run."""
    handed_off = []
    real_open = runner._open_attempts
    caller = threading.current_thread()

    def recording(study, events, loop):
        if threading.current_thread() is caller:
            handed_off.extend(events)
        return real_open(study, events, loop)

    monkeypatch.setattr(runner, "_open_attempts", recording)
    return handed_off


@pytest.mark.django_db(transaction=True)
def test_outside_a_transaction_the_loop_opens_attempt_rows_itself(study, make_endpoint, fake_provider, monkeypatch):
    """A job (not inside a transaction) has its attempt rows committed by the event loop's own connection, so a
    request never waits for the caller's thread; each row still exists before its request, one row per request."""
    from generation.runs import runner

    endpoint = make_endpoint(study, max_concurrency=8)
    fake_provider.default_delay = 0.05
    handed_off = record_hand_offs(runner, monkeypatch)
    stats = execute_units(study, units_for(endpoint, [f"p{i}" for i in range(40)]), Collect())
    assert stats.succeeded == 40 and stats.attempts == 40
    assert handed_off == [], "no attempt waited for the caller's thread"
    received = sorted(int(r["attempt"]) for r in fake_provider.requests)
    assert received == sorted(ProviderCall.objects.filter(study=study).values_list("pk", flat=True))
    assert set(ProviderCall.objects.filter(study=study).values_list("outcome", flat=True)) == {"ok"}


@pytest.mark.django_db(transaction=True)
def test_the_loop_opens_attempt_rows_without_the_tests_async_allowance(
    study, make_endpoint, fake_provider, monkeypatch, caplog
):
    """As in a worker: Django refuses ORM calls from a thread running an event loop unless DJANGO_ALLOW_ASYNC_UNSAFE
    is set (the test suite sets it for Playwright). The attempt rows are still written off the caller's thread,
    several in one transaction, and nothing fails and falls back on the way (issue 36: each attempt raised, logged
    a traceback and waited for the caller's thread)."""
    import threading

    from django.db import connections

    from generation.runs import runner

    endpoint = make_endpoint(study, max_concurrency=8)
    fake_provider.default_delay = 0.05
    handed_off = record_hand_offs(runner, monkeypatch)
    units = units_for(endpoint, [f"p{i}" for i in range(40)])
    result = {}

    def as_a_worker():  # a thread with no event loop of its own, as a Celery worker's (Playwright may run one here)
        try:
            result["stats"] = execute_units(study, units, Collect())
        finally:
            connections.close_all()

    allowance = os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
    try:
        with caplog.at_level("WARNING", logger="generation.runs.runner"):
            worker = threading.Thread(target=as_a_worker)
            worker.start()
            worker.join()
    finally:
        if allowance is not None:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = allowance
    stats = result["stats"]
    assert stats.succeeded == 40 and stats.attempts == 40
    assert handed_off == [], "no attempt waited for the caller's thread"
    assert not [r for r in caplog.records if "could not write an attempt row" in r.getMessage()]
    received = sorted(int(r["attempt"]) for r in fake_provider.requests)
    assert received == sorted(ProviderCall.objects.filter(study=study).values_list("pk", flat=True))


def test_inside_a_transaction_the_caller_opens_attempt_rows(study, make_endpoint, fake_provider, monkeypatch):
    """Inside the caller's transaction (uncommitted rows another connection cannot see) the caller's thread opens
    the rows, and they are part of that transaction."""
    from generation.runs import runner

    endpoint = make_endpoint(study, max_concurrency=4)
    handed_off = record_hand_offs(runner, monkeypatch)
    caller = threading.current_thread()
    ahead = []
    real_ahead = runner._open_ahead
    monkeypatch.setattr(runner, "_open_ahead", lambda s, units: (ahead.extend(units), real_ahead(s, units))[1])
    stats = execute_units(study, units_for(endpoint, [f"p{i}" for i in range(6)]), Collect())
    assert threading.current_thread() is caller
    assert stats.succeeded == 6 and len(handed_off) + len(ahead) == 6
    received = sorted(int(r["attempt"]) for r in fake_provider.requests)
    assert received == sorted(ProviderCall.objects.filter(study=study).values_list("pk", flat=True))


@pytest.mark.django_db(transaction=True)
def test_a_chunks_first_attempt_rows_are_committed_together_before_its_requests(
    study, make_endpoint, fake_provider, monkeypatch
):
    """With no spending cap, the first attempts of the units handed out together are admitted and written in one
    transaction before any of their requests (issue 36: one transaction of 1.5-3 rows per turn of the writer cost
    the worker about 1 ms of CPU a unit); every request still names a row committed before it, one row each."""
    from generation.runs import spending

    endpoint = make_endpoint(study, max_concurrency=8)
    fake_provider.default_delay = 0.02
    admitted = []
    real_admit = spending.admit
    monkeypatch.setattr(spending, "admit", lambda *a, **k: (admitted.append(len(a[1])), real_admit(*a, **k))[1])
    stats = execute_units(study, units_for(endpoint, [f"p{i}" for i in range(40)]), Collect())
    assert stats.succeeded == 40 and stats.attempts == 40
    assert admitted == [40], "one admission (one transaction) for the 40 first attempts"
    received = sorted(int(r["attempt"]) for r in fake_provider.requests)
    assert received == sorted(ProviderCall.objects.filter(study=study).values_list("pk", flat=True))
    assert set(ProviderCall.objects.filter(study=study).values_list("outcome", flat=True)) == {"ok"}


@pytest.mark.django_db(transaction=True)
def test_rows_opened_ahead_of_requests_never_sent_are_deleted_and_uncounted(study, make_endpoint, fake_provider):
    """Cancelled with most units still queued: only the requests sent keep a row, and the ledger counts exactly
    those rows (the estimates of the rows opened ahead and never sent are taken out again)."""
    from generation.models import SpendingLedger

    endpoint = make_endpoint(study, max_concurrency=2)
    fake_provider.default_delay = 0.2
    checks = {"n": 0}

    def cancel_check():
        checks["n"] += 1
        return checks["n"] > 1

    stats = execute_units(
        study,
        units_for(endpoint, [f"p{i}" for i in range(40)]),
        Collect(),
        cancel_check=cancel_check,
        cancel_every=0.05,
    )
    assert stats.cancelled and stats.succeeded < 40
    received = sorted(int(r["attempt"]) for r in fake_provider.requests)
    rows = ProviderCall.objects.filter(study=study)
    assert received == sorted(rows.values_list("pk", flat=True)) and len(received) < 40
    assert endpoint.connection_id
    assert sum(SpendingLedger.objects.filter(study=study).values_list("calls", flat=True)) == rows.count()
