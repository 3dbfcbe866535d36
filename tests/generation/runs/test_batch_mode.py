"""Batch mode end to end with eager tasks, against the fake batch service through the real SDKs: the bodies equal
live mode's, splitting at the limits, polling and matching by custom_id, per-request errors and expiry back to
pending, cancel at the provider, a submission cut short by a crash found again, batch prices."""

from decimal import Decimal

import pytest

from generation.models import BatchStatus, GenerationRun, Output, ProviderBatch, ProviderCall
from generation.runs import batch_format, batches
from generation.runs import services as runs
from generation.runs.providers.batch_api import OpenAIBatchAPI

pytestmark = pytest.mark.django_db

PARAMS = {"max_tokens": 120, "temperature": 0.7, "seed": 42, "top_p": 0.9}


@pytest.fixture
def batch_endpoint(make_endpoint):
    def make(study, provider="openai", **fields):
        fields.setdefault("default_params", dict(PARAMS, **({"top_k": 5} if provider != "anthropic" else {})))
        return make_endpoint(study, provider, batch_enabled=True, **fields)

    return make


def batch_run(study, toolkit, endpoints, name="b", trials=1):
    return runs.create_run(
        study,
        name=name,
        toolkit=toolkit,
        endpoints=endpoints,
        trials=trials,
        system_prompt="Be brief.",
        execution_mode="batch",
    )


def prompt_of(body):
    return [m for m in body["messages"] if m["role"] == "user"][-1]["content"]


@pytest.mark.parametrize("provider", ["openai", "openai_compatible", "anthropic"])
def test_batch_bodies_equal_the_live_bodies(study, batch_endpoint, make_toolkit, fake_provider, provider):
    toolkit = make_toolkit(study, 2, slots={"name": ["Kelly", "Joseph"]}, texts=["A letter for {name}.", "A story."])
    endpoint = batch_endpoint(study, provider)
    live = runs.create_run(
        study,
        name="live",
        toolkit=toolkit,
        endpoints=[endpoint],
        trials=2,
        system_prompt="Be brief.",
        param_overrides={"temperature": 0.3},
    )
    runs.start(live)
    live_bodies = {}
    for request in fake_provider.requests:
        live_bodies.setdefault(prompt_of(request["body"]), []).append(request["body"])
    assert sum(map(len, live_bodies.values())) == 6

    batched = runs.create_run(
        study,
        name="batched",
        toolkit=toolkit,
        endpoints=[endpoint],
        trials=2,
        system_prompt="Be brief.",
        param_overrides={"temperature": 0.3},
        execution_mode="batch",
    )
    fake_provider.batches.hold = True
    runs.start(batched)
    submitted = fake_provider.batches.bodies()
    assert len(submitted) == 6
    outputs = {batch_format.custom_id(f"output:{o.pk}"): o for o in Output.objects.filter(run=batched)}
    assert set(submitted) == set(outputs)  # each unit's id is its custom_id
    for cid, body in submitted.items():
        assert body in live_bodies[outputs[cid].prompt_text]
        assert body["temperature"] == 0.3 and body["max_tokens"] == 120
    if provider != "anthropic":
        assert all(b["seed"] == 42 and b["top_k"] == 5 for b in submitted.values())


def test_units_split_at_the_limit_polled_matched_and_priced(
    study, batch_endpoint, make_toolkit, fake_provider, settings
):
    settings.BATCH_MAX_REQUESTS = 4
    toolkit = make_toolkit(study, 10)
    endpoint = batch_endpoint(
        study, input_price_per_mtok=2, output_price_per_mtok=8, batch_output_price_per_mtok=3
    )  # input at half of 2, output at the given 3
    run = batch_run(study, toolkit, [endpoint])
    fake_provider.batches.hold = True
    runs.start(run)
    run.refresh_from_db()
    rows = list(ProviderBatch.objects.filter(job_id=run.pk).order_by("number"))
    assert [r.request_count for r in rows] == [4, 4, 2] and all(r.status == "submitted" for r in rows)
    assert run.status == "running" and "Waiting for 3 batches" in run.message
    assert [c for c, _, _ in fake_provider.batches.created] == ["openai"] * 3
    assert not fake_provider.requests  # nothing went live

    assert batches.poll_open_batches() == {"polled": 3, "ended": 0}  # validating -> in_progress
    assert set(ProviderBatch.objects.values_list("status", flat=True)) == {"in_progress"}
    assert batches.poll_open_batches()["ended"] == 0  # held
    fake_provider.batches.release()
    assert batches.poll_open_batches() == {"polled": 3, "ended": 3}
    run.refresh_from_db()
    assert run.status == "completed"
    outputs = Output.objects.filter(run=run)
    assert outputs.filter(status="done").count() == 10
    calls = ProviderCall.objects.filter(output__run=run)
    assert calls.count() == 10 and set(calls.values_list("outcome", flat=True)) == {"ok"}
    for output in outputs:
        call = output.calls.get()
        assert call.custom_id == f"output-{output.pk}" and call.batch_id in {r.provider_batch_id for r in rows}
        assert output.text.endswith(output.prompt_text)
        expected = (Decimal(output.input_tokens) * 1 + Decimal(output.output_tokens) * 3) / Decimal(1_000_000)
        assert output.cost_usd == expected.quantize(Decimal("0.000001")) == call.cost_usd
    summary = batches.summary("generation.run", run.pk)
    assert summary["cost_usd"] == sum(o.cost_usd for o in outputs) and summary["open"] == 0
    assert batches.poll_open_batches() == {"polled": 0, "ended": 0}  # nothing collected twice
    assert ProviderCall.objects.filter(output__run=run).count() == 10


