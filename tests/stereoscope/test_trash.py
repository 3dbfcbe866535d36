"""Deleting what carries human or paid work (README "Deleting and the trash"): a study goes to the trash (hidden,
restorable by its admins with everything under it, purged by staff or after TRASH_RETENTION_DAYS); a codebook with
codings, a run with outputs, a judge round with verdicts and a questionnaire run with responses are refused with
what depends on them; anything with a live job is refused. Every path is tried through the API and the pages, and
the counts of codings, memos, assignments, verdicts, outputs and responses are the same before and after."""

from datetime import timedelta
from io import StringIO

import pytest
from django.core.management import call_command
from django.utils import timezone

from annotation.models import Assignment, Code, Codebook, Coding, Memo
from generation.models import GenerationRun, ModelEndpoint, Output
from judging.models import JudgeRound, JudgeTemplate, Verdict
from psychometrics.models import Context, ContextSet, Instrument, InstrumentItem, QuestionnaireRun, Response
from stereoscope import trash
from stereoscope.models import Study

pytestmark = pytest.mark.django_db

WORK = (Output, Coding, Memo, Assignment, Verdict, Response)


def counts():
    return {model.__name__: model.objects.count() for model in WORK}


def build_work(study, coder):
    """A study with one of each kind of work: outputs, a coding with a memo, an assignment, a verdict, a response."""
    endpoint = ModelEndpoint.objects.create(study=study, name="m", provider="manual", model_id="model-a")
    run = GenerationRun.objects.create(study=study, name="coded run", status="completed", is_import=True)
    output = Output.objects.create(study=study, run=run, model_name="model-a", text="A story.", status="done")
    Output.objects.create(study=study, run=run, model_name="model-a", text="Another story.", status="done")
    codebook = Codebook.objects.create(study=study, name="Stereotypes", locked=True)
    code = Code.objects.create(codebook=codebook, name="Caring")
    coding = Coding.objects.create(output=output, code=code, coder=coder, codebook=codebook, start=0, end=1)
    Memo.objects.create(study=study, author=coder, coding=coding, text="Weeks of thought.")
    Assignment.objects.create(study=study, codebook=codebook, output=output, coder=coder)
    template = JudgeTemplate.objects.create(study=study, name="t", kind="custom", text="{target_stereotype} {stories}")
    judge_round = JudgeRound.objects.create(study=study, name="round", template=template, source_run=run)
    Verdict.objects.create(round=judge_round, output=output, judge_model="model-b", value=1, status="ok")
    instrument = Instrument.objects.create(study=study, name="Mini")
    item = InstrumentItem.objects.create(instrument=instrument, item_id="1", text="Women are fragile.")
    context_set = ContextSet.objects.create(study=study, name="contexts")
    context = Context.objects.create(context_set=context_set, key="c1")
    q_run = QuestionnaireRun.objects.create(study=study, name="q", instrument=instrument, context_set=context_set)
    Response.objects.create(run=q_run, item=item, context=context, endpoint=endpoint, model_name="model-a")
    return {"run": run, "codebook": codebook, "round": judge_round, "q_run": q_run, "template": template}


@pytest.fixture
def work(roles):
    return build_work(roles["a"], roles["users"]["coder"])


def api(study, path=""):
    return f"/api/studies/{study.pk}/{path}"


# -- the study trash through the API ----------------------------------------------------------------------------------


def test_deleting_a_study_moves_it_to_the_trash_and_restore_brings_everything_back(roles, work, api_for):
    study, admin = roles["a"], roles["users"]["admin"]
    before = counts()
    assert all(before.values())
    client = api_for(admin)
    response = client.delete(f"/api/studies/{study.pk}/")
    assert response.status_code == 204
    assert counts() == before  # nothing under it was deleted
    assert client.get(f"/api/studies/{study.pk}/").status_code == 404  # hidden
    assert study.pk not in [s["id"] for s in client.get("/api/studies/").json()["results"]]
    assert client.get(api(study, "codebooks/")).status_code == 404
    assert not Study.objects.filter(pk=study.pk).exists() and Study.all_objects.get(pk=study.pk).trashed_at

    listed = client.get("/api/trash/").json()
    assert [row["id"] for row in listed] == [study.pk] and listed[0]["trashed_by"] == "admin"
    # members below admin, and other studies' admins, neither see nor restore it
    for name in ("researcher", "b_admin"):
        other = api_for(roles["users"][name])
        assert other.get("/api/trash/").json() == []
        assert other.post(f"/api/trash/{study.pk}/restore/").status_code == 404

    response = client.post(f"/api/trash/{study.pk}/restore/")
    assert response.status_code == 200 and response.json()["id"] == study.pk
    assert counts() == before
    assert client.get(api(study, "codebooks/")).status_code == 200
    assert client.get("/api/trash/").json() == []


def test_only_admins_move_a_study_to_the_trash(roles, work, api_for):
    study = roles["a"]
    for name in ("coder", "researcher"):
        assert api_for(roles["users"][name]).delete(f"/api/studies/{study.pk}/").status_code == 403
    assert api_for(roles["users"]["outsider"]).delete(f"/api/studies/{study.pk}/").status_code == 404
    assert Study.objects.filter(pk=study.pk).exists()


