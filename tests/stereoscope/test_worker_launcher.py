"""Worker tests and benchmarks start Celery through one launcher, stereoscope/testing/workers.py: no other file in
tests/ or benchmarks/ builds a `celery ... worker` / `celery ... beat` command line of its own."""

import re
from pathlib import Path

import pytest

from stereoscope.testing.workers import CeleryProcesses, child_environment

ROOT = Path(__file__).resolve().parents[2]
LAUNCHER = ROOT / "stereoscope" / "testing" / "workers.py"
COMMAND = re.compile(r"""["']celery["']\s*,[^\n]*|["'](worker|beat)["']\s*,\s*["']--""")


def own_launchers(text):
    return [m.group(0) for m in COMMAND.finditer(text)]


def test_the_rule_sees_a_command_line():
    assert own_launchers('cmd = [sys.executable, "-m", "celery", "-A", "stereoscope", "worker"]')
    assert own_launchers('        "worker",\n        "--pool",')
    assert not own_launchers("from stereoscope.testing.workers import CeleryProcesses\ncelery.start_workers(2, q)")


def test_worker_tests_and_benchmarks_use_the_one_launcher():
    found = []
    for folder in ("tests", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if path == Path(__file__).resolve():
                continue
            text = path.read_text(encoding="utf-8")
            found += [f"{path.relative_to(ROOT)}: {hit}" for hit in own_launchers(text)]
    assert found == []
    assert own_launchers(LAUNCHER.read_text(encoding="utf-8")), "the launcher itself builds the command"
    for name in (
        "stereoscope/test_celery_worker.py",
        "generation/runs/test_scale_out.py",
        "generation/runs/test_batch_worker.py",
    ):
        assert "celery_processes" in (ROOT / "tests" / name).read_text(encoding="utf-8"), name
    assert "CeleryProcesses" in (ROOT / "benchmarks" / "generation_throughput.py").read_text(encoding="utf-8")
    assert "run_on_workers" in (ROOT / "benchmarks" / "scale_out.py").read_text(encoding="utf-8")  # the same one


def test_children_get_the_given_settings_and_never_eager_tasks(monkeypatch):
    monkeypatch.setenv("CELERY_TASK_ALWAYS_EAGER", "true")
    env = child_environment({"EXTRA": 3}, broker="redis://x/1", database_url="sqlite:///db", concurrency=16)
    assert "CELERY_TASK_ALWAYS_EAGER" not in env
    assert (env["CELERY_BROKER_URL"], env["DATABASE_URL"], env["JOB_WORKER_CONCURRENCY"], env["EXTRA"]) == (
        "redis://x/1",
        "sqlite:///db",
        "16",
        "3",
    )


@pytest.mark.worker
@pytest.mark.django_db
def test_a_worker_that_dies_at_start_is_reported_with_its_log(tmp_path):
    from stereoscope.testing.workers import WorkerStartError

    # a broker URL Celery cannot parse: the worker exits at once
    with CeleryProcesses(broker="no-such-transport://", log_dir=tmp_path) as celery:
        worker = celery.start_worker("q-dead")
        with pytest.raises(WorkerStartError, match="exited"):
            celery.wait_ready([worker], timeout=60)
        assert worker.poll() is not None
