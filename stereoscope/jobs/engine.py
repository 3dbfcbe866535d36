"""One engine for every long job: plan units into chunks, lease chunks to any number of workers, finish.

A job kind (generation run, judge round, ...) says only what is its own: which units are pending, how to load
and run them, how its final status reads. Everything else is here: start, cancel, resume, retry failed, finish;
chunk leases taken with one conditional UPDATE (safe on PostgreSQL and SQLite) and renewed with each progress
tick; progress, rate and ETA over all workers; and self-healing: a worker's heartbeat sweeps for jobs whose
workers died (their lease expired) and queues them on its own queue, so no one has to press Resume.
"""

import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Collection, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, NotRequired, Protocol, TypedDict, TypeVar

from django.conf import settings
from django.db import transaction
from django.db.models import F, Q, QuerySet, Sum
from django.db.models.signals import post_delete
from django.utils import timezone

from .. import worker_heartbeat
from ..outages import is_infrastructure_error
from ..user_types import Actor
from .models import ACTIVE, TERMINAL, ChunkStatus, Job, JobChunk, JobStatus

log = logging.getLogger(__name__)

# A unit is the kind's own object (a model row or a small class of its own); the engine only tags it with the
# chunk it came from (`unit._job_chunk`), so it is untyped on purpose.
Unit = Any
# A unit's key as a chunk stores it in JSON (a row's pk, or a key of the kind's own): the engine only passes it on.
UnitKey = Any
# The JSON value of a job's `progress` (a JSONField).
Progress = dict[str, Any]


class RunStats(Protocol):
    """What the engine reads from the stats a kind's `run` returns (UnitStats or the kind's own, richer class)."""

    total: int
    succeeded: int
    failed: int
    attempts: int
    elapsed_s: float
    cancelled: bool


CancelCheck = Callable[[], bool]
ProgressTick = Callable[[RunStats, int], None]  # (stats so far, units in flight)
ProgressCallback = Callable[[RunStats, int, int], object]  # (stats so far, units in flight, total)


class WorkerProgress(TypedDict):
    """One worker's entry in a job's progress["workers"]."""

    in_flight: int
    done: int
    seen: float
    worker: str
    rate: float
    attempts: NotRequired[int]


class _CancelSeen(TypedDict):
    t: float  # when the cancel flag was last read (time.monotonic)
    v: bool  # what it said


_KINDS: dict[str, "JobKind"] = {}


class JobError(ValueError):
    """A job cannot do what was asked; the message says why."""


def lease_seconds() -> float:
    return float(getattr(settings, "JOB_LEASE_SECONDS", 60))


def chunk_size() -> int:
    return int(getattr(settings, "JOB_CHUNK_SIZE", 100))


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def new_token() -> str:
    """A fresh lease token; inside a Celery worker it names the worker instance (see stereoscope.worker_heartbeat),
    so the lease is free as soon as that worker's heartbeat stops."""
    instance = worker_heartbeat.instance()
    return uuid.uuid4().hex + (f"{worker_heartbeat.INSTANCE_MARK}{instance}" if instance else "")


def _orphaned(now: datetime, live: set[str] | None = None) -> Q:
    """Rows whose lease a dead worker holds (its heartbeat stopped): free now, not when the lease expires."""
    return worker_heartbeat.orphaned_lease_q(now, lease_seconds(), live)


def _unheld(now: datetime, live: set[str] | None = None) -> Q:
    """A job row no live executor holds."""
    return Q(lease_expires_at__lt=now) | Q(lease_expires_at=None) | _orphaned(now, live)


