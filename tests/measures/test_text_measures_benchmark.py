"""benchmarks/text_measures.py runs the measure run through the product's path (it once timed a run that never
started and still said PASS) and fails loudly when fewer stories were scored than created."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.db_template import copy_of_migrated_sqlite

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "text_measures.py"


def run_benchmark(config, tmp_path, *args):
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL", "REDIS_URL")}
    env.pop("CELERY_TASK_ALWAYS_EAGER", None)
    env["STEREOSCOPE_DATA_DIR"] = str(tmp_path)  # its own SQLite file and filesystem broker, not the test database
    if copy_of_migrated_sqlite(config, tmp_path / "bench.sqlite3"):  # its `migrate` then has nothing to do
        env["DATABASE_URL"] = f"sqlite:///{tmp_path / 'bench.sqlite3'}"
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--stories", "12", "--words", "60", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
    )


def lines_starting(out, prefix):
    return [line for line in out.splitlines() if line.startswith(prefix)]


def test_benchmark_scores_every_story_it_created(request, tmp_path):
    done = run_benchmark(request.config, tmp_path, "--workers", "0")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "scored 12 of 12 stories" in done.stdout, done.stdout
    assert "status=completed" in done.stdout
    sentences = int(done.stdout.split("stories (", 1)[1].split(" sentences", 1)[0])
    assert sentences >= 12
    for prefix in ("1 worker:", "VADER only:", "without VADER:"):
        (line,) = lines_starting(done.stdout, prefix)
        assert " s (" in line and "CPU" in line, line
    assert lines_starting(done.stdout, "RESULT PASS") or lines_starting(done.stdout, "RESULT SLOW")


def test_verdict_fails_when_stories_were_left_unscored():
    sys.path.insert(0, str(ROOT))
    from benchmarks.text_measures import problems

    ok = {"created": 10, "scored": 10, "status": "completed", "sentences": 30, "classifier": "vader"}
    assert problems("1 worker", **ok) == []
    found = problems("1 worker", **{**ok, "scored": 0, "status": "draft", "sentences": 0})
    assert any("scored 0 of 10 stories" in p for p in found)
    assert any("status draft" in p for p in found)
    assert any("no sentence rows" in p for p in found)
    assert problems("2 workers", **{**ok, "scored": 9}) == ["2 workers: scored 9 of 10 stories"]


@pytest.mark.worker
def test_benchmark_times_the_run_over_two_worker_processes(request, tmp_path):
    done = run_benchmark(request.config, tmp_path, "--workers", "2")
    assert done.returncode == 0, done.stdout + done.stderr
    (line,) = lines_starting(done.stdout, "2 workers:")
    seconds = float(line.split(":", 1)[1].split(" s", 1)[0])
    assert seconds > 0, line
    assert "scored 12 of 12 stories" in line, line
