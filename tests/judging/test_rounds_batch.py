"""A judge round in batch mode against the fake batch service: the same prompts as live, one batch per judge,
answers parsed by the round's usual sink, the re-ask of a missing story as a second pass in a new batch."""

from decimal import Decimal

import pytest

from generation.models import ProviderBatch, ProviderCall
from generation.runs import batches
from judging import rounds
from judging.models import Verdict
from tests.judging.helpers import build_study, script_round, seed_template, tag

pytestmark = pytest.mark.django_db


def test_seed_round_in_batch_mode_with_reask(study, make_endpoint, fake_provider, client_for, make_user):
    data = build_study(study, make_endpoint)
    from tests.generation.runs.conftest import approved_connection

    for endpoint in data["endpoints"].values():
        endpoint.batch_enabled = True
        endpoint.provider = "openai"
        endpoint.connection = approved_connection("openai", endpoint.base_url, endpoint.api_key_env)
        endpoint.input_price_per_mtok, endpoint.output_price_per_mtok = 2, 6
        endpoint.save()
    template = seed_template(study)
    missing_out = next(pk for pk in data["truth"] if tag("gpt-4o", 2, 3) in data["run"].outputs.get(pk=pk).text)
    rnd = rounds.create_round(
        study,
        name="batched",
        template=template,
        source_run=data["run"],
        judges=list(data["endpoints"].values()),
        policy="rotation",
        batch_size=5,
        seed=11,
        execution_mode="batch",
    )
    assert Decimal(rnd.plan["batch_cost_usd"]) * 2 == Decimal(rnd.plan["cost_usd"]) > 0  # the plan shows both
    rounds.materialize(rnd)
    script_round(fake_provider, rnd, data["truth"], "free_text", omit=(missing_out,))
    fake_provider.script([{"text": f"Story 1: {data['truth'][missing_out]} – now alone."}], match=tag("gpt-4o", 2, 3))
    rounds.start(rnd)
    rnd.refresh_from_db()
    assert rnd.status == "running" and "Waiting for 5 batches" in rnd.message
    first = list(ProviderBatch.objects.filter(job_kind="judging.round", job_id=rnd.pk))
    assert len(first) == 5 and sum(b.request_count for b in first) == 15 and not fake_provider.requests
    # the bodies are the live ones: a user message with the rendered batch prompt and the round's parameters
    bodies = fake_provider.batches.bodies()
    assert all(
        b["messages"][0]["role"] == "user" and "Story 5:" in b["messages"][0]["content"] for b in bodies.values()
    )

    batches.poll_open_batches()  # validating -> in progress
    from stereoscope.models import Membership

    researcher = make_user("judge-researcher")
    Membership.objects.create(study=study, user=researcher, role="researcher")
    page = client_for(researcher).get(f"/studies/{study.pk}/judging/rounds/{rnd.pk}/").content.decode()
    assert 'id="job-batches"' in page and first[0].provider_batch_id in page and "In progress" in page
    batches.poll_open_batches()  # ended: 74 verdicts; the missing one is re-asked alone in a new batch
    rnd.refresh_from_db()
    assert ProviderBatch.objects.filter(job_id=rnd.pk).count() == 6
    re_ask = ProviderBatch.objects.filter(job_id=rnd.pk).order_by("number").last()
    assert re_ask.request_count == 1 and re_ask.units[0][1].startswith("v:")
    batches.poll_open_batches()
    batches.poll_open_batches()
    rnd.refresh_from_db()
    assert rnd.status == "completed", rnd.message
    verdicts = Verdict.objects.filter(round=rnd)
    assert verdicts.filter(status="ok").count() == 75
    assert {v.output_id: v.value for v in verdicts} == data["truth"]
    again = verdicts.get(output_id=missing_out)
    assert again.reasked and "asked again, alone" in again.raw_text
    calls = ProviderCall.objects.filter(study=study, purpose="judging")
    assert calls.count() == 16 and all(c.batch_id and c.custom_id for c in calls)


def test_batch_round_needs_judges_that_allow_it(study, make_endpoint):
    data = build_study(study, make_endpoint, trials=1)
    with pytest.raises(rounds.RoundError, match="Batch mode is not allowed"):
        rounds.create_round(
            study,
            name="no",
            template=seed_template(study),
            source_run=data["run"],
            judges=list(data["endpoints"].values()),
            execution_mode="batch",
        )


def test_cancelling_a_batch_round_cancels_its_open_batches_at_the_provider(study, make_endpoint, fake_provider):
    """The job engine's cancel runs generation's hook: no app cancels batches itself (issue 37)."""
    from tests.generation.runs.conftest import approved_connection

    data = build_study(study, make_endpoint)
    for endpoint in data["endpoints"].values():
        endpoint.batch_enabled = True
        endpoint.provider = "openai"
        endpoint.connection = approved_connection("openai", endpoint.base_url, endpoint.api_key_env)
        endpoint.save()
    rnd = rounds.create_round(
        study,
        name="to cancel",
        template=seed_template(study),
        source_run=data["run"],
        judges=list(data["endpoints"].values()),
        policy="rotation",
        batch_size=5,
        seed=11,
        execution_mode="batch",
    )
    rounds.materialize(rnd)
    script_round(fake_provider, rnd, data["truth"], "free_text")
    rounds.start(rnd)
    ids = list(ProviderBatch.objects.filter(job_id=rnd.pk).values_list("provider_batch_id", flat=True))
    assert len(ids) == 5
    rnd.refresh_from_db()
    rounds.cancel(rnd)
    assert sorted(fake_provider.batches.cancelled) == sorted(ids)
    assert set(ProviderBatch.objects.filter(job_id=rnd.pk).values_list("status", flat=True)) == {"cancelling"}
