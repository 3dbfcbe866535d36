"""Batch mode on the pages and the API: endpoint settings, the run form's choice, the dry run with live and batch
cost side by side, the run page's batches and Cancel at the provider, roles."""

from decimal import Decimal

import pytest

from generation.models import GenerationRun, ModelEndpoint, ProviderBatch
from generation.runs import batches

pytestmark = pytest.mark.django_db


def url(study, path):
    return f"/studies/{study.pk}/{path}"


def api(study, path):
    return f"/api/studies/{study.pk}/{path}"


def test_endpoint_batch_settings_over_api(roles, api_for):
    from tests.generation.runs.conftest import approved_connection

    study = roles["a"]
    approved_connection("openai", "", "OPENAI_API_KEY", name="OpenAI")
    c = api_for(roles["users"]["researcher"])
    body = {
        "name": "gpt",
        "connection": "OpenAI",
        "model_id": "gpt-4o",
        "batch_enabled": True,
        "input_price_per_mtok": "2.5",
        "output_price_per_mtok": "10",
        "batch_input_price_per_mtok": "1.25",
        "batch_output_price_per_mtok": "5",
    }
    response = c.post(api(study, "endpoints/"), body, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["batch_enabled"] is True and response.json()["batch_output_price_per_mtok"] == "5.0000"
    local = {**{k: v for k, v in body.items() if k != "connection"}, "name": "local", "provider": "transformers"}
    local["model_id"] = "models/tiny"
    response = c.post(api(study, "endpoints/"), local, format="json")
    assert response.status_code == 400 and "Batch mode needs a provider with a batch API" in str(response.json())
    bad = dict(body, name="bad", batch_input_price_per_mtok="-1")
    assert c.post(api(study, "endpoints/"), bad, format="json").status_code == 400
    assert list(ModelEndpoint.objects.values_list("name", flat=True)) == ["gpt"]


def test_batch_run_over_api_plan_status_cancel(roles, api_for, make_endpoint, make_toolkit, fake_provider):
    study = roles["a"]
    toolkit = make_toolkit(study, 3)
    endpoint = make_endpoint(
        study,
        "openai",
        batch_enabled=True,
        input_price_per_mtok=2,
        output_price_per_mtok=4,
        default_params={"max_tokens": 100},
    )
    plain = make_endpoint(study, "openai")
    c = api_for(roles["users"]["researcher"])
    refused = c.post(
        api(study, "runs/"),
        {"name": "no", "toolkit": toolkit.pk, "endpoints": [plain.pk], "execution_mode": "batch"},
        format="json",
    )
    assert refused.status_code == 400 and "Batch mode is not allowed" in str(refused.json())
    response = c.post(
        api(study, "runs/"),
        {"name": "b", "toolkit": toolkit.pk, "endpoints": [endpoint.pk], "execution_mode": "batch"},
        format="json",
    )
    assert response.status_code == 201 and response.json()["execution_mode"] == "batch"
    run_id = response.json()["id"]
    plan = c.get(api(study, f"runs/{run_id}/plan/")).json()
    assert Decimal(plan["totals"]["batch_cost_usd"]) * 2 == Decimal(plan["totals"]["cost_usd"])
    assert plan["endpoints"][0]["batch_allowed"] is True
    fake_provider.batches.hold = True
    status = c.post(api(study, f"runs/{run_id}/start/")).json()
    assert status["status"] == "running" and len(status["batches"]) == 1
    batch = status["batches"][0]
    assert batch["status"] == "submitted" and batch["requests"] == 3 and batch["provider_batch_id"]
    assert Decimal(status["batch_cost"]["estimated_usd"]) > 0
    coder = api_for(roles["users"]["coder"])
    assert coder.post(api(study, f"runs/{run_id}/cancel/")).status_code == 403
    assert fake_provider.batches.cancelled == []
    status = c.post(api(study, f"runs/{run_id}/cancel/")).json()
    assert status["batches"][0]["status"] == "cancelling"
    assert fake_provider.batches.cancelled == [batch["provider_batch_id"]]


def test_pages_show_batch_choice_dry_run_and_batches(roles, client_for, make_endpoint, make_toolkit, fake_provider):
    study = roles["a"]
    toolkit = make_toolkit(study, 2)
    endpoint = make_endpoint(study, "anthropic", batch_enabled=True, input_price_per_mtok=3, output_price_per_mtok=15)
    researcher = client_for(roles["users"]["researcher"])
    page = researcher.get(url(study, "runs/new/")).content.decode()
    assert 'name="execution_mode"' in page and "Batch (provider batch API" in page
    response = researcher.post(
        url(study, "runs/new/"),
        {"name": "paged", "toolkit": toolkit.pk, "endpoints": [endpoint.pk], "trials": 1, "execution_mode": "batch"},
    )
    run = GenerationRun.objects.get(name="paged")
    assert response.status_code == 302 and run.execution_mode == "batch"
    plan = researcher.get(url(study, f"runs/{run.pk}/plan/")).content.decode()
    assert "estimated cost, live" in plan and "estimated cost, batch mode" in plan and "Batch cost (USD)" in plan
    fake_provider.batches.hold = True
    researcher.post(url(study, f"runs/{run.pk}/start/"))
    row = ProviderBatch.objects.get(job_id=run.pk)
    batches.poll_open_batches()
    ProviderBatch.objects.filter(pk=row.pk).update(error="<script>alert(1)</script>")
    coder_page = client_for(roles["users"]["coder"]).get(url(study, f"runs/{run.pk}/")).content.decode()
    assert 'id="job-batches"' in coder_page and row.provider_batch_id in coder_page and "In progress" in coder_page
    assert "processing 2" in coder_page and "<script>alert(1)</script>" not in coder_page
    assert "every 15s" in coder_page  # the page refreshes while batches are open
    assert client_for(roles["users"]["coder"]).post(url(study, f"runs/{run.pk}/cancel/")).status_code == 403
    researcher.post(url(study, f"runs/{run.pk}/cancel/"))
    assert fake_provider.batches.cancelled == [row.provider_batch_id]
    batches.poll_open_batches()
    page = researcher.get(url(study, f"runs/{run.pk}/")).content.decode()
    assert "Cancelled" in page and "Switch to live mode" in page
    researcher.post(url(study, f"runs/{run.pk}/to-live/"))
    assert GenerationRun.objects.get(pk=run.pk).execution_mode == "live"


def test_switch_mode_over_api(roles, api_for, make_endpoint, make_toolkit):
    study = roles["a"]
    toolkit = make_toolkit(study, 1)
    allowed = make_endpoint(study, "openai", batch_enabled=True)
    plain = make_endpoint(study, "openai")
    c = api_for(roles["users"]["researcher"])
    run_id = c.post(
        api(study, "runs/"), {"name": "m", "toolkit": toolkit.pk, "endpoints": [allowed.pk]}, format="json"
    ).json()["id"]
    assert (
        api_for(roles["users"]["coder"])
        .post(api(study, f"runs/{run_id}/mode/"), {"execution_mode": "batch"}, format="json")
        .status_code
        == 403
    )
    response = c.post(api(study, f"runs/{run_id}/mode/"), {"execution_mode": "turbo"}, format="json")
    assert response.status_code == 400 and "Unknown execution mode" in response.json()["detail"]
    response = c.post(api(study, f"runs/{run_id}/mode/"), {"execution_mode": "batch"}, format="json")
    assert response.status_code == 200 and response.json()["execution_mode"] == "batch"
    other = c.post(
        api(study, "runs/"), {"name": "p", "toolkit": toolkit.pk, "endpoints": [plain.pk]}, format="json"
    ).json()["id"]
    response = c.post(api(study, f"runs/{other}/mode/"), {"execution_mode": "batch"}, format="json")
    assert response.status_code == 400 and "not allowed on" in response.json()["detail"]
    assert GenerationRun.objects.get(pk=other).execution_mode == "live"
