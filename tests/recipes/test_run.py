"""Must show: `recipe run` on the built-in Fang recipe (2 models, 3 items) against the fake provider finishes
generation and judging and stops at the coding stage with its message."""

import json

import pytest
import yaml
from django.core.management import call_command

from generation.builtin import DATA as TOOLKIT_DATA
from generation.builtin import TOOLKITS
from psychometrics.builtin import DATA as INSTRUMENT_DATA
from recipes import library

N_ITEMS = 3
# the stages a researcher marks done by hand in this test: Phase 1 coding (no researcher member) and code discovery
PAST = ("--past", "Phase 1 occupation coding", "--past", "Phase 3 code discovery")


def reduced_fang():
    """The built-in Fang recipe with each built-in toolkit and instrument inlined and cut to its first 3 items."""
    data = library.load("fang2025")
    files = {key: name for key, _version, name in TOOLKITS}
    for i, entry in enumerate(data["toolkits"]):
        toolkit = json.loads((TOOLKIT_DATA / files[entry["builtin"]]).read_text(encoding="utf-8"))
        toolkit = {k: v for k, v in toolkit.items() if k not in ("format", "format_version", "version")}
        data["toolkits"][i] = dict(toolkit, name=entry["name"], items=toolkit["items"][:N_ITEMS])
    instrument = json.loads((INSTRUMENT_DATA / "fang2025_66.json").read_text(encoding="utf-8"))
    data["instruments"][0] = dict(instrument, name=data["instruments"][0]["name"], items=instrument["items"][:N_ITEMS])
    return data


@pytest.mark.django_db
def test_recipe_run_fang_stops_at_the_coding_stage(fake_provider, monkeypatch, tmp_path, capsys, settings):
    from generation.models import GenerationRun, Output
    from judging.models import JudgeRound, Verdict
    from psychometrics.models import QuestionnaireRun, Response
    from tests.generation.runs.conftest import approved_connection

    monkeypatch.setenv("FAKE_KEY_ENV", "sk-fake-secret-123")
    approved_connection("openai_compatible", fake_provider.openai_base_url, "FAKE_KEY_ENV", name="Fake provider")
    # Every call gets this text: a story for the writers, a usable verdict per story for the judges (a round in
    # which no verdict is usable ends failed, not completed).
    fake_provider.default = {
        "text": "\n".join(f"Story {i}: {i % 2} – the roles follow the pattern." for i in range(1, 6))
    }
    recipe = tmp_path / "fang.yaml"
    recipe.write_text(yaml.safe_dump(reduced_fang(), allow_unicode=True), encoding="utf-8")
    endpoints = tmp_path / "endpoints.yaml"
    endpoints.write_text(
        yaml.safe_dump(
            [
                {
                    "name": name,
                    "provider": "openai_compatible",
                    "model_id": f"fake-{name}",
                    "connection": "Fake provider",
                    "limits": {"backoff_base_s": 0.05, "max_attempts": 2},
                }
                for name in ("writer-1", "writer-2")
            ]
        ),
        encoding="utf-8",
    )
    call_command("recipe", "run", str(recipe), "--endpoints", str(endpoints))
    first = capsys.readouterr().out
    # Fang coded the Phase 1 occupation stories herself: the first stop waits for a researcher's codes
    assert "Stopped at the human stage “Phase 1 occupation coding”" in first
    assert "No researchers in the study yet" in first
    call_command("recipe", "run", str(recipe), "--endpoints", str(endpoints), *PAST)
    out = capsys.readouterr().out
    runs = GenerationRun.objects.order_by("name")
    assert [r.status for r in runs] == ["completed"] * 3
    # phase 3: 3 items × 5 trials × 2 models, every story written
    phase3 = runs.get(name="Phase 3 stories")
    assert Output.objects.filter(run=phase3, status="done").count() == N_ITEMS * 5 * 2
    rnd = JudgeRound.objects.get()
    assert rnd.status == "completed"
    assert Verdict.objects.filter(round=rnd).count() == N_ITEMS * 5 * 2
    # rotation with two models: each judges the other's stories, never its own
    assert not Verdict.objects.filter(
        round=rnd, judge_model__in=["fake-writer-1"], output__model_name="fake-writer-1"
    ).exists()
    assert QuestionnaireRun.objects.get().status == "completed"
    assert Response.objects.count() == N_ITEMS * 2
    assert "Stopped at the human stage “Phase 2 inductive coding”" in out
    assert "Code the induction stories in Annotate" in out
    assert "[" + "#" * 30 + "]" in first  # the progress bar reached the end
    assert "No coders in the study yet" in out
    # running again skips finished jobs; with two coders, the stories are assigned (k = 2) and the recipe waits
    from django.contrib.auth import get_user_model

    from annotation.models import Assignment
    from annotation.services import set_assignment_status
    from stereoscope.services import add_member

    study = phase3.study
    for name in ("ana", "ben"):
        get_user_model().objects.create_user(name)
        add_member(study=study, username=name, role="coder", actor=None)
    call_command("recipe", "run", str(recipe), "--endpoints", str(endpoints), *PAST)
    again = capsys.readouterr().out
    assert "already completed" in again and "Assigned 30 stories (60 assignments) to 2 coders" in again
    phase2 = runs.get(name="Phase 2 induction stories")
    assignments = Assignment.objects.filter(study=study)
    assert assignments.count() == 2 * N_ITEMS * 5 * 2 and {a.output.run_id for a in assignments} == {phase2.pk}
    for assignment in assignments.select_related("coder"):
        set_assignment_status(assignment, user=assignment.coder, done=True)
    call_command("recipe", "run", str(recipe), "--endpoints", str(endpoints), *PAST)
    last = capsys.readouterr().out
    assert "human stage “Phase 2 inductive coding”: done (60 of 60 assignments done" in last
    assert "Stopped at the human stage “Phase 3 verdict verification”" in last
    assert Output.objects.count() == N_ITEMS * (1 + 5 + 5) * 2
    # past the last stage: the declared exports are written, each manifest embedding the recipe
    from exports.models import ExportJob

    settings.EXPORT_ROOT = tmp_path / "exports"
    call_command(
        "recipe", "run", str(recipe), "--endpoints", str(endpoints), *PAST, "--past", "Phase 3 verdict verification"
    )
    assert "every job is done" in capsys.readouterr().out
    jobs = ExportJob.objects.filter(study=study).order_by("pk")
    assert [(j.format, j.status) for j in jobs] == [("csv", "completed"), ("qdpx", "completed")]
    assert jobs[0].manifest["recipe"]["study"]["name"] == "Fang 2025 three-phase audit"
    assert (settings.EXPORT_ROOT / f"study-{study.pk}" / jobs[1].file_name).exists()
