"""`manage.py setup`: the one process scripts/run.sh runs at every start (issue 36: first start in seconds)."""

import os
import sqlite3
import subprocess
import sys
from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.django_db
def test_setup_runs_every_step_once_with_one_system_check(monkeypatch):
    monkeypatch.setenv("STEREOSCOPE_ADMIN_PASSWORD", "pw-for-the-test-only")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    checks = []
    original = BaseCommand.check
    monkeypatch.setattr(BaseCommand, "check", lambda self, *a, **k: checks.append(self) or original(self, *a, **k))
    out = StringIO()
    call_command("setup", stdout=out, skip_checks=False)
    text = out.getvalue()
    assert len(checks) == 1  # once for setup; migrate, load_builtin, ... are called without their own checks
    assert get_user_model().objects.filter(is_superuser=True).count() == 1
    assert "built-in(s) loaded" in text
    assert "OpenAI (OPENAI_API_KEY)" in text
    again = StringIO()
    call_command("setup", stdout=again)
    assert "An admin account exists already" in again.getvalue()
    assert get_user_model().objects.filter(is_superuser=True).count() == 1


def test_run_script_sets_up_in_one_process():
    script = (ROOT / "scripts" / "run.sh").read_text()
    assert "manage.py setup" in script
    for step in ("migrate", "load_builtin", "ensure_admin", "ensure_connections"):
        assert f"manage.py {step}" not in script


def _manage(folder, *args):
    env = {
        **os.environ,
        "STEREOSCOPE_DATA_DIR": str(folder),
        "DATABASE_URL": f"sqlite:///{folder / 'stereoscope.sqlite3'}",
        "STEREOSCOPE_ADMIN_PASSWORD": "pw-for-the-test-only",
    }
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600
    )


def test_setup_builds_an_empty_database_from_the_models_and_migrates_one_that_has_tables(tmp_path):
    first = _manage(tmp_path, "setup")
    assert first.returncode == 0, first.stderr
    assert "tables built from the models" in first.stdout
    assert "Admin account created" in first.stdout
    # every migration is recorded as applied: nothing is left for migrate to do
    check = _manage(tmp_path, "migrate", "--check")
    assert check.returncode == 0, check.stdout + check.stderr
    with sqlite3.connect(tmp_path / "stereoscope.sqlite3") as db:
        recorded = db.execute("SELECT count(*) FROM django_migrations").fetchone()[0]
        toolkits = db.execute("SELECT count(*) FROM generation_toolkit").fetchone()[0]
        triggers = db.execute("SELECT name FROM sqlite_master WHERE type = 'trigger'").fetchall()
    assert recorded > 50
    assert toolkits > 0  # the built-ins were loaded into the tables built from the models
    # the triggers that keep each coder's queue progress (annotation.QueueProgress) come with the tables
    assert sum("queue_progress" in name for (name,) in triggers) == 3
    again = _manage(tmp_path, "setup")
    assert again.returncode == 0, again.stderr
    assert "tables built from the models" not in again.stdout
    assert "No migrations to apply" in again.stdout
