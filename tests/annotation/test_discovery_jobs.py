"""Code discovery as a job on the one engine: one request (unit) per endpoint and group of sampled stories, run live
or through the providers' batch APIs (the fake batch service, through the real SDKs), with cancel, resume and
retry; suggestions stored for the researcher to review, as before."""

import json
import random
from decimal import Decimal

import pytest

from annotation import discovery as disc
from annotation import services
from annotation.models import CodeDiscovery, CodeSuggestion, DiscoveryRequest
from generation import selectors
from generation.models import Output, ProviderBatch, ProviderCall
from generation.runs import batch_format, batches
from generation.runs.providers.batch_api import OpenAIBatchAPI
from stereoscope import jobs

from .test_discovery import CODES, discovery_env  # noqa: F401

pytestmark = pytest.mark.django_db
ANSWER = "```json\n" + json.dumps(CODES) + "\n```"


def _batch_endpoints(e, make_endpoint):
    """An OpenAI and an Anthropic endpoint that allow batch mode, with prices."""
    return [
        make_endpoint(
            e["study"],
            provider,
            name=f"{provider}-disc",
            model_id=f"{provider}-disc-model",
            batch_enabled=True,
            default_params={"temperature": 0.2, "max_tokens": 900},
            input_price_per_mtok=2,
            output_price_per_mtok=8,
        )
        for provider in ("openai", "anthropic")
    ]


def _start(e, endpoints, mode="live", groups=2, seed=3):
    return services.start_discovery(
        e["study"],
        e["cb"],
        endpoints=endpoints,
        item=e["item"],
        sample_size=3,
        seed=seed,
        story_groups=groups,
        execution_mode=mode,
        actor=e["u"]["researcher"],
    )


def test_live_discovery_through_the_engine_gives_the_same_suggestions(
    discovery_env,  # noqa: F811
    fake_provider,
    django_capture_on_commit_callbacks,
):
    e = discovery_env
    fake_provider.script([{"text": ANSWER}])
    with django_capture_on_commit_callbacks(execute=True):
        d = services.start_discovery(
            e["study"],
            e["cb"],
            endpoint=e["endpoint"],
            item=e["item"],
            sample_size=5,
            seed=3,
            actor=e["u"]["researcher"],
        )
    d = CodeDiscovery.objects.get(pk=d.pk)
    assert d.status == "completed" and d.message == "", d.message
    assert d.execution_mode == "live" and d.finished_at and d.progress.get("heartbeat")
    assert jobs.chunk_counts(services.DISCOVERY_JOB, d.pk)["pending"] == 0
    # the sample and the prompt are the ones the synchronous call used: sorted(Random(seed).sample(ids, n))
    ids = sorted(o.pk for o in e["outs"])
    chosen = sorted(random.Random(3).sample(ids, 5))
    request = d.requests.get()
    assert request.output_ids == chosen and request.status == "done"
    texts = dict(Output.objects.filter(pk__in=chosen).values_list("pk", "text"))
    expected_messages = disc.build_messages(e["item"].text, e["item"].target_stereotype, [texts[i] for i in chosen])
    assert request.messages == expected_messages == fake_provider.requests[-1]["body"]["messages"]
    got = [
        {"name": s.name, "description": s.description, "gender_tag": s.gender_tag, "example": s.example}
        for s in d.suggestions.order_by("order")
    ]
    assert got == disc.parse_suggestions(ANSWER) and len(got) == 12
    assert all(s.request_id == request.pk and s.status == "pending" for s in d.suggestions.all())
    call = request.provider_call
    assert call.purpose == "discovery" and call.ok and not call.batch_id and call.unit_ref == request.unit_ref
    assert services.DISCOVERY_JOB.pending_keys(d) == [] and jobs.execute(services.DISCOVERY_JOB, d.pk) is None
    assert len(fake_provider.requests) == 1  # nothing is asked twice