class JobKind:
    """What one kind of job is. Subclass it in the app and `register` one instance."""

    name = ""  # e.g. "generation.run"; stored on chunks
    # the concrete Job model; every kind sets it, so the None of the base class is never read
    model: type[Job] = None  # type: ignore[assignment]
    task_name = ""  # the Celery task that calls `execute(kind, pk)`
    label = "job"  # for messages: "run", "round"
    units_label = "units"
    error: type[Exception] = JobError
    chunk_size: int | None = None  # None: settings.JOB_CHUNK_SIZE

    def enqueue(self, job: Job) -> None:
        """Send one task for the job (the app may route it; tests replace it)."""
        from stereoscope.celery import app

        app.send_task(self.task_name, args=[job.pk])

    def pending_keys(self, job: Job) -> Iterable[UnitKey]:
        """The keys of every unit that still needs doing, in order."""
        raise NotImplementedError

    def load_units(self, job: Job, keys: list[UnitKey]) -> Iterable[Unit]:
        """The runnable units for these keys, leaving out any that are no longer pending."""
        raise NotImplementedError

    def run(self, job: Job, source: "ChunkSource", cancel_check: CancelCheck, progress: ProgressTick) -> RunStats:
        """Run units from `source` until it is empty; returns stats with .cancelled, .succeeded, .failed."""
        raise NotImplementedError

    def refuse(self, job: Job) -> str | None:
        """A reason not to run the job at all (checked when a worker starts on it), or None."""
        return None

    def hold(self, job: Job) -> str:
        """A reason the job must wait before its next call (a connection waiting for approval, a spending cap
        reached), or "". Checked when a worker starts on it and by the sweep; the job resumes by itself once the
        reason clears."""
        return ""

    def next_pass(self, job: Job) -> bool:
        """After every chunk is done: make more units pending (e.g. re-ask) and return True, or return False."""
        return False

    def reset_failed(self, job: Job) -> int:
        """Failed units back to pending; returns how many."""
        raise NotImplementedError

    def waits_elsewhere(self, job: Job) -> bool:
        """True while the job waits on something outside the engine with no chunk pending (e.g. batches at a
        provider, which a poller collects): the sweep leaves it alone."""
        return False

    def outcome(self, job: Job) -> tuple[str, str]:
        """(status, message) once no chunk is pending and the job was not cancelled."""
        return JobStatus.COMPLETED, ""

    def progress_extra(self, job_id: int) -> Progress:
        """Figures of the kind's own to add to the job's progress (e.g. done and total)."""
        return {}

    def on_finished(self, job_id: int, status: str) -> None:
        """Called once the job's status is written (e.g. draw a sample of a completed run)."""

    def get(self, job_id: int) -> Job:
        return self.model.objects.get(pk=job_id)

    def warm_up(self) -> None:
        """Called once when a worker process starts, before it takes work: load what the kind's first unit would
        otherwise load inside a job's time (e.g. provider SDKs, which take a second to import)."""

    def units_per_chunk(self, job: Job) -> int:
        """How many units one chunk of this job holds (a job whose units are quick can take bigger chunks)."""
        return self.chunk_size or chunk_size()


@dataclass
class UnitStats:
    """What a kind's `run` returns when it has no richer stats of its own (the engine reads these fields)."""

    total: int = 0
    succeeded: int = 0
    failed: int = 0
    attempts: int = 0
    elapsed_s: float = 0.0
    cancelled: bool = False
    held: str = ""


K = TypeVar("K", bound=JobKind)


def register(kind: K) -> K:
    _KINDS[kind.name] = kind
    # chunks name their job by kind and id (no foreign key): a deleted job, alone or with its study, takes them along
    post_delete.connect(
        lambda instance, **_: forget(kind, instance.pk),
        sender=kind.model,
        weak=False,
        dispatch_uid=f"job-chunks-{kind.name}",
    )
    return kind


def kinds() -> list[JobKind]:
    return list(_KINDS.values())


def get_kind(name: str) -> JobKind:
    return _KINDS[name]


def warm_up() -> None:
    """Warm every registered kind up (a worker calls this as it starts); a kind that fails to is logged, not fatal."""
    for kind in kinds():
        try:
            kind.warm_up()
        except Exception:
            log.warning("warming up %s failed", kind.name, exc_info=True)


def _chunks(kind: JobKind, job_id: int) -> QuerySet[JobChunk]:
    return JobChunk.objects.filter(kind=kind.name, job_id=job_id)


def _leasable(now: datetime, live: set[str] | None = None) -> Q:
    return Q(status=ChunkStatus.PENDING) & (Q(lease_token="") | Q(lease_expires_at__lt=now) | _orphaned(now, live))


def is_live(job: Job) -> bool:
    """Some executor is on the job right now (its lease has not expired, and its worker's heartbeat goes on)."""
    now = timezone.now()
    return (
        job.status == JobStatus.RUNNING
        and bool(job.lease_token)
        and job.lease_expires_at is not None
        and job.lease_expires_at > now
        and not worker_heartbeat.lease_is_orphaned(job.lease_token, job.lease_expires_at, now, lease_seconds())
    )