def test_a_study_with_a_live_job_is_not_trashed(roles, work, api_for):
    study = roles["a"]
    GenerationRun.objects.filter(pk=work["run"].pk).update(status="running")
    before = counts()
    response = api_for(roles["users"]["admin"]).delete(f"/api/studies/{study.pk}/")
    assert response.status_code == 409
    assert "coded run" in response.json()["detail"] and "Cancel" in response.json()["detail"]
    assert Study.objects.filter(pk=study.pk).exists() and counts() == before


def test_staff_purge_the_trash_and_nobody_else_does(roles, work, api_for):
    study = roles["a"]
    trash.trash_study(study, actor=roles["users"]["admin"])
    before = counts()
    response = api_for(roles["users"]["admin"]).delete(f"/api/trash/{study.pk}/")
    assert response.status_code == 403 and counts() == before
    assert api_for(roles["users"]["staff"]).delete(f"/api/trash/{study.pk}/").status_code == 204
    assert not Study.all_objects.filter(pk=study.pk).exists()
    assert all(n == 0 for n in counts().values())


def test_a_live_job_holds_off_the_purge(roles, work):
    study = roles["a"]
    trash.trash_study(study)
    JudgeRound.objects.filter(pk=work["round"].pk).update(status="queued")
    with pytest.raises(trash.TrashError, match="round"):
        trash.purge_study(study)
    assert Study.all_objects.filter(pk=study.pk).exists()


def test_a_study_not_in_the_trash_is_never_purged(roles, work):
    with pytest.raises(trash.TrashError, match="trash first"):
        trash.purge_study(roles["a"])
    assert Study.objects.filter(pk=roles["a"].pk).exists()


def test_purge_trash_removes_only_studies_past_the_retention_period(roles, work, settings):
    settings.TRASH_RETENTION_DAYS = 30
    old, recent = roles["a"], roles["b"]
    build_work(recent, roles["users"]["b_admin"])
    trash.trash_study(old)
    trash.trash_study(recent)
    Study.all_objects.filter(pk=old.pk).update(trashed_at=timezone.now() - timedelta(days=31))
    out = StringIO()
    call_command("purge_trash", "--dry-run", stdout=out)
    assert "Study A" in out.getvalue() and "Study B" not in out.getvalue()
    assert Study.all_objects.filter(pk=old.pk).exists()
    call_command("purge_trash", stdout=out)
    assert not Study.all_objects.filter(pk=old.pk).exists()
    assert Study.all_objects.filter(pk=recent.pk).exists() and Output.objects.filter(study=recent).count() == 2
    call_command("purge_trash", "--study", str(recent.pk), stdout=out)
    assert not Study.all_objects.filter(pk=recent.pk).exists()


def test_the_library_is_never_trashed(db):
    from stereoscope.services import library_study

    with pytest.raises(trash.TrashError, match="library"):
        trash.trash_study(library_study())


# -- refusals through the API -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "kind, path, words",
    [
        ("codebook", "codebooks", ["1 coding,", "1 memo", "1 assignment,"]),
        ("run", "runs", ["2 outputs", "1 coding,", "1 verdict"]),
        ("round", "judge-rounds", ["1 verdict depend"]),
        ("q_run", "questionnaire-runs", ["1 response depend"]),
    ],
)
def test_deleting_something_with_work_is_refused_saying_what_depends_on_it(roles, work, api_for, kind, path, words):
    before = counts()
    response = api_for(roles["users"]["admin"]).delete(api(roles["a"], f"{path}/{work[kind].pk}/"))
    assert response.status_code == 409, response.content
    detail = response.json()["detail"]
    for word in words:
        assert word in detail
    assert "cannot be deleted" in detail
    assert counts() == before
    assert type(work[kind]).objects.filter(pk=work[kind].pk).exists()


def test_things_without_work_are_deleted(roles, work, api_for):
    study, client = roles["a"], api_for(roles["users"]["researcher"])
    codebook = Codebook.objects.create(study=study, name="Unused")
    run = GenerationRun.objects.create(study=study, name="draft")
    judge_round = JudgeRound.objects.create(study=study, name="empty", template=work["template"], source_run=run)
    q_run = QuestionnaireRun.objects.create(
        study=study, name="draft q", instrument=work["q_run"].instrument, context_set=work["q_run"].context_set
    )
    before = counts()
    for path, obj in (
        ("judge-rounds", judge_round),
        ("runs", run),
        ("questionnaire-runs", q_run),
        ("codebooks", codebook),
    ):
        response = client.delete(api(study, f"{path}/{obj.pk}/"))
        assert response.status_code == 204, (path, response.content)
        assert not type(obj).objects.filter(pk=obj.pk).exists()
    assert counts() == before