def test_batch_bodies_equal_the_live_ones_and_suggestions_come_back_at_batch_prices(
    discovery_env,  # noqa: F811
    make_endpoint,
    fake_provider,
    django_capture_on_commit_callbacks,
):
    e = discovery_env
    endpoints = _batch_endpoints(e, make_endpoint)
    fake_provider.default = {"text": ANSWER}
    with django_capture_on_commit_callbacks(execute=True):
        live = _start(e, endpoints, "live")
    live_bodies = {}
    for r in fake_provider.requests:
        live_bodies.setdefault(r["body"]["model"], []).append(r["body"])
    assert sum(map(len, live_bodies.values())) == 4  # two endpoints × two groups of stories
    assert CodeDiscovery.objects.get(pk=live.pk).status == "completed"

    fake_provider.batches.hold = True
    with django_capture_on_commit_callbacks(execute=True):
        batched = _start(e, endpoints, "batch")
    batched.refresh_from_db()
    assert batched.status == "running" and "Waiting for 2 batches" in batched.message, batched.message
    assert len(fake_provider.requests) == 4  # nothing more went live
    submitted = fake_provider.batches.bodies()
    units = {batch_format.custom_id(r.unit_ref): r for r in batched.requests.select_related("endpoint")}
    assert set(submitted) == set(units) and len(units) == 4
    for cid, body in submitted.items():
        assert body in live_bodies[units[cid].endpoint.model_id]  # the very body live mode sent for that unit
    assert [r.output_ids for r in batched.requests.order_by("number")] == [
        r.output_ids for r in live.requests.order_by("number")
    ]

    batches.poll_open_batches()
    fake_provider.batches.release()
    batches.poll_open_batches()
    batched.refresh_from_db()
    assert batched.status == "completed", batched.message
    assert batched.suggestions.count() == 48 and set(batched.requests.values_list("status", flat=True)) == {"done"}
    for request in batched.requests.select_related("provider_call"):
        call = request.provider_call
        assert call.batch_id and call.custom_id == batch_format.custom_id(request.unit_ref)
        expected = (Decimal(call.input_tokens) * 1 + Decimal(call.output_tokens) * 4) / Decimal(1_000_000)
        assert call.cost_usd == expected.quantize(Decimal("0.000001"))  # half price: batch prices by default
    summary = batches.summary(services.DISCOVERY_JOB.name, batched.pk)
    assert summary["open"] == 0 and summary["cost_usd"] == sum(
        r.provider_call.cost_usd for r in batched.requests.select_related("provider_call")
    )


def test_errors_and_expired_requests_go_back_to_pending_and_out_again(
    discovery_env,  # noqa: F811
    make_endpoint,
    fake_provider,
    django_capture_on_commit_callbacks,
):
    e = discovery_env
    endpoints = _batch_endpoints(e, make_endpoint)
    fake_provider.default = {"text": ANSWER}
    with django_capture_on_commit_callbacks(execute=True):
        d = _start(e, endpoints[:1], "batch", groups=2)
    first, second = d.requests.order_by("number")
    fake_provider.script([{"status": 500, "message": "overloaded"}], match=_story_of(first))
    fake_provider.script([{"expire": True}], match=_story_of(second))
    # the script is read when the batch ends: both requests come back without an answer, and go out again at once
    with django_capture_on_commit_callbacks(execute=True):
        batches.poll_open_batches()
        batches.poll_open_batches()
    d.refresh_from_db()
    assert set(d.requests.values_list("status", flat=True)) == {"pending"}
    assert d.status == "running" and "Waiting for 1 batches" in d.message, d.message
    calls = ProviderCall.objects.filter(purpose="discovery", unit_ref__in=[first.unit_ref, second.unit_ref])
    assert calls.count() == 2 and all(c.batch_id and not c.ok for c in calls)
    assert "overloaded" in calls.get(unit_ref=first.unit_ref).error
    assert "expired" in calls.get(unit_ref=second.unit_ref).error
    first_batch = ProviderBatch.objects.filter(job_id=d.pk).order_by("number").first()
    assert (first_batch.succeeded, first_batch.errored) == (0, 2)
    assert [len(items) for _, _, items in fake_provider.batches.created] == [2, 2]  # no Resume needed
    batches.poll_open_batches()
    batches.poll_open_batches()
    d.refresh_from_db()
    assert d.status == "completed" and d.suggestions.count() == 24, d.message
    assert calls.filter(unit_ref=first.unit_ref).order_by("attempt").last().attempt == 2