def plan_chunks(kind: JobKind, job: Job) -> int:
    """Cut the job's pending units into fresh chunks (replacing any old ones). Returns the number of units."""
    keys = list(kind.pending_keys(job))
    size = kind.units_per_chunk(job)
    _chunks(kind, job.pk).delete()
    JobChunk.objects.bulk_create(
        [
            JobChunk(kind=kind.name, job_id=job.pk, number=n, units=keys[i : i + size], size=len(keys[i : i + size]))
            for n, i in enumerate(range(0, len(keys), size), 1)
        ],
        batch_size=1000,
    )
    return len(keys)


J = TypeVar("J", bound=Job)
Updates = dict[str, Any]  # the keyword arguments of one QuerySet.update of a job row


# -- services -------------------------------------------------------------------------------------------------------


def queue(kind: JobKind, job: Job, actor: Actor = None, message: str = "") -> None:
    """Plan the job's chunks and mark it queued (call inside the app's transaction, after its units exist).
    The queue gets one lease period to deliver before the sweep steps in."""
    plan_chunks(kind, job)
    updates: Updates = dict(
        status=JobStatus.QUEUED,
        cancel_requested=False,
        finished_at=None,
        message=message,
        lease_token="",
        lease_expires_at=timezone.now() + timedelta(seconds=lease_seconds()),
        progress={},
    )
    if actor is not None and getattr(actor, "pk", None):
        updates["started_by"] = actor
    kind.model.objects.filter(pk=job.pk).update(**updates)


def launch(kind: JobKind, job: Job) -> None:
    """Send the job's tasks: one per chunk up to settings.JOB_FANOUT, so idle workers join in."""
    fanout = int(getattr(settings, "JOB_FANOUT", 4))
    n = min(fanout, max(1, _chunks(kind, job.pk).filter(status=ChunkStatus.PENDING).count()))
    for _ in range(n):
        kind.enqueue(job)


def start(kind: JobKind, job: J, actor: Actor = None, message: str = "") -> J:
    with transaction.atomic():
        queue(kind, job, actor, message)
    launch(kind, job)
    job.refresh_from_db()
    return job


def resume(kind: JobKind, job: J, actor: Actor = None) -> J:
    """Queue the job again; only what is missing is done. Pressing Resume says the old workers are gone, so their
    chunks are re-planned at once instead of waiting for their leases to expire."""
    return start(kind, job, actor, "Resumed.")


def retry_failed(kind: JobKind, job: Job, actor: Actor = None, *, then: Callable[[int], object] | None = None) -> int:
    """Failed units go back to pending (their attempts stay on record), then the job resumes: through the engine, or
    through `then(n)` when the app resumes its own way (checks of its own, its activity line)."""
    n = kind.reset_failed(job)
    if n == 0:
        raise kind.error(f"No failed {kind.units_label} to retry.")
    if then is None:
        resume(kind, job, actor)
    else:
        then(n)
    return n


_cancel_hooks: list[Callable[[str, int], object]] = []


def on_cancel(hook: Callable[[str, int], object]) -> None:
    """Register `hook(kind_name, job_id)`, called whenever a job is cancelled: generation registers the cancelling of
    the job's open provider batches, so no app writes that pair itself."""
    if hook not in _cancel_hooks:
        _cancel_hooks.append(hook)


def cancel(kind: JobKind, job: J) -> J:
    """Ask every worker of the job to stop (they check every half second); a job nobody runs stops at once. Then the
    cancel hooks run (open provider batches are cancelled)."""
    if job.status in (JobStatus.COMPLETED, JobStatus.CANCELLED):
        raise kind.error(f"The {kind.label} is already {job.status}.")
    updates: Updates = {"cancel_requested": True}
    if job.status in (JobStatus.DRAFT, JobStatus.QUEUED) or not is_live(job):
        updates.update(
            status=JobStatus.CANCELLED,
            finished_at=timezone.now(),
            message="Cancelled.",
            lease_token="",
            lease_expires_at=None,
        )
        _chunks(kind, job.pk).filter(status=ChunkStatus.PENDING).update(lease_token="", lease_expires_at=None)
    kind.model.objects.filter(pk=job.pk).update(**updates)
    for hook in _cancel_hooks:
        hook(kind.name, job.pk)
    job.refresh_from_db()
    return job


