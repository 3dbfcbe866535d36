"""manage.py run_generation (foreground, progress on stderr, exit codes) and manage.py import_outputs."""

import io

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from generation.models import GenerationRun, Output
from generation.runs import services as runs

pytestmark = pytest.mark.django_db


def test_run_generation_foreground(study, make_endpoint, make_toolkit, fake_provider, capsys):
    run = runs.create_run(study, name="cli", toolkit=make_toolkit(study, 3), endpoints=[make_endpoint(study)], trials=2)
    out = io.StringIO()
    call_command("run_generation", str(run.pk), stdout=out)
    run.refresh_from_db()
    assert run.status == "completed" and Output.objects.filter(run=run, status="done").count() == 6
    assert "6 done, 0 failed, 0 pending of 6" in out.getvalue()
    assert "6/6" in capsys.readouterr().err  # the progress bar


def test_run_generation_exit_codes(study, make_endpoint, make_toolkit, fake_provider, monkeypatch):
    endpoint = make_endpoint(study, max_attempts=1)
    run = runs.create_run(study, name="cli", toolkit=make_toolkit(study, 2), endpoints=[endpoint])
    fake_provider.script([{"status": 500}], match="item 2")
    with pytest.raises(CommandError, match="1 units failed") as info:
        call_command("run_generation", str(run.pk), "--quiet", stdout=io.StringIO())
    assert info.value.returncode == 1
    call_command("run_generation", str(run.pk), "--retry-failed", "--quiet", stdout=io.StringIO())
    assert Output.objects.filter(run=run, status="done").count() == 2
    with pytest.raises(CommandError, match="No generation run") as info:
        call_command("run_generation", "999999")
    assert info.value.returncode == 2
    keyed = make_endpoint(study, "openai", api_key_env="UNSET_CLI_KEY")
    monkeypatch.delenv("UNSET_CLI_KEY", raising=False)
    run = runs.create_run(study, name="nokey", toolkit=make_toolkit(study, 1), endpoints=[keyed])
    with pytest.raises(CommandError, match="UNSET_CLI_KEY") as info:
        call_command("run_generation", str(run.pk))
    assert info.value.returncode == 2 and not Output.objects.filter(run=run).exists()


def test_run_generation_exit_code_in_a_real_process(db):
    """The exit status a shell sees (call_command cannot show it)."""
    import os
    import subprocess
    import sys

    from tests.conftest import subprocess_database_url

    result = subprocess.run(
        [sys.executable, "manage.py", "run_generation", "424242"],
        capture_output=True,
        text=True,
        env={**os.environ, "DATABASE_URL": subprocess_database_url()},
        timeout=120,
    )
    assert result.returncode == 2 and "No generation run with id 424242" in result.stderr


def test_import_outputs_command(study, make_toolkit, tmp_path):
    toolkit = make_toolkit(study, 2)
    good = tmp_path / "stories.jsonl"
    good.write_text('{"model": "gpt", "item": 1, "text": "a"}\n{"model": "gpt", "item": 2, "text": "b"}\n')
    out = io.StringIO()
    call_command(
        "import_outputs", str(study.pk), str(good), "--toolkit", str(toolkit.pk), "--run-name", "old", stdout=out
    )
    run = GenerationRun.objects.get(is_import=True)
    assert run.name == "old" and run.outputs.count() == 2 and "Imported 2 outputs" in out.getvalue()
    bad = tmp_path / "bad.data"
    bad.write_text("model,item,text\ngpt,1,\n")
    with pytest.raises(CommandError, match="Row 2: the text is empty"):
        call_command("import_outputs", str(study.pk), str(bad), "--format", "csv", "--toolkit", str(toolkit.pk))
    with pytest.raises(CommandError, match="No such file"):
        call_command("import_outputs", str(study.pk), str(tmp_path / "missing.csv"))
    with pytest.raises(CommandError, match="No study"):
        call_command("import_outputs", "999999", str(good))
    assert GenerationRun.objects.filter(is_import=True).count() == 1
