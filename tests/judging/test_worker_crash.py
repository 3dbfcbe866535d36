"""Crash safety: a real worker running a judge round is killed with SIGKILL; a new worker resumes the round and
every (output, judge) ends with exactly one verdict, and only the missing ones were asked again."""

import uuid

import pytest

from generation.models import Dimension, GenerationRun, Output, PromptItem, Toolkit
from judging import rounds
from judging.models import JudgeRound, Verdict
from stereoscope.testing.workers import wait_for
from tests.judging.helpers import seed_template

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]


def test_sigkill_mid_round_then_resume(make_endpoint, fake_provider, monkeypatch, celery_processes):
    from stereoscope.celery import app
    from stereoscope.models import Study

    study = Study.objects.create(name="judge crash")
    toolkit = Toolkit.objects.create(study=study, name="t")
    dim = Dimension.objects.create(toolkit=toolkit, name="D")
    models = ["alpha-1", "beta-2", "gamma-3"]
    endpoints = [make_endpoint(study, model_id=m, name=m, max_concurrency=2) for m in models]
    run = GenerationRun.objects.create(study=study, name="src", toolkit=toolkit, status="completed")
    for n in range(1, 21):
        item = PromptItem.objects.create(
            toolkit=toolkit, number=n, text=f"p{n}", dimension=dim, target_stereotype=f"target {n}"
        )
        for m, e in zip(models, endpoints, strict=True):
            Output.objects.create(
                study=study, run=run, item=item, endpoint=e, model_name=m, text=f"<{m}-{n}> a story", status="done"
            )
    fake_provider.default = {"text": "Story 1: 1 – fits."}
    fake_provider.default_delay = 0.15
    queue = f"judge-{uuid.uuid4().hex[:8]}"
    monkeypatch.setattr(
        rounds, "_enqueue", lambda rnd: app.send_task("judging.execute_round", args=[rnd.pk], queue=queue)
    )
    rnd = rounds.create_round(
        study,
        name="crash",
        template=seed_template(study),
        source_run=run,
        judges=endpoints,
        policy="rotation",
        batch_size=1,
        seed=5,
        reask_missing=False,
    )

    first = celery_processes.start_worker(queue)
    try:
        rounds.start(rnd)
        assert wait_for(lambda: Verdict.objects.filter(round=rnd, status="ok").count() >= 8, timeout=120)
    finally:
        celery_processes.kill(first)
    done_before = set(Verdict.objects.filter(round=rnd, status="ok").values_list("pk", flat=True))
    assert 8 <= len(done_before) < 60, "the kill should land mid-round"
    assert JudgeRound.objects.get(pk=rnd.pk).status == "running"
    requests_before = len(fake_provider.requests)

    second = celery_processes.start_worker(queue)
    try:
        # the dead worker's lease must expire before another worker may take the round
        JudgeRound.objects.filter(pk=rnd.pk).update(lease_expires_at=None, lease_token="")
        rounds.resume(JudgeRound.objects.get(pk=rnd.pk))
        assert wait_for(lambda: JudgeRound.objects.get(pk=rnd.pk).status == "completed", timeout=180)
    finally:
        celery_processes.stop([second])
    verdicts = Verdict.objects.filter(round=rnd)
    assert verdicts.count() == 60 and verdicts.filter(status="ok").count() == 60
    assert len(set(verdicts.values_list("output_id", "judge_model"))) == 60
    again = {r["prompt"].split("Story 1:\n")[1] for r in fake_provider.requests[requests_before:]}
    missing = set(Output.objects.filter(run=run).exclude(verdicts__pk__in=done_before).values_list("text", flat=True))
    assert again == missing
