"""`manage.py setup`: the one process scripts/run.sh runs at every start (issue 36: first start in seconds)."""

from io import StringIO
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command
from django.core.management.base import BaseCommand

ROOT = Path(__file__).resolve().parent.parent


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
