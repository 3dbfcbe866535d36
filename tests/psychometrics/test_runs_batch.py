"""A questionnaire run in batch mode: the same messages as live, answers extracted by the run's usual sink."""

import pytest

from generation.models import ProviderBatch, ProviderCall
from generation.runs import batches
from psychometrics import runs, services
from psychometrics.services import PsychError

from .helpers import expected_value, load_library, script_asi

pytestmark = pytest.mark.django_db


def test_asi_run_in_batch_mode(study, make_endpoint, fake_provider, settings, make_user, client_for):
    settings.BATCH_MAX_REQUESTS = 50
    asi, personas = load_library()
    ctx = services.contexts_from_personas(study, "5 personas", personas, n=5, seed=42)
    endpoint = make_endpoint(
        study, "openai", name="fake-gpt", model_id="fake-gpt", default_params={"temperature": 0}, batch_enabled=True
    )
    script_asi(fake_provider, asi)
    plain = make_endpoint(study, "openai", name="plain")
    with pytest.raises(PsychError, match="Batch mode is not allowed on: plain"):
        runs.create_run(
            study,
            name="no",
            instrument=asi,
            context_set=ctx,
            endpoints=[plain],
            extractors=["number"],
            execution_mode="batch",
        )
    run = runs.create_run(
        study,
        name="ASI batched",
        instrument=asi,
        context_set=ctx,
        endpoints=[endpoint],
        template_key="jung2025",
        option_order="permuted",
        order_seed=5,
        extractors=["number"],
        audit_per_model=10,
        execution_mode="batch",
    )
    runs.start(run)
    run.refresh_from_db()
    assert run.status == "running" and "Waiting for 3 batches" in run.message  # 110 units, 50 per batch
    bodies = fake_provider.batches.bodies()
    responses = {f"response-{r.pk}": r for r in run.responses.all()}
    assert set(bodies) == set(responses)
    assert all(body["messages"] == responses[cid].messages and body["temperature"] == 0 for cid, body in bodies.items())
    batches.poll_open_batches()
    from stereoscope.models import Membership

    viewer = make_user("psych-coder")
    Membership.objects.create(study=study, user=viewer, role="coder")
    page = client_for(viewer).get(f"/studies/{study.pk}/questionnaires/runs/{run.pk}/")
    assert page.status_code == 200 and 'id="job-batches"' in page.content.decode()
    batches.poll_open_batches()
    run.refresh_from_db()
    assert run.status == "completed", run.message
    assert not fake_provider.requests
    for r in run.responses.all():
        expected = expected_value(r.messages, r.raw_text)
        assert (r.extraction, r.value) == (("refused", None) if expected is None else ("ok", expected))
    calls = ProviderCall.objects.filter(purpose="psychometrics")
    assert calls.count() == 110 and set(calls.values_list("batch_id", flat=True)) == set(
        ProviderBatch.objects.filter(job_kind="psychometrics.run").values_list("provider_batch_id", flat=True)
    )


def test_the_judge_step_follows_the_last_batch(study, make_endpoint, fake_provider):
    asi, _ = load_library()
    model = make_endpoint(study, "openai", name="subject", model_id="subject-model", batch_enabled=True)
    judge = make_endpoint(study, name="judge", model_id="judge-model")
    items = list(asi.items.order_by("position"))
    fake_provider.script([{"text": "It depends on the situation."}], match=f"Statement: {items[2].text}\n")
    fake_provider.script([{"text": "3"}], match="You judge a survey answer")
    fake_provider.default = {"text": "2"}
    run = runs.create_run(
        study,
        name="judged in batch",
        instrument=asi,
        context_set=None,
        endpoints=[model],
        extractors=["number", "llm"],
        judge_endpoint=judge,
        execution_mode="batch",
    )
    runs.start(run)
    assert not ProviderCall.objects.filter(purpose="psychometrics_judge").exists()  # nothing to judge yet
    batches.poll_open_batches()
    batches.poll_open_batches()
    run.refresh_from_db()
    assert run.status == "completed", run.message
    judged = [r for r in run.responses.select_related("item") if r.extraction_method == "llm"]
    assert [(r.item.item_id, r.value) for r in judged] == [(items[2].item_id, 3)]
    judge_calls = ProviderCall.objects.filter(purpose="psychometrics_judge")
    assert judge_calls.count() == 1 and not judge_calls.get().batch_id  # the judge is asked live
    assert ProviderCall.objects.filter(purpose="psychometrics").exclude(batch_id="").count() == 22