def fail(kind: JobKind, job_id: int, message: str) -> None:
    """Stop the job as failed (e.g. a unit it cannot do without): every worker of it stops at its next unit, and
    retry starts it again. Its chunks' leases are released."""
    kind.model.objects.filter(pk=job_id, status__in=ACTIVE).update(
        status=JobStatus.FAILED,
        message=message[:2000],
        finished_at=timezone.now(),
        lease_token="",
        lease_expires_at=None,
    )
    _chunks(kind, job_id).filter(status=ChunkStatus.PENDING).update(lease_token="", lease_expires_at=None)


def wait(kind: JobKind, job_id: int, reason: str, need: object = None) -> None:
    """Park an active job until `reason` clears: no worker holds it, its chunks stay pending, and the sweep (or the
    change that clears the reason) queues it again. Nothing fails and nothing is lost. `need` (e.g. the cost of
    the call that did not fit under a cap) is kept in its progress for the kind's `hold` to weigh."""
    kind.model.objects.filter(pk=job_id, status__in=ACTIVE).update(
        status=JobStatus.WAITING,
        message=reason[:2000],
        lease_token="",
        lease_expires_at=None,
        progress={"waiting_need": str(need)} if need is not None else {},
    )
    _chunks(kind, job_id).filter(status=ChunkStatus.PENDING).update(lease_token="", lease_expires_at=None)
    log.info("%s %s waits: %s", kind.name, job_id, reason)


def wake_waiting(kind_names: Collection[str] | None = None) -> list[tuple[str, int]]:
    """Queue again every waiting job whose reason has cleared. Returns [(kind name, job id)] queued."""
    woken: list[tuple[str, int]] = []
    for kind in kinds():
        if kind_names and kind.name not in kind_names:
            continue
        for job in kind.model.objects.filter(status=JobStatus.WAITING, cancel_requested=False)[:200]:
            try:
                reason = kind.hold(job)
            except Exception:  # a broken check must not stop the sweep of other jobs
                log.warning("checking %s %s failed", kind.name, job.pk, exc_info=True)
                continue
            if reason:
                if reason != job.message:
                    kind.model.objects.filter(pk=job.pk, status=JobStatus.WAITING).update(message=reason[:2000])
                continue
            claimed = kind.model.objects.filter(pk=job.pk, status=JobStatus.WAITING).update(
                status=JobStatus.QUEUED,
                message="Resumed: the reason to wait has cleared.",
                lease_expires_at=timezone.now() + timedelta(seconds=lease_seconds()),
            )
            if claimed:
                launch(kind, job)
                woken.append((kind.name, job.pk))
    return woken


def forget(kind: JobKind, job_id: int) -> None:
    """Delete a job's chunks (call when the job itself is deleted)."""
    _chunks(kind, job_id).delete()


def finish(kind: JobKind, job_id: int, cancelled: bool = False) -> None:
    """Set the job's final status from its units (or say what is left)."""
    job = kind.get(job_id)
    now = timezone.now()
    updates: Updates = {"lease_token": "", "lease_expires_at": None}
    pending = _chunks(kind, job_id).filter(status=ChunkStatus.PENDING).exists()
    if cancelled or job.cancel_requested:
        updates.update(
            status=JobStatus.CANCELLED,
            finished_at=now,
            message=f"Cancelled; resume does the missing {kind.units_label}.",
        )
    elif not pending:
        status, message = kind.outcome(job)
        updates.update(status=status, message=message)
        if status in TERMINAL:
            updates["finished_at"] = now
    else:
        updates.update(message=f"Stopped with {kind.units_label} left; resume to do them.")
    kind.model.objects.filter(pk=job_id).update(**updates)
    kind.on_finished(job_id, updates.get("status", job.status))


# -- the executor ---------------------------------------------------------------------------------------------------