def test_errors_and_expired_requests_go_back_to_pending_and_out_again(
    study, batch_endpoint, make_toolkit, fake_provider
):
    toolkit = make_toolkit(study, 4, texts=["fine one", "bad one", "late one", "fine two"])
    endpoint = batch_endpoint(study, "anthropic")
    fake_provider.script([{"status": 500, "message": "overloaded"}], match="bad")
    fake_provider.script([{"expire": True}], match="late")
    run = batch_run(study, toolkit, [endpoint])
    runs.start(run)
    batches.poll_open_batches()
    run.refresh_from_db()
    outputs = Output.objects.filter(run=run)
    assert set(outputs.filter(status="done").values_list("prompt_text", flat=True)) == {"fine one", "fine two"}
    assert set(outputs.filter(status="pending").values_list("prompt_text", flat=True)) == {"bad one", "late one"}
    assert run.status == "running" and "Waiting for 1 batches" in run.message  # the two went out again at once
    bad = outputs.get(prompt_text="bad one").calls.get()
    assert bad.outcome == "error" and "overloaded" in bad.error and bad.batch_id
    assert "expired" in outputs.get(prompt_text="late one").calls.get().error
    row = ProviderBatch.objects.filter(job_id=run.pk).order_by("number").first()
    assert (row.status, row.succeeded, row.errored) == ("ended", 2, 2)

    assert [len(items) for _, _, items in fake_provider.batches.created] == [4, 2]  # no Resume needed
    batches.poll_open_batches()
    run.refresh_from_db()
    assert run.status == "completed" and outputs.filter(status="done").count() == 4
    assert outputs.get(prompt_text="bad one").calls.order_by("attempt").last().attempt == 2


def test_expired_batch_and_live_retry(study, batch_endpoint, make_toolkit, fake_provider):
    toolkit = make_toolkit(study, 3)
    endpoint = batch_endpoint(study, max_attempts=1)  # no batch retry: the expired units fail
    run = batch_run(study, toolkit, [endpoint])
    fake_provider.batches.hold = True
    runs.start(run)
    batches.poll_open_batches()
    fake_provider.batches.expire_all()
    batches.poll_open_batches()
    assert ProviderBatch.objects.get(job_id=run.pk).status == "expired"
    assert Output.objects.filter(run=run, status="failed", error__startswith="Gave up after 1 attempts").count() == 3
    runs.set_mode(GenerationRun.objects.get(pk=run.pk), "live")
    runs.retry_failed(GenerationRun.objects.get(pk=run.pk))
    assert Output.objects.filter(run=run, status="done").count() == 3 and len(fake_provider.requests) == 3


def test_cancel_cancels_open_batches_at_the_provider(study, batch_endpoint, make_toolkit, fake_provider, settings):
    settings.BATCH_MAX_REQUESTS = 2
    toolkit = make_toolkit(study, 4)
    run = batch_run(study, toolkit, [batch_endpoint(study)])
    fake_provider.batches.hold = True
    runs.start(run)
    ids = list(ProviderBatch.objects.filter(job_id=run.pk).values_list("provider_batch_id", flat=True))
    runs.cancel(GenerationRun.objects.get(pk=run.pk))
    assert sorted(fake_provider.batches.cancelled) == sorted(ids)
    assert set(ProviderBatch.objects.values_list("status", flat=True)) == {"cancelling"}
    batches.poll_open_batches()
    assert set(ProviderBatch.objects.values_list("status", flat=True)) == {"cancelled"}
    assert GenerationRun.objects.get(pk=run.pk).status == "cancelled"
    assert Output.objects.filter(run=run, status="pending").count() == 4


