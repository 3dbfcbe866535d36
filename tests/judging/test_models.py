import pytest
from django.db import IntegrityError, transaction

from generation.models import GenerationRun, ModelEndpoint, Output
from judging.models import HumanCheck, JudgeRound, JudgeTemplate, Verdict


@pytest.mark.django_db
def test_verdict_unique_per_round_output_judge_model(study, django_user_model):
    tpl = JudgeTemplate.objects.create(study=study, name="T", kind="seed_binary", text="{target_stereotype} {stories}")
    run = GenerationRun.objects.create(study=study, name="r")
    ep = ModelEndpoint.objects.create(study=study, name="e", provider="manual", model_id="GPT-4o")
    out = Output.objects.create(study=study, run=run, model_name="x", text="story")
    rnd = JudgeRound.objects.create(study=study, name="R", template=tpl, source_run=run)
    rnd.judges.add(ep)
    v = Verdict.objects.create(
        round=rnd, output=out, judge_endpoint=ep, judge_model=ep.model_identity, value=1, status="ok"
    )
    with pytest.raises(IntegrityError), transaction.atomic():
        Verdict.objects.create(round=rnd, output=out, judge_model="gpt-4o")
    user = django_user_model.objects.create_user("u")
    HumanCheck.objects.create(verdict=v, user=user, value=0)
    with pytest.raises(IntegrityError), transaction.atomic():
        HumanCheck.objects.create(verdict=v, user=user, value=1)
    assert list(out.verdicts.all()) == [v] and v.judge_model == "gpt-4o"
