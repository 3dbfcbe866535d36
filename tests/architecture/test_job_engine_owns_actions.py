"""The job engine owns cancel and retry (issue 37): apps call `jobs.cancel` and `jobs.retry_failed`, never the
steps those are made of (resetting failed units, cancelling a job's provider batches) themselves."""

import re
from pathlib import Path

from stereoscope.app_names import PROJECT_APPS

ROOT = Path(__file__).resolve().parents[2]
ENGINE = ROOT / "stereoscope" / "jobs"
# the steps of a retry and of a cancel that only the engine (and its registered hook) may call
STEPS = re.compile(r"\.reset_failed\(|\bcancel_open\(")


def engine_steps_outside_the_engine(roots):
    found = []
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            if ENGINE in path.parents or "migrations" in path.parts:
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                code = line.split("#", 1)[0]
                if STEPS.search(code) and not re.match(r"\s*def ", code) and "jobs.on_cancel(" not in code:
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    return found


def test_apps_retry_and_cancel_through_the_engine():
    assert engine_steps_outside_the_engine([ROOT / app for app in PROJECT_APPS]) == []


def test_the_check_finds_a_retry_written_by_hand(tmp_path):
    probe = tmp_path / "probe_app"
    probe.mkdir()
    (probe / "runs.py").write_text(
        "def retry_failed(run):\n    n = RUN_JOB.reset_failed(run)\n    batches.cancel_open(run)\n", encoding="utf-8"
    )
    global ROOT
    saved, ROOT = ROOT, tmp_path
    try:
        found = engine_steps_outside_the_engine([probe])
    finally:
        ROOT = saved
    assert len(found) == 2 and "reset_failed" in found[0] and "cancel_open" in found[1]
