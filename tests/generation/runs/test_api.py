"""REST API: endpoints (never a key), runs (create, plan, start, cancel, resume, retry, status), outputs (filters,
detail with attempts). Roles: outsider 404, lower role 403. Bad input: 400 with a clear message, nothing saved."""

import pytest

from generation.models import GenerationRun, ModelEndpoint, Output
from generation.runs import services as runs

pytestmark = pytest.mark.django_db


def api(study, path):
    return f"/api/studies/{study.pk}/{path}"


def test_endpoint_crud_and_key_never_shown(roles, api_for, monkeypatch):
    from tests.generation.runs.conftest import approved_connection

    study = roles["a"]
    monkeypatch.setenv("API_TEST_KEY", "sk-api-secret-987")
    approved_connection("anthropic", "", "API_TEST_KEY", name="Anthropic lab key")
    c = api_for(roles["users"]["researcher"])
    body = {
        "name": "claude",
        "connection": "Anthropic lab key",
        "model_id": "claude-x",
        "default_params": {"temperature": 0, "max_tokens": 300},
        "max_concurrency": 4,
    }
    response = c.post(api(study, "endpoints/"), body, format="json")
    assert response.status_code == 201, response.json()
    data = response.json()
    assert data["key_is_set"] is True and data["connection"] == "Anthropic lab key"
    assert data["provider"] == "anthropic" and "api_key_env" not in data and "base_url" not in data
    assert "sk-api-secret-987" not in response.content.decode()
    pk = data["id"]
    response = c.patch(api(study, f"endpoints/{pk}/"), {"default_params": {"temprature": 1}}, format="json")
    assert response.status_code == 400 and "Unknown parameter" in str(response.json())
    assert ModelEndpoint.objects.get(pk=pk).default_params == {"temperature": 0, "max_tokens": 300}
    response = c.patch(api(study, f"endpoints/{pk}/"), {"max_concurrency": 9}, format="json")
    assert response.status_code == 200 and response.json()["max_concurrency"] == 9
    listing = c.get(api(study, "endpoints/"))
    assert listing.status_code == 200 and "sk-api-secret-987" not in listing.content.decode()
    assert api_for(roles["users"]["coder"]).get(api(study, "endpoints/")).status_code == 200
    assert api_for(roles["users"]["coder"]).post(api(study, "endpoints/"), body, format="json").status_code == 403
    assert api_for(roles["users"]["outsider"]).get(api(study, "endpoints/")).status_code == 404
    assert api_for(roles["users"]["b_admin"]).get(api(study, f"endpoints/{pk}/")).status_code == 404
    assert c.delete(api(study, f"endpoints/{pk}/")).status_code == 204


@pytest.mark.parametrize(
    "body,message",
    [
        ({"api_key_env": "OPENAI_API_KEY"}, "choose a provider connection"),
        ({"base_url": "http://127.0.0.1:9/v1"}, "choose a provider connection"),
        ({"connection": "no such connection"}, "No connection 'no such connection' is open to this study"),
        ({"default_params": "not json {"}, "JSON object"),
        ({"provider": "anthropic"}, "is for OpenAI, not anthropic"),
        ({"max_concurrency": -3}, ""),
    ],
)
def test_bad_endpoint_api_input(roles, api_for, body, message):
    from tests.generation.runs.conftest import approved_connection

    approved_connection("openai", "", "OPENAI_API_KEY", name="OpenAI")
    base = {"name": "e", "connection": "OpenAI", "model_id": "m", "max_concurrency": 2}
    response = api_for(roles["users"]["researcher"]).post(
        api(roles["a"], "endpoints/"), {**base, **body}, format="json"
    )
    assert response.status_code == 400 and message in str(response.json())
    assert not ModelEndpoint.objects.exists()