def test_a_submission_cut_short_is_found_again_not_resubmitted(
    study, batch_endpoint, make_toolkit, fake_provider, monkeypatch
):
    toolkit = make_toolkit(study, 3)
    run = batch_run(study, toolkit, [batch_endpoint(study)])
    real_submit = OpenAIBatchAPI.submit

    class Crash(BaseException):
        pass

    def submit_then_crash(self, lines, metadata):
        real_submit(self, lines, metadata)
        raise Crash  # the provider accepted the batch; the worker died before writing its id

    monkeypatch.setattr(OpenAIBatchAPI, "submit", submit_then_crash)
    with pytest.raises(Crash):
        runs.start(run)
    monkeypatch.setattr(OpenAIBatchAPI, "submit", real_submit)
    row = ProviderBatch.objects.get(job_id=run.pk)
    assert row.status == "submitting" and not row.provider_batch_id
    runs.resume(GenerationRun.objects.get(pk=run.pk))  # the units are held by the submitting row
    assert len(fake_provider.batches.created) == 1
    ProviderBatch.objects.filter(pk=row.pk).update(created_at=row.created_at - batches.timedelta(minutes=20))
    batches.poll_open_batches()  # adopts the provider's batch by its metadata
    row.refresh_from_db()
    assert row.status == "submitted" and row.provider_batch_id == fake_provider.batches.created[0][1]
    batches.poll_open_batches()
    batches.poll_open_batches()
    assert Output.objects.filter(run=run, status="done").count() == 3
    assert len(fake_provider.batches.created) == 1 and GenerationRun.objects.get(pk=run.pk).status == "completed"


def test_every_row_is_written_before_the_first_upload_and_a_late_batch_is_withdrawn(
    study, batch_endpoint, make_toolkit, fake_provider, monkeypatch, settings
):
    settings.BATCH_MAX_REQUESTS = 2
    toolkit = make_toolkit(study, 5)
    run = batch_run(study, toolkit, [batch_endpoint(study)])
    real_submit = OpenAIBatchAPI.submit
    seen = []

    def submit(self, lines, metadata):
        seen.append(sorted(ProviderBatch.objects.filter(job_id=run.pk).values_list("status", flat=True)))
        if len(seen) == 2:  # recovery gives this row up while its upload is under way
            ProviderBatch.objects.filter(pk=int(metadata["stereoscope_batch"])).update(status=BatchStatus.FAILED)
        return real_submit(self, lines, metadata)

    monkeypatch.setattr(OpenAIBatchAPI, "submit", submit)
    fake_provider.batches.hold = True
    runs.start(run)
    assert seen[0] == ["submitting"] * 3  # all three parts hold their units before anything is sent
    second = fake_provider.batches.created[1][1]
    assert fake_provider.batches.cancelled == [second]  # the late batch was withdrawn at the provider
    assert list(ProviderBatch.objects.filter(job_id=run.pk).order_by("number").values_list("status", flat=True)) == [
        "submitted",
        "failed",
        "submitted",
    ]


def test_batch_mode_needs_endpoints_that_allow_it(study, make_endpoint, make_toolkit, batch_endpoint, fake_provider):
    toolkit = make_toolkit(study, 1)
    allowed = batch_endpoint(study)
    run = batch_run(study, toolkit, [allowed])
    allowed.batch_enabled = False
    allowed.save()
    with pytest.raises(runs.RunError, match="no longer allows batch mode"):
        runs.start(run)
    assert not Output.objects.filter(run=run).exists() and not fake_provider.batches.created
    GenerationRun.objects.all().delete()
    endpoint = make_endpoint(study, "openai")
    with pytest.raises(runs.RunError, match="Batch mode is not allowed on"):
        batch_run(study, toolkit, [endpoint])
    assert not GenerationRun.objects.exists()
    with pytest.raises(runs.RunError, match="Unknown execution mode"):
        runs.create_run(study, name="x", toolkit=toolkit, endpoints=[endpoint], execution_mode="turbo")


def test_a_request_larger_than_a_batch_fails_with_the_reason(
    study, batch_endpoint, make_toolkit, fake_provider, settings
):
    settings.BATCH_MAX_BYTES = 300
    toolkit = make_toolkit(study, 2, texts=["short", "long " * 100])
    run = batch_run(study, toolkit, [batch_endpoint(study)])
    runs.start(run)
    long = Output.objects.get(run=run, prompt_text__startswith="long")
    assert long.status == "failed" and "more than a batch may hold" in long.error and "live mode" in long.error
    assert [len(items) for _, _, items in fake_provider.batches.created] == [1]  # the short one still goes
    batches.poll_open_batches()
    batches.poll_open_batches()
    assert Output.objects.get(run=run, prompt_text="short").status == "done"
    assert GenerationRun.objects.get(pk=run.pk).status == "completed"


def test_split_at_request_count_and_size():
    assert batch_format.split([10] * 5, 2, 1000) == [(0, 2), (2, 4), (4, 5)]
    assert batch_format.split([400, 400, 400], 10, 800) == [(0, 2), (2, 3)]
    assert batch_format.split([], 2, 100) == []
    with pytest.raises(ValueError, match="more than a batch may hold"):
        batch_format.split([10, 101], 5, 100)
    assert batch_format.custom_id("output:12") == "output-12"