class ChunkSource:
    """Hands the runner one leased chunk of units at a time; marks a chunk done when all its units are."""

    def __init__(self, kind: JobKind, job: Job, token: str, cancel_check: CancelCheck) -> None:
        self.kind, self.job, self.token = kind, job, token
        self.cancel_check = cancel_check
        self.open: dict[int, int] = {}  # chunk pk -> units not finished yet
        self.finished_n: dict[int, int] = {}  # chunk pk -> units finished
        self.worker = worker_name()

    def lease_one(self) -> JobChunk | None:
        now = timezone.now()
        expires = now + timedelta(seconds=lease_seconds())
        live = worker_heartbeat.live_instances(now)
        for _ in range(20):
            candidates = list(
                _chunks(self.kind, self.job.pk)
                .filter(_leasable(now, live))
                .order_by("number")
                .values_list("pk", flat=True)[:8]
            )
            if not candidates:
                return None
            for pk in candidates:
                got = JobChunk.objects.filter(_leasable(now, live), pk=pk).update(
                    lease_token=self.token, lease_expires_at=expires, worker=self.worker[:255]
                )
                if got:
                    return JobChunk.objects.get(pk=pk)
        return None

    def take(self) -> list[Unit]:
        while True:
            if self.cancel_check():
                return []
            chunk = self.lease_one()
            if chunk is None:
                return []
            JobChunk.objects.filter(pk=chunk.pk).update(leased_times=chunk.leased_times + 1)
            units = list(self.kind.load_units(self.job, chunk.units))
            if not units:
                self.mark_done(chunk.pk)
                continue
            self.open[chunk.pk] = len(units)
            self.finished_n[chunk.pk] = chunk.size - len(units)
            for unit in units:
                unit._job_chunk = chunk.pk
            return units

    def finished(self, unit: Unit) -> None:
        pk = getattr(unit, "_job_chunk", None)
        unit._job_chunk = None
        if pk is None or pk not in self.open:
            return
        self.open[pk] -= 1
        self.finished_n[pk] += 1
        if self.open[pk] == 0:
            self.mark_done(pk)

    def mark_done(self, pk: int) -> None:
        self.open.pop(pk, None)
        JobChunk.objects.filter(pk=pk, lease_token=self.token).update(
            status=ChunkStatus.DONE, done=self.finished_n.pop(pk, 0), finished_at=timezone.now()
        )

    def renew(self) -> None:
        expires = timezone.now() + timedelta(seconds=lease_seconds())
        for pk in list(self.open):
            JobChunk.objects.filter(pk=pk, lease_token=self.token, status=ChunkStatus.PENDING).update(
                lease_expires_at=expires, done=self.finished_n.get(pk, 0)
            )

    def release(self) -> None:
        """Give back the chunks still held (cancel, error): another worker or a resume takes them at once."""
        for pk in list(self.open):
            JobChunk.objects.filter(pk=pk, lease_token=self.token, status=ChunkStatus.PENDING).update(
                lease_token="", lease_expires_at=None, done=self.finished_n.get(pk, 0)
            )
        self.open.clear()


def _tick(kind: JobKind, job_id: int, token: str, stats: RunStats, in_flight: int) -> None:
    """Renew the job's lease and write progress over all workers (each worker keeps its own entry)."""
    now = timezone.now()
    wall = time.time()
    window = lease_seconds()
    Model = kind.model
    with transaction.atomic():
        got = Model.objects.filter(pk=job_id, status=JobStatus.RUNNING).update(
            lease_token=token, lease_expires_at=now + timedelta(seconds=window)
        )  # also locks the row
        if not got:
            return
        progress: Progress = Model.objects.filter(pk=job_id).values_list("progress", flat=True).get() or {}
        workers: dict[str, WorkerProgress] = {
            k: v for k, v in (progress.get("workers") or {}).items() if v.get("seen", 0) > wall - window
        }
        done = stats.succeeded + stats.failed
        workers[token] = {
            "in_flight": in_flight,
            "done": done,
            "seen": wall,
            "worker": worker_name(),
            "rate": round(stats.succeeded / stats.elapsed_s, 3) if stats.elapsed_s else 0.0,
        }
        remaining = remaining_units(kind, job_id)
        workers[token]["attempts"] = stats.attempts
        progress.update(kind.progress_extra(job_id))
        rate = sum(w["rate"] for w in workers.values())
        progress.update(
            in_flight=sum(w["in_flight"] for w in workers.values()),
            rate=round(rate, 2),
            eta_s=round(remaining / rate) if rate else None,
            remaining=remaining,
            workers=workers,
            attempts=sum(w.get("attempts", 0) for w in workers.values()),
            heartbeat=now.isoformat(),
        )
        Model.objects.filter(pk=job_id).update(progress=progress)


