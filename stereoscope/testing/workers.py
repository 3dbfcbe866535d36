"""Celery worker (and beat) processes for the worker tests and the benchmarks: the one launcher they share.

    with CeleryProcesses(database_url=..., broker=..., concurrency=16, log_dir=tmp) as celery:
        workers = celery.start_workers(3, queue)   # solo pool, hostnames <queue>-<n>@<host>
        celery.wait_ready(workers)                 # until each has written its heartbeat row
        ...
        celery.kill(workers[0])                    # SIGKILL, as a crash would
    # leaving the block stops every process still running (SIGTERM, then SIGKILL after a grace period)

Each process logs to its own file in `log_dir` (a pipe would fill and block a busy worker); `log(process)` reads it.
The processes inherit this process's environment without CELERY_TASK_ALWAYS_EAGER, plus what the arguments say, and
skip Django's system checks at start (CELERY_SKIP_CHECKS: they import every URL module and view, about 3 s of CPU
per worker here, for settings this process already uses).
Only the standard library is imported here, and Django (for the heartbeat rows) only inside `wait_ready`.
"""

import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
HEARTBEAT_SECONDS = 0.5  # fast heartbeats: readiness and /healthz see a worker within a second


def wait_for(predicate, timeout=60, interval=0.25):
    """The first truthy value of `predicate()` within `timeout` seconds, else None."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return None


class WorkerStartError(RuntimeError):
    """A worker exited or did not write its heartbeat in time; the message ends with its log."""


def child_environment(env=None, *, broker=None, database_url=None, concurrency=None):
    """The environment of the Celery processes: this one's, minus eager tasks, plus the given settings."""
    merged = {k: v for k, v in os.environ.items() if k != "CELERY_TASK_ALWAYS_EAGER"}
    merged["WORKER_HEARTBEAT_SECONDS"] = str(HEARTBEAT_SECONDS)
    merged["CELERY_SKIP_CHECKS"] = "1"  # Django's system checks: this process has the same settings
    if broker:
        merged["CELERY_BROKER_URL"] = broker
    if database_url:
        merged["DATABASE_URL"] = database_url
    if concurrency:
        merged["JOB_WORKER_CONCURRENCY"] = str(concurrency)  # concurrent calls inside one worker process
    merged.update({k: str(v) for k, v in (env or {}).items()})
    return merged


class CeleryProcesses:
    """Celery processes started with one environment; stopped together when the `with` block ends."""

    def __init__(
        self, *, env=None, broker=None, database_url=None, concurrency=None, log_dir=None, loglevel="INFO", host="test"
    ):
        self._tmp = None if log_dir else tempfile.TemporaryDirectory(prefix="sc-celery-")
        self.log_dir = Path(log_dir or self._tmp.name)
        self.loglevel = loglevel
        self.host = host
        self.processes = []
        self._env = (env, broker, database_url, concurrency)

    @property
    def env(self):
        env, broker, database_url, concurrency = self._env
        return child_environment(env, broker=broker, database_url=database_url, concurrency=concurrency)

    def _start(self, name, args):
        log_path = self.log_dir / f"{name}.log"
        with open(log_path, "w") as log:
            process = subprocess.Popen(
                [sys.executable, "-m", "celery", "-A", "stereoscope", *args, "--loglevel", self.loglevel],
                cwd=ROOT,
                env=self.env,
                stdout=log,
                stderr=subprocess.STDOUT,
                text=True,
            )
        process.name, process.log_path, process.hostname = name, log_path, None
        self.processes.append(process)
        return process

    def start_worker(self, queue, hostname=None, beat_schedule=None):
        """One worker (solo pool) consuming only `queue`; its hostname defaults to <queue>-<n>@<host>. With
        `beat_schedule` (a file path) it also runs Celery beat, as `serve`'s worker does (`--beat`: a forked child)."""
        n = sum(1 for p in self.processes if p.hostname)
        hostname = hostname or f"{queue}-{n}@{self.host}"
        args = ["worker", "--pool", "solo", "-Q", queue, "--hostname", hostname, "--without-mingle", "--without-gossip"]
        if beat_schedule:
            args += ["--beat", "--schedule", str(beat_schedule)]
        process = self._start(hostname.replace("@", "-at-"), args)
        process.hostname = hostname
        return process

    def start_workers(self, n, queue):
        return [self.start_worker(queue) for _ in range(n)]

    def start_beat(self, schedule):
        """Celery beat (periodic tasks) with its schedule file at `schedule`."""
        return self._start("beat", ["beat", "-s", str(schedule)])

    def wait_ready(self, workers=None, timeout=90):
        """Wait until every worker has written its heartbeat row (Django must be set up in this process)."""
        from stereoscope.models import WorkerHeartbeat

        workers = workers if workers is not None else [p for p in self.processes if p.hostname]
        names = {w.hostname for w in workers}
        deadline = time.monotonic() + timeout
        while True:
            seen = set(WorkerHeartbeat.objects.filter(hostname__in=names).values_list("hostname", flat=True))
            if seen == names:
                return workers
            dead = [w for w in workers if w.poll() is not None]
            if dead or time.monotonic() > deadline:
                late = dead[0] if dead else next(w for w in workers if w.hostname not in seen)
                state = f"exited ({late.returncode})" if dead else f"no heartbeat within {timeout} s"
                raise WorkerStartError(f"worker {late.hostname}: {state}; its log ends:\n{self.log(late)[-3000:]}")
            time.sleep(0.1)

    def log(self, process):
        return Path(process.log_path).read_text(errors="replace")

    def kill(self, process, timeout=30):
        """SIGKILL, as an out-of-memory kill or a pulled plug would; waits until it is gone."""
        if process.poll() is None:
            os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout)

    def stop(self, processes=None, timeout=30):
        """SIGTERM to each process still running (a warm shutdown), SIGKILL to any still there after `timeout`."""
        processes = list(self.processes if processes is None else processes)
        for process in processes:
            if process.poll() is None:
                process.terminate()
        deadline = time.monotonic() + timeout
        for process in processes:
            try:
                process.wait(max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()
        if self._tmp is not None:
            self._tmp.cleanup()