def test_a_live_run_round_or_questionnaire_is_not_deleted(roles, work, api_for):
    study, client = roles["a"], api_for(roles["users"]["admin"])
    run = GenerationRun.objects.create(study=study, name="going", status="running")
    judge_round = JudgeRound.objects.create(
        study=study, name="judging", template=work["template"], source_run=run, status="queued"
    )
    q_run = QuestionnaireRun.objects.create(
        study=study,
        name="asking",
        instrument=work["q_run"].instrument,
        context_set=work["q_run"].context_set,
        status="running",
    )
    for path, obj in (("judge-rounds", judge_round), ("runs", run), ("questionnaire-runs", q_run)):
        response = client.delete(api(study, f"{path}/{obj.pk}/"))
        assert response.status_code == 409 and "cancel it first" in response.json()["detail"], path
        assert type(obj).objects.filter(pk=obj.pk).exists()


def test_a_locked_codebook_without_codings_is_refused_too(roles, api_for):
    codebook = Codebook.objects.create(study=roles["a"], name="Locked", locked=True)
    response = api_for(roles["users"]["admin"]).delete(api(roles["a"], f"codebooks/{codebook.pk}/"))
    assert response.status_code == 409 and "locked" in response.json()["detail"]
    assert Codebook.objects.filter(pk=codebook.pk).exists()


# -- the pages ------------------------------------------------------------------------------------------------------


def test_the_pages_move_a_study_to_the_trash_and_restore_it(roles, work, client_for):
    study = roles["a"]
    before = counts()
    admin = client_for(roles["users"]["admin"])
    assert b"Move to trash" in admin.get(f"/studies/{study.pk}/").content
    assert b"Move to trash" not in client_for(roles["users"]["researcher"]).get(f"/studies/{study.pk}/").content
    assert client_for(roles["users"]["researcher"]).post(f"/studies/{study.pk}/trash/").status_code == 403

    response = admin.post(f"/studies/{study.pk}/trash/", follow=True)
    assert response.status_code == 200 and "is in the trash" in response.content.decode()
    assert counts() == before
    assert admin.get(f"/studies/{study.pk}/").status_code == 404
    page = admin.get("/trash/").content.decode()
    assert "Study A" in page and "Restore" in page and "Purge now" not in page
    assert "Study A" not in client_for(roles["users"]["researcher"]).get("/trash/").content.decode()
    assert client_for(roles["users"]["researcher"]).post(f"/trash/{study.pk}/restore/").status_code == 404
    assert admin.post(f"/trash/{study.pk}/purge/").status_code == 403

    response = admin.post(f"/trash/{study.pk}/restore/", follow=True)
    assert response.status_code == 200 and "is restored" in response.content.decode()
    assert admin.get(f"/studies/{study.pk}/").status_code == 200
    assert counts() == before


def test_the_page_refuses_to_trash_a_study_with_a_live_job(roles, work, client_for):
    study = roles["a"]
    QuestionnaireRun.objects.filter(pk=work["q_run"].pk).update(status="running")
    response = client_for(roles["users"]["admin"]).post(f"/studies/{study.pk}/trash/", follow=True)
    assert response.status_code == 200 and "Cancel them first" in response.content.decode()
    assert Study.objects.filter(pk=study.pk).exists()


def test_staff_purge_from_the_trash_page(roles, work, client_for):
    study = roles["a"]
    trash.trash_study(study)
    staff = client_for(roles["users"]["staff"])
    assert "Purge now" in staff.get("/trash/").content.decode()
    response = staff.post(f"/trash/{study.pk}/purge/", follow=True)
    assert response.status_code == 200 and "purged for good" in response.content.decode()
    assert not Study.all_objects.filter(pk=study.pk).exists()


def test_the_admin_deletes_only_studies_in_the_trash(roles, work, client_for):
    study = roles["a"]
    staff = roles["users"]["staff"]
    staff.is_superuser = True
    staff.save()
    admin = client_for(staff)
    before = counts()
    assert admin.get(f"/admin/stereoscope/study/{study.pk}/delete/").status_code == 403
    response = admin.post(
        "/admin/stereoscope/study/", {"action": "delete_selected", "_selected_action": [study.pk], "post": "yes"}
    )
    assert response.status_code in (200, 302, 403) and Study.objects.filter(pk=study.pk).exists() and counts() == before
    trash.trash_study(study)
    assert str(study.pk) in admin.get("/admin/stereoscope/study/").content.decode()  # the trash is listed
    response = admin.post(f"/admin/stereoscope/study/{study.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Study.all_objects.filter(pk=study.pk).exists()


def test_the_beat_task_purges_what_is_past_retention(roles, work, settings):
    from stereoscope.tasks import purge_trash

    assert settings.CELERY_BEAT_SCHEDULE["purge-trash"]["task"] == "stereoscope.purge_trash"
    settings.TRASH_RETENTION_DAYS = 7
    old, recent = roles["a"], roles["b"]
    trash.trash_study(old)
    trash.trash_study(recent)
    Study.all_objects.filter(pk=old.pk).update(trashed_at=timezone.now() - timedelta(days=8))
    assert purge_trash() == {"purged": ["Study A"], "kept": []}
    assert not Study.all_objects.filter(pk=old.pk).exists() and Study.all_objects.filter(pk=recent.pk).exists()
