"""Deleting a study removes everything it owns, across every app (RESTRICT links let the cascade through)."""

import pytest
from django.db.models import RestrictedError

from generation.models import GenerationRun, ModelEndpoint, Output
from judging.models import JudgeRound, JudgeTemplate, Verdict
from psychometrics.models import Context, ContextSet, Instrument, InstrumentItem, QuestionnaireRun, Response
from stereoscope.models import Study

pytestmark = pytest.mark.django_db


def build(study):
    endpoint = ModelEndpoint.objects.create(study=study, name="m", provider="manual", model_id="model-a")
    run = GenerationRun.objects.create(study=study, name="r", status="completed", is_import=True)
    output = Output.objects.create(study=study, run=run, model_name="model-a", text="A story.", status="done")
    template = JudgeTemplate.objects.create(study=study, name="t", kind="custom", text="{target_stereotype} {stories}")
    judge_round = JudgeRound.objects.create(study=study, name="round", template=template, source_run=run)
    Verdict.objects.create(round=judge_round, output=output, judge_model="model-b", value=1, status="ok")
    instrument = Instrument.objects.create(study=study, name="Mini")
    item = InstrumentItem.objects.create(instrument=instrument, item_id="1", text="Women are fragile.")
    context_set = ContextSet.objects.create(study=study, name="contexts")
    context = Context.objects.create(context_set=context_set, key="c1")
    q_run = QuestionnaireRun.objects.create(study=study, name="q", instrument=instrument, context_set=context_set)
    Response.objects.create(run=q_run, item=item, context=context, endpoint=endpoint, model_name="model-a")
    return template, instrument, endpoint


def test_deleting_a_study_removes_judging_and_questionnaire_data():
    keep = Study.objects.create(name="other")
    build(keep)
    study = Study.objects.create(name="doomed")
    build(study)
    study.delete()
    for model in (JudgeRound, JudgeTemplate, Verdict, QuestionnaireRun, Response, Instrument, Output, ModelEndpoint):
        assert model.objects.count() == 1, model.__name__  # only the other study's row is left


def test_used_template_instrument_and_endpoint_cannot_be_deleted_alone():
    template, instrument, endpoint = build(Study.objects.create(name="s"))
    for obj in (template, instrument, endpoint):
        with pytest.raises(RestrictedError):
            obj.delete()
    assert Verdict.objects.count() == 1 and Response.objects.count() == 1