def _story_of(request):
    """A text only this request's prompt holds: the first story of its group."""
    return Output.objects.get(pk=request.output_ids[0]).text


def test_a_crash_after_submission_does_not_submit_again(
    discovery_env,  # noqa: F811
    make_endpoint,
    fake_provider,
    monkeypatch,
    django_capture_on_commit_callbacks,
):
    e = discovery_env
    endpoints = _batch_endpoints(e, make_endpoint)
    fake_provider.default = {"text": ANSWER}
    real_submit = OpenAIBatchAPI.submit

    class Crash(BaseException):
        pass

    def submit_then_crash(self, lines, metadata):
        real_submit(self, lines, metadata)
        raise Crash  # the provider has the batch; the worker died before writing its id

    monkeypatch.setattr(OpenAIBatchAPI, "submit", submit_then_crash)
    with pytest.raises(Crash), django_capture_on_commit_callbacks(execute=True):
        d = _start(e, endpoints[:1], "batch")
    monkeypatch.setattr(OpenAIBatchAPI, "submit", real_submit)
    d = CodeDiscovery.objects.get()
    row = ProviderBatch.objects.get(job_kind="annotation.discovery", job_id=d.pk)
    assert row.status == "submitting" and not row.provider_batch_id
    services.resume_discovery(d)  # its requests are held by the submitting row: nothing new goes out
    assert len(fake_provider.batches.created) == 1 and not fake_provider.requests
    ProviderBatch.objects.filter(pk=row.pk).update(created_at=row.created_at - batches.timedelta(minutes=20))
    batches.poll_open_batches()  # adopts the provider's batch by its metadata
    row.refresh_from_db()
    assert row.status == "submitted" and row.provider_batch_id == fake_provider.batches.created[0][1]
    batches.poll_open_batches()
    batches.poll_open_batches()
    d.refresh_from_db()
    assert d.status == "completed" and d.suggestions.count() == 24, d.message
    assert len(fake_provider.batches.created) == 1 and ProviderCall.objects.filter(purpose="discovery").count() == 2


def test_cancel_cancels_open_batches_and_retry_asks_the_failed_again(
    discovery_env,  # noqa: F811
    make_endpoint,
    fake_provider,
    django_capture_on_commit_callbacks,
):
    e = discovery_env
    endpoints = _batch_endpoints(e, make_endpoint)
    fake_provider.batches.hold = True
    with django_capture_on_commit_callbacks(execute=True):
        d = _start(e, endpoints, "batch", groups=1)
    ids = sorted(ProviderBatch.objects.filter(job_id=d.pk).values_list("provider_batch_id", flat=True))
    services.cancel_discovery(CodeDiscovery.objects.get(pk=d.pk))
    assert sorted(fake_provider.batches.cancelled) == ids
    batches.poll_open_batches()
    assert CodeDiscovery.objects.get(pk=d.pk).status == "cancelled"
    assert set(d.requests.values_list("status", flat=True)) == {"pending"}
    with pytest.raises(services.AnnotationError, match="already cancelled"):
        services.cancel_discovery(CodeDiscovery.objects.get(pk=d.pk))

    # live: one endpoint answers, the other fails; retry asks only the failed one
    fake_provider.batches.hold = False
    fake_provider.script([{"text": ANSWER}], match=None)
    fake_provider.script([{"status": 400, "message": "bad request"}], match=None)
    with django_capture_on_commit_callbacks(execute=True):
        live = _start(e, endpoints, "live", groups=1)
    live.refresh_from_db()
    assert live.status == "completed" and "1 of 2 requests failed" in live.message, live.message
    assert live.requests.filter(status="failed").count() == 1
    with pytest.raises(services.AnnotationError, match="No failed requests"):
        services.retry_discovery(CodeDiscovery.objects.get(pk=d.pk))
    fake_provider.script([{"text": ANSWER}])
    services.retry_discovery(CodeDiscovery.objects.get(pk=live.pk))
    live.refresh_from_db()
    assert live.status == "completed" and live.message == "" and live.suggestions.count() == 24