def execute(kind: JobKind | str, job_id: int, progress_callback: ProgressCallback | None = None) -> RunStats | None:
    """Work on a job in this process until no chunk is left to lease; finish it when all are done.
    Returns the stats of this worker's last pass, or None when there was nothing for it to do."""
    if isinstance(kind, str):
        kind = get_kind(kind)
    Model = kind.model
    job = kind.get(job_id)
    if job.cancel_requested and job.status != JobStatus.CANCELLED:
        finish(kind, job_id, cancelled=True)
        return None
    if job.status not in ACTIVE:
        return None
    refused = kind.refuse(job)
    if refused:
        Model.objects.filter(pk=job_id).update(
            status=JobStatus.FAILED, message=refused, lease_token="", lease_expires_at=None, finished_at=timezone.now()
        )
        return None
    held = kind.hold(job)
    if held:
        wait(kind, job_id, held)
        return None
    now = timezone.now()
    if not _chunks(kind, job_id).filter(_leasable(now)).exists():
        if not _chunks(kind, job_id).filter(status=ChunkStatus.PENDING).exists():
            return _end_of_pass(kind, job_id, None, progress_callback)
        log.info("%s %s: every chunk is held by another worker", kind.name, job_id)
        return None
    token = new_token()
    Model.objects.filter(pk=job_id, status__in=ACTIVE).update(
        status=JobStatus.RUNNING,
        started_at=job.started_at or now,
        finished_at=None,
        lease_token=token,
        lease_expires_at=now + timedelta(seconds=lease_seconds()),
    )
    job = kind.get(job_id)
    return _run_passes(kind, job, token, progress_callback)


def _run_passes(kind: JobKind, job: Job, token: str, progress_callback: ProgressCallback | None) -> RunStats | None:
    Model = kind.model
    last_cancel: _CancelSeen = {"t": 0.0, "v": False}

    def cancel_check() -> bool:
        if time.monotonic() - last_cancel["t"] >= 0.5:
            last_cancel["t"] = time.monotonic()
            last_cancel["v"] = Model.objects.filter(pk=job.pk, cancel_requested=True).exists()
        return last_cancel["v"]

    source = ChunkSource(kind, job, token, cancel_check)

    def progress(stats: RunStats, in_flight: int) -> None:
        source.renew()
        _tick(kind, job.pk, token, stats, in_flight)
        if progress_callback:
            progress_callback(stats, in_flight, stats.total)

    try:
        stats = kind.run(job, source, cancel_check, progress)
    except Exception as exc:
        if is_infrastructure_error(exc):
            return _pause_for_outage(kind, job.pk, source, exc)
        log.exception("%s %s stopped", kind.name, job.pk)
        source.release()
        Model.objects.filter(pk=job.pk).update(
            status=JobStatus.FAILED, message=f"Stopped: {exc}", lease_token="", lease_expires_at=None
        )
        raise
    source.release()
    if Model.objects.filter(pk=job.pk, status=JobStatus.FAILED).exists():  # `fail` stopped it: leave it so
        return stats
    held = getattr(stats, "held", "")
    if held and not stats.cancelled and not Model.objects.filter(pk=job.pk, cancel_requested=True).exists():
        wait(kind, job.pk, held, getattr(stats, "held_need", None))
        return stats
    if stats.cancelled or Model.objects.filter(pk=job.pk, cancel_requested=True).exists():
        finish(kind, job.pk, cancelled=True)
        return stats
    return _end_of_pass(kind, job.pk, stats, progress_callback)