def test_run_lifecycle_over_api(roles, api_for, make_endpoint, make_toolkit, fake_provider):
    study = roles["a"]
    toolkit = make_toolkit(study, 2)
    endpoint = make_endpoint(study, max_attempts=1, input_price_per_mtok=1, output_price_per_mtok=1)
    c = api_for(roles["users"]["researcher"])
    response = c.post(
        api(study, "runs/"),
        {
            "name": "api run",
            "toolkit": toolkit.pk,
            "endpoints": [endpoint.pk],
            "trials": 2,
            "param_overrides": {"temperature": 0.3},
        },
        format="json",
    )
    assert response.status_code == 201, response.json()
    run_id = response.json()["id"]
    plan = c.get(api(study, f"runs/{run_id}/plan/")).json()
    assert plan["totals"]["calls"] == 4 and plan["endpoints"][0]["endpoint_id"] == endpoint.pk
    assert plan["sample"][0]["prompt"] == "Write a short story about item 1." and plan["totals"]["cost_usd"] is not None
    fake_provider.script([{"status": 500}], match="item 2")
    coder = api_for(roles["users"]["coder"])
    assert coder.post(api(study, f"runs/{run_id}/start/")).status_code == 403
    assert coder.get(api(study, f"runs/{run_id}/status/")).status_code == 200
    status = c.post(api(study, f"runs/{run_id}/start/")).json()
    assert status["status"] == "completed" and status["overall"]["done"] == 3 and status["overall"]["failed"] == 1
    assert status["per_endpoint"][0]["endpoint_id"] == endpoint.pk
    status = c.post(api(study, f"runs/{run_id}/retry_failed/")).json()
    assert status["overall"]["done"] == 4 and status["overall"]["failed"] == 0
    response = c.post(api(study, f"runs/{run_id}/retry_failed/"))
    assert response.status_code == 400 and "No failed units" in response.json()["detail"]
    response = c.post(api(study, f"runs/{run_id}/cancel/"))
    assert response.status_code == 400 and "already completed" in response.json()["detail"]
    assert api_for(roles["users"]["outsider"]).get(api(study, f"runs/{run_id}/status/")).status_code == 404

    outputs = coder.get(api(study, "outputs/"), {"run": run_id, "item": 2}).json()
    assert outputs["count"] == 2 and {o["item_number"] for o in outputs["results"]} == {2}
    failed_then_done = outputs["results"][0]["id"]
    detail = coder.get(api(study, f"outputs/{failed_then_done}/")).json()
    assert detail["calls"] and detail["provenance"]["params"]["temperature"] == 0.3
    assert coder.get(api(study, "outputs/"), {"status": "bogus"}).status_code == 400
    assert coder.get(api(study, "outputs/"), {"trial": "x"}).status_code == 400
    assert c.post(api(study, "outputs/"), {}).status_code == 405  # read-only
    assert api_for(roles["users"]["b_admin"]).get(api(study, f"outputs/{failed_then_done}/")).status_code == 404


@pytest.mark.parametrize(
    "body,message",
    [
        ({"toolkit": 999999}, "Unknown toolkit"),
        ({"endpoints": [999999]}, "Unknown endpoint"),
        ({"trials": 0}, "between 1"),
        ({"param_overrides": {"temprature": 2}}, "Unknown parameter"),
        ({"name": ""}, ""),
    ],
)
def test_bad_run_api_input(roles, api_for, make_endpoint, make_toolkit, body, message):
    study = roles["a"]
    base = {"name": "x", "toolkit": make_toolkit(study, 1).pk, "endpoints": [make_endpoint(study).pk]}
    response = api_for(roles["users"]["researcher"]).post(api(study, "runs/"), {**base, **body}, format="json")
    assert response.status_code == 400 and message in str(response.json())
    assert not GenerationRun.objects.exists()


def test_missing_key_at_start_over_api(roles, api_for, make_endpoint, make_toolkit, monkeypatch):
    study = roles["a"]
    endpoint = make_endpoint(study, "anthropic", api_key_env="NO_SUCH_KEY_VAR")
    monkeypatch.delenv("NO_SUCH_KEY_VAR", raising=False)
    run = runs.create_run(study, name="r", toolkit=make_toolkit(study, 1), endpoints=[endpoint])
    response = api_for(roles["users"]["researcher"]).post(api(study, f"runs/{run.pk}/start/"))
    assert response.status_code == 400 and "NO_SUCH_KEY_VAR" in response.json()["detail"]
    assert not Output.objects.exists()


def test_library_toolkit_usable_but_other_study_not(roles, api_for, make_endpoint, make_toolkit):
    from stereoscope.services import library_study

    study = roles["a"]
    library_toolkit = make_toolkit(library_study(), 1)
    endpoint = make_endpoint(study)
    c = api_for(roles["users"]["researcher"])
    ok = c.post(
        api(study, "runs/"), {"name": "lib", "toolkit": library_toolkit.pk, "endpoints": [endpoint.pk]}, format="json"
    )
    assert ok.status_code == 201
    foreign = c.post(
        api(study, "runs/"),
        {"name": "f", "toolkit": make_toolkit(roles["b"], 1).pk, "endpoints": [endpoint.pk]},
        format="json",
    )
    assert foreign.status_code == 400 and "Unknown toolkit" in str(foreign.json())