@pytest.mark.parametrize("mode", ["live", "batch"])
def test_a_malformed_answer_is_a_clear_message_on_the_job(
    discovery_env,  # noqa: F811
    make_endpoint,
    fake_provider,
    client_for,
    api_for,
    mode,
    django_capture_on_commit_callbacks,
):
    e = discovery_env
    endpoint = _batch_endpoints(e, make_endpoint)[0]
    fake_provider.default = {"text": 'Sorry, {"codes": 5} [not json'}
    with django_capture_on_commit_callbacks(execute=True):
        d = _start(e, [endpoint], mode, groups=1)
    batches.poll_open_batches()
    batches.poll_open_batches()
    d = CodeDiscovery.objects.get(pk=d.pk)
    request = d.requests.get()
    assert d.status == "failed" and "held no list of codes" in d.message, d.message
    assert request.status == "failed" and "held no list of codes" in request.error
    assert request.response_text.startswith("Sorry")
    assert not CodeSuggestion.objects.exists()
    page = client_for(e["u"]["researcher"]).get(_page(e, d))
    assert page.status_code == 200 and "held no list of codes" in page.content.decode()
    got = api_for(e["u"]["researcher"]).get(f"/api/studies/{e['study'].pk}/code-discoveries/{d.pk}/")
    assert got.status_code == 200 and "held no list of codes" in got.json()["message"]


def _page(e, d):
    return f"/studies/{e['study'].pk}/coding/codebooks/{e['cb'].pk}/discover/{d.pk}/"


def test_roles_on_the_job_page_actions_and_api(
    discovery_env,  # noqa: F811
    make_endpoint,
    fake_provider,
    client_for,
    api_for,
    django_capture_on_commit_callbacks,
):
    e = discovery_env
    endpoints = _batch_endpoints(e, make_endpoint)
    fake_provider.batches.hold = True
    with django_capture_on_commit_callbacks(execute=True):
        d = _start(e, endpoints, "batch", groups=1)
    page, base = _page(e, d), f"/api/studies/{e['study'].pk}/code-discoveries/"
    for user, code in (("coder", 403), ("outsider", 404)):
        assert client_for(e["u"][user]).get(page).status_code == code
        assert client_for(e["u"][user]).post(page + "cancel/").status_code == code
        for action in ("cancel", "resume", "retry"):
            assert api_for(e["u"][user]).post(f"{base}{d.pk}/{action}/").status_code == code
        assert api_for(e["u"][user]).post(base, {}, format="json").status_code == code
    assert CodeDiscovery.objects.get(pk=d.pk).status == "running" and not fake_provider.batches.cancelled

    html = client_for(e["u"]["researcher"]).get(page).content.decode()
    assert 'id="job-batches"' in html and "Waiting for 2 batches" in html and 'id="discovery-requests"' in html
    assert ProviderBatch.objects.filter(job_id=d.pk).first().provider_batch_id in html
    r = api_for(e["u"]["researcher"]).get(f"{base}{d.pk}/")
    assert r.json()["execution_mode"] == "batch" and len(r.json()["batches"]) == 2 and len(r.json()["requests"]) == 2
    r = client_for(e["u"]["researcher"]).post(page + "cancel/", follow=True)
    assert r.status_code == 200 and len(fake_provider.batches.cancelled) == 2
    r = api_for(e["u"]["researcher"]).post(f"{base}{d.pk}/cancel/")
    assert r.status_code == 400 and "already" in r.json()["detail"]


