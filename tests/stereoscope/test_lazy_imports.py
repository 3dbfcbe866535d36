"""A worker's start-up imports neither scipy.stats nor pandas, and its launchers skip the Django system checks that
their parent process (serve, the tests, the benchmarks) has run for the same settings."""

import os
import subprocess
import sys

import pytest

from stereoscope.lazy_imports import LazyModule
from stereoscope.testing.workers import ROOT, child_environment

WORKER_START = """
import sys
import django
django.setup()
from stereoscope.celery import app
app.loader.import_default_modules()  # what `celery worker` does before it takes work (with Celery's Django fixup)
print(" ".join(m for m in ("scipy.stats", "pandas") if m in sys.modules) or "none")
"""


def heavy_modules_at_worker_start(env):
    done = subprocess.run(
        [sys.executable, "-c", WORKER_START], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.split()


def test_a_worker_started_by_the_launcher_imports_no_scipy_stats_or_pandas():
    env = child_environment()
    env.pop("PYTHONPATH", None)
    assert env["CELERY_SKIP_CHECKS"] == "1"
    assert heavy_modules_at_worker_start(env) == ["none"]


def test_serve_starts_its_worker_without_the_checks_it_has_run():
    from stereoscope.management.commands.serve import worker_environment

    assert worker_environment({"PATH": os.environ["PATH"]}) == {"PATH": os.environ["PATH"], "CELERY_SKIP_CHECKS": "1"}


def test_a_lazy_module_is_imported_when_first_used():
    name = "stereoscope_lazy_probe_module"
    lazy = LazyModule("json")
    assert "not imported yet" in repr(lazy)
    assert lazy.dumps({"a": [1]}) == '{"a": [1]}' and "imported" in repr(lazy)
    with pytest.raises(ModuleNotFoundError, match=name):
        getattr(LazyModule(name), "anything")  # noqa: B009 (reading the attribute is the point)
