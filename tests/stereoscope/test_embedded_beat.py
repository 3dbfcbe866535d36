"""The beat that `celery worker --beat` forks (what `serve` starts) ends when its worker is killed. It used to live
on as an orphan: `serve` restarted the killed worker with a beat of its own, so periodic tasks (polling provider
batches) were sent twice, and every test run that killed such a worker left one process behind."""

import os
import signal
import time
from pathlib import Path

import pytest

from stereoscope.testing.workers import CeleryProcesses, wait_for
from tests.conftest import subprocess_database_url

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def children_of(pid):
    """Process ids whose parent is `pid` (from /proc)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def alive(pid):
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def test_the_embedded_beat_ends_with_its_killed_worker(tmp_path):
    from django.conf import settings

    with CeleryProcesses(
        broker=settings.CELERY_BROKER_URL, database_url=subprocess_database_url(), log_dir=tmp_path
    ) as celery:
        worker = celery.start_worker("beat-q", beat_schedule=tmp_path / "beat-schedule")
        celery.wait_ready([worker], timeout=90)
        beats = wait_for(lambda: children_of(worker.pid), timeout=60)
        assert beats, f"the worker forked no beat: {celery.log(worker)[-2000:]}"
        try:
            os.kill(worker.pid, signal.SIGKILL)  # as the out-of-memory killer would
            worker.wait(timeout=10)
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline and any(map(alive, beats)):
                time.sleep(0.2)
            assert not any(map(alive, beats)), "the beat outlived its killed worker"
        finally:
            for pid in beats:
                if alive(pid):
                    os.kill(pid, signal.SIGKILL)