def _pause_for_outage(kind: JobKind, job_id: int, source: ChunkSource, exc: BaseException) -> RunStats | None:
    """A service (database, Redis, broker) went away under this worker: nothing failed. Its chunks go back and the
    job stays active with its lease expired, so a worker's sweep queues it again once the service is back; the
    units not done are still pending. When the database itself is away, the leases simply expire."""
    log.warning("%s %s paused: a service is away (%s: %s)", kind.name, job_id, type(exc).__name__, exc)
    try:
        source.release()
        if not _chunks(kind, job_id).filter(status=ChunkStatus.PENDING).exists():  # all done: finish it now
            return _end_of_pass(kind, job_id, None, None)
        kind.model.objects.filter(pk=job_id, status__in=ACTIVE).update(
            lease_token="",
            lease_expires_at=timezone.now(),
            message=f"Paused: a service was away ({type(exc).__name__}); it goes on by itself when it is back.",
        )
    except Exception:
        log.warning("%s %s: could not give its chunks back; their leases expire", kind.name, job_id, exc_info=True)
    return None


def _end_of_pass(
    kind: JobKind, job_id: int, stats: RunStats | None, progress_callback: ProgressCallback | None
) -> RunStats | None:
    """No chunk left for this worker. If none is pending at all, one worker (the row lock decides) starts the next
    pass or finishes the job; chunks still held by others are theirs, or the sweep's once their lease expires."""
    Model = kind.model
    with transaction.atomic():
        Model.objects.filter(pk=job_id).update(lease_expires_at=F("lease_expires_at"))  # locks the row
        job = kind.get(job_id)
        if job.status not in ACTIVE or _chunks(kind, job_id).filter(status=ChunkStatus.PENDING).exists():
            return stats
        more = not job.cancel_requested and kind.next_pass(job) and plan_chunks(kind, job) > 0
        if not more:
            finish(kind, job_id)
            return stats
    if more:
        token = new_token()
        Model.objects.filter(pk=job_id).update(lease_token=token)
        return _run_passes(kind, kind.get(job_id), token, progress_callback)


# -- self-healing ---------------------------------------------------------------------------------------------------


def sweep(queue_name: str | None = None) -> list[tuple[str, int]]:
    """Queue, on `queue_name`, every active job nobody works on (its lease expired, or its worker's heartbeat
    stopped) that has chunks to lease, or that has no chunk pending at all and waits on nothing else (a worker died
    before it finished the job). A conditional UPDATE of the job's lease claims it, so among many sweeping workers
    one queues it. Returns [(kind name, job id)] queued."""
    from stereoscope.celery import app

    now = timezone.now()
    live = worker_heartbeat.live_instances(now)
    queued: list[tuple[str, int]] = []
    for kind in kinds():
        stale = kind.model.objects.filter(status__in=ACTIVE, cancel_requested=False).filter(_unheld(now, live))
        for job_id, token in stale.values_list("pk", "lease_token")[:50]:
            if not _chunks(kind, job_id).filter(_leasable(now, live)).exists():
                # no chunk to lease: worth a task only when an executor took the job (its token is still there,
                # `finish` clears it) and died before it finished it, and nothing else will finish it
                if not token or _chunks(kind, job_id).filter(status=ChunkStatus.PENDING).exists():
                    continue
                if kind.waits_elsewhere(kind.get(job_id)):
                    continue
            claimed = (
                kind.model.objects.filter(pk=job_id)
                .filter(_unheld(now, live))
                .update(lease_token="", lease_expires_at=now + timedelta(seconds=lease_seconds()))
            )
            if claimed:
                options = {"queue": queue_name} if queue_name else {}
                app.send_task(kind.task_name, args=[job_id], **options)
                log.warning("%s %s had no live worker; queued again", kind.name, job_id)
                queued.append((kind.name, job_id))
    queued.extend(wake_waiting())
    return queued


def remaining_units(kind: JobKind, job_id: int) -> int:
    """Units of pending chunks not yet done (as of the workers' last progress tick)."""
    left = _chunks(kind, job_id).filter(status=ChunkStatus.PENDING).aggregate(size=Sum("size"), done=Sum("done"))
    return (left["size"] or 0) - (left["done"] or 0)


def chunk_counts(kind: JobKind, job_id: int) -> dict[str, int]:
    """{"pending": n, "done": n, "leased": n} of a job's chunks (for pages and tests)."""
    now = timezone.now()
    chunks = _chunks(kind, job_id)
    return {
        "pending": chunks.filter(status=ChunkStatus.PENDING).count(),
        "done": chunks.filter(status=ChunkStatus.DONE).count(),
        "leased": chunks.filter(status=ChunkStatus.PENDING, lease_expires_at__gte=now).exclude(lease_token="").count(),
    }