def test_the_form_and_api_choose_the_mode(
    discovery_env,  # noqa: F811
    make_endpoint,
    fake_provider,
    client_for,
    api_for,
    django_capture_on_commit_callbacks,
):
    e = discovery_env
    endpoints = _batch_endpoints(e, make_endpoint)
    url = f"/studies/{e['study'].pk}/coding/codebooks/{e['cb'].pk}/discover/"
    html = client_for(e["u"]["researcher"]).get(url).content.decode()
    assert 'name="execution_mode"' in html and 'value="batch"' in html and 'name="story_groups"' in html
    fake_provider.batches.hold = True
    form = {"op": "start", "endpoints": [endpoints[0].pk], "item": e["item"].pk, "sample_size": 2}
    with django_capture_on_commit_callbacks(execute=True):
        r = client_for(e["u"]["researcher"]).post(url, dict(form, execution_mode="batch", story_groups=2))
    d = CodeDiscovery.objects.get()
    assert r.status_code == 302 and r["Location"].endswith(_page(e, d))
    assert d.execution_mode == "batch" and d.requests.count() == 2 and len(fake_provider.batches.created) == 1
    r = client_for(e["u"]["researcher"]).post(
        url, dict(form, endpoints=[e["endpoint"].pk], execution_mode="batch"), follow=True
    )
    assert r.status_code == 200 and "Batch mode is not allowed on" in r.content.decode()
    assert CodeDiscovery.objects.count() == 1
    base = f"/api/studies/{e['study'].pk}/code-discoveries/"
    api = api_for(e["u"]["researcher"])
    payload = {"codebook": e["cb"].pk, "item": e["item"].pk, "sample_size": 2}
    r = api.post(base, dict(payload, endpoint=e["endpoint"].pk, execution_mode="batch"), format="json")
    assert r.status_code == 400 and "Batch mode is not allowed on" in r.json()["detail"]
    r = api.post(base, dict(payload, endpoints=[endpoints[1].pk], execution_mode="turbo"), format="json")
    assert r.status_code == 400 and "Unknown execution mode" in r.json()["detail"]
    with django_capture_on_commit_callbacks(execute=True):
        r = api.post(base, dict(payload, endpoints=[endpoints[1].pk], execution_mode="batch"), format="json")
    assert r.status_code == 201 and r.json()["execution_mode"] == "batch"
    assert CodeDiscovery.objects.get(pk=r.json()["id"]).status == "running" and len(fake_provider.batches.created) == 2
    assert DiscoveryRequest.objects.filter(discovery_id=r.json()["id"], endpoint=endpoints[1]).count() == 1


def test_a_queued_discovery_with_no_worker_is_a_stalled_job(discovery_env, client_for, settings):  # noqa: F811
    from stereoscope.health import waiting_jobs_without_worker

    e = discovery_env
    settings.CELERY_TASK_ALWAYS_EAGER = False
    d = _start(e, [e["endpoint"]], groups=1)  # its task would go out on commit: no worker ever takes it
    assert d.status == "queued"
    assert {(j["kind"], j["id"]) for j in waiting_jobs_without_worker()} == {("code discovery", d.pk)}
    html = client_for(e["u"]["researcher"]).get(_page(e, d)).content.decode()
    assert "Stalled — no live worker" in html and 'id="discovery-requests"' in html


def test_the_form_and_api_refuse_an_endpoint_of_another_study_or_not_a_number(
    discovery_env,  # noqa: F811
    roles,
    make_endpoint,
    client_for,
    api_for,
):
    e = discovery_env
    foreign = make_endpoint(roles["b"], name="b-model")
    assert selectors.endpoints_by_id(e["study"], [str(e["endpoint"].pk), foreign.pk, "x"]) == [e["endpoint"]]
    url = f"/studies/{e['study'].pk}/coding/codebooks/{e['cb'].pk}/discover/"
    form = {"op": "start", "item": e["item"].pk, "sample_size": 2}
    for wanted in ([e["endpoint"].pk, foreign.pk], [e["endpoint"].pk, "x"]):
        r = client_for(e["u"]["researcher"]).post(url, dict(form, endpoints=wanted), follow=True)
        assert r.status_code == 200 and "Choose a model endpoint of this study." in r.content.decode()
    base = f"/api/studies/{e['study'].pk}/code-discoveries/"
    payload = {"codebook": e["cb"].pk, "item": e["item"].pk, "endpoints": [e["endpoint"].pk, foreign.pk]}
    r = api_for(e["u"]["researcher"]).post(base, payload, format="json")
    assert r.status_code == 400 and f"No endpoint {foreign.pk} in this study." in r.json()["detail"]
    assert CodeDiscovery.objects.count() == 0
