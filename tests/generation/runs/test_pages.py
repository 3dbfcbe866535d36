"""Endpoint and run pages: role checks, validation with clear messages, start/cancel/resume/retry, progress."""

import pytest

from generation.models import GenerationRun, ModelEndpoint, Output

pytestmark = pytest.mark.django_db


def url(study, path):
    return f"/studies/{study.pk}/{path}"


ENDPOINT = {
    "name": "gpt",
    "model_id": "gpt-4o",
    "model_family": "openai",
    "default_params": '{"temperature": 0.7}',
    "max_concurrency": 4,
    "max_attempts": 3,
    "timeout_seconds": 30,
    "backoff_base_s": 1,
    "backoff_max_s": 10,
    "input_price_per_mtok": "2.5",
    "output_price_per_mtok": "10",
}


@pytest.fixture(autouse=True)
def lab_server(db):
    """The connection staff approved for the lab's OpenAI-compatible server; the form posts its id."""
    from tests.generation.runs.conftest import approved_connection

    connection = approved_connection("openai_compatible", "http://127.0.0.1:9/v1", "MY_KEY_VAR", name="Lab vLLM")
    ENDPOINT["connection"] = str(connection.pk)
    return connection


def test_endpoint_pages_roles(roles, client_for):
    study = roles["a"]
    for who, expected in [("outsider", 404), ("coder", 403), ("researcher", 200)]:
        assert client_for(roles["users"][who]).get(url(study, "endpoints/new/")).status_code == expected
    assert client_for(roles["users"]["coder"]).get(url(study, "endpoints/")).status_code == 200
    assert client_for(roles["users"]["outsider"]).get(url(study, "endpoints/")).status_code == 404
    assert client_for(roles["users"]["coder"]).post(url(study, "endpoints/new/"), ENDPOINT).status_code == 403
    assert not ModelEndpoint.objects.exists()


def test_create_and_edit_endpoint_shows_key_badge_never_value(roles, client_for, monkeypatch):
    study = roles["a"]
    c = client_for(roles["users"]["researcher"])
    response = c.post(url(study, "endpoints/new/"), ENDPOINT)
    assert response.status_code == 302, response.content.decode()[:3000]
    endpoint = ModelEndpoint.objects.get()
    assert endpoint.default_params == {"temperature": 0.7} and float(endpoint.output_price_per_mtok) == 10
    page = c.get(url(study, "endpoints/")).content.decode()
    assert "MY_KEY_VAR" in page and "not set" in page
    monkeypatch.setenv("MY_KEY_VAR", "sk-live-very-secret-value")
    page = c.get(url(study, "endpoints/")).content.decode()
    assert ">set<" in page and "sk-live-very-secret-value" not in page
    edit = c.get(url(study, f"endpoints/{endpoint.pk}/edit/")).content.decode()
    assert "sk-live-very-secret-value" not in edit and "MY_KEY_VAR" in edit
    response = c.post(url(study, f"endpoints/{endpoint.pk}/edit/"), {**ENDPOINT, "max_concurrency": 16})
    assert response.status_code == 302
    endpoint.refresh_from_db()
    assert endpoint.max_concurrency == 16


@pytest.mark.parametrize(
    "change,message",
    [
        ({"default_params": "{temperature: 1"}, "must be a JSON object"),
        ({"default_params": '{"temprature": 1}'}, "Unknown parameter"),
        ({"default_params": '{"max_tokens": "lots"}'}, "must be an integer"),
        ({"default_params": "[1, 2]"}, "must be a JSON object"),
        ({"api_key_env": "MY_KEY_VAR"}, "choose a provider connection"),
        ({"base_url": "http://evil.example/v1"}, "choose a provider connection"),
        ({"connection": ""}, "required"),
        ({"connection": "99999"}, "Choose one of the connections open to this study"),
        ({"max_concurrency": 0}, "at least 1"),
        ({"input_price_per_mtok": "-1"}, ""),
        ({"name": ""}, "required"),
    ],
)
def test_bad_endpoint_input_is_explained_and_not_saved(roles, client_for, change, message):
    c = client_for(roles["users"]["researcher"])
    response = c.post(url(roles["a"], "endpoints/new/"), {**ENDPOINT, **change})
    assert response.status_code == 400
    assert message in response.content.decode()
    assert not ModelEndpoint.objects.exists()


def test_duplicate_endpoint_name(roles, client_for):
    c = client_for(roles["users"]["researcher"])
    assert c.post(url(roles["a"], "endpoints/new/"), ENDPOINT).status_code == 302
    response = c.post(url(roles["a"], "endpoints/new/"), ENDPOINT)
    assert response.status_code == 400 and "already has an endpoint named" in response.content.decode()


def test_run_create_plan_start_detail(roles, client_for, make_endpoint, make_toolkit, fake_provider):
    study = roles["a"]
    toolkit = make_toolkit(study, 3)
    a = make_endpoint(
        study, name="A", input_price_per_mtok=1, output_price_per_mtok=2, default_params={"max_tokens": 50}
    )
    b = make_endpoint(study, "anthropic", name="B")
    c = client_for(roles["users"]["researcher"])
    page = c.get(url(study, "runs/new/")).content.decode()
    assert toolkit.name in page and "A ·" in page
    response = c.post(
        url(study, "runs/new/"),
        {
            "name": "first",
            "toolkit": toolkit.pk,
            "endpoints": [a.pk, b.pk],
            "trials": 2,
            "param_overrides": '{"temperature": 0.5}',
            "system_prompt": "Be brief.",
        },
    )
    run = GenerationRun.objects.get()
    assert response.status_code == 302 and response["Location"].endswith(f"/runs/{run.pk}/plan/")
    plan = c.get(response["Location"]).content.decode()
    assert "12" in plan and "API calls" in plan and "Write a short story about item 1." in plan and "Be brief." in plan
    assert not Output.objects.exists()
    response = c.post(url(study, f"runs/{run.pk}/start/"))
    assert response.status_code == 302
    run.refresh_from_db()
    assert run.status == "completed"
    detail = c.get(url(study, f"runs/{run.pk}/")).content.decode()
    assert 'id="n-done">12<' in detail and "A" in detail and "B" in detail
    progress = c.get(url(study, f"runs/{run.pk}/progress/"))
    assert progress.status_code == 200 and "hx-trigger" not in progress.content.decode()  # finished: no polling
    assert ">Completed<" in c.get(url(study, "runs/")).content.decode()


def test_live_run_polls(roles, client_for, make_endpoint, make_toolkit):
    from generation.runs import services as runs

    study = roles["a"]
    run = runs.create_run(study, name="r", toolkit=make_toolkit(study, 1), endpoints=[make_endpoint(study)])
    GenerationRun.objects.filter(pk=run.pk).update(status="queued")
    body = client_for(roles["users"]["coder"]).get(url(study, f"runs/{run.pk}/progress/")).content.decode()
    assert 'hx-trigger="every 1s"' in body and "Cancel" not in body  # coders watch, they do not steer


@pytest.mark.parametrize(
    "data,message",
    [
        ({"toolkit": 999999}, "Unknown toolkit"),
        ({"trials": 0}, "greater than or equal to 1"),
        ({"param_overrides": "{oops"}, "JSON object"),
        ({"param_overrides": '{"temprature": 1}'}, "Unknown parameter"),
        ({"endpoints": []}, "Choose at least one model endpoint"),
        ({"endpoints": [999999]}, "Unknown endpoint"),
    ],
)
def test_bad_run_form(roles, client_for, make_endpoint, make_toolkit, data, message):
    study = roles["a"]
    form = {
        "name": "x",
        "toolkit": make_toolkit(study, 1).pk,
        "endpoints": [make_endpoint(study).pk],
        "trials": 1,
        **data,
    }
    response = client_for(roles["users"]["researcher"]).post(url(study, "runs/new/"), form)
    assert response.status_code == 400 and message in response.content.decode()
    assert not GenerationRun.objects.exists()


def test_foreign_toolkit_rejected(roles, client_for, make_endpoint, make_toolkit):
    other = make_toolkit(roles["b"], 1)
    form = {"name": "x", "toolkit": other.pk, "endpoints": [make_endpoint(roles["a"]).pk], "trials": 1}
    response = client_for(roles["users"]["researcher"]).post(url(roles["a"], "runs/new/"), form)
    assert response.status_code == 400 and "Unknown toolkit" in response.content.decode()


def test_missing_key_variable_at_start(roles, client_for, make_endpoint, make_toolkit, monkeypatch):
    from generation.runs import services as runs

    study = roles["a"]
    endpoint = make_endpoint(study, "openai", api_key_env="NOT_SET_ANYWHERE")
    monkeypatch.delenv("NOT_SET_ANYWHERE", raising=False)
    run = runs.create_run(study, name="r", toolkit=make_toolkit(study, 1), endpoints=[endpoint])
    c = client_for(roles["users"]["researcher"])
    response = c.post(url(study, f"runs/{run.pk}/start/"), follow=True)
    body = response.content.decode()
    assert response.status_code == 200 and "NOT_SET_ANYWHERE" in body and "is not set" in body
    run.refresh_from_db()
    assert run.status == "draft" and not Output.objects.exists()


def test_run_actions_roles_and_errors(roles, client_for, make_endpoint, make_toolkit, fake_provider):
    from generation.runs import services as runs

    study = roles["a"]
    run = runs.create_run(study, name="r", toolkit=make_toolkit(study, 2), endpoints=[make_endpoint(study)])
    assert client_for(roles["users"]["coder"]).post(url(study, f"runs/{run.pk}/start/")).status_code == 403
    assert client_for(roles["users"]["outsider"]).post(url(study, f"runs/{run.pk}/start/")).status_code == 404
    assert client_for(roles["users"]["b_admin"]).get(url(study, f"runs/{run.pk}/")).status_code == 404
    c = client_for(roles["users"]["researcher"])
    assert c.get(url(study, f"runs/{run.pk}/start/")).status_code == 405
    assert c.post(url(study, f"runs/{run.pk}/explode/")).status_code == 404
    body = c.post(url(study, f"runs/{run.pk}/retry/"), follow=True).content.decode()
    assert "No failed units to retry" in body
    c.post(url(study, f"runs/{run.pk}/start/"))
    body = c.post(url(study, f"runs/{run.pk}/cancel/"), follow=True).content.decode()
    assert "already completed" in body
    # a run of study A is not reachable under study B's URL, even for B's admin
    assert client_for(roles["users"]["b_admin"]).post(url(roles["b"], f"runs/{run.pk}/cancel/")).status_code == 404


def test_endpoint_used_by_a_run_is_kept(roles, client_for, make_endpoint, make_toolkit, fake_provider):
    from generation.runs import services as runs

    study = roles["a"]
    used, unused = make_endpoint(study, name="used"), make_endpoint(study, name="unused")
    run = runs.create_run(study, name="r", toolkit=make_toolkit(study, 1), endpoints=[used])
    runs.start(run)
    c = client_for(roles["users"]["researcher"])
    body = c.post(url(study, f"endpoints/{used.pk}/delete/"), follow=True).content.decode()
    assert "is used by runs" in body and ModelEndpoint.objects.filter(pk=used.pk).exists()
    assert client_for(roles["users"]["coder"]).post(url(study, f"endpoints/{unused.pk}/delete/")).status_code == 403
    assert c.post(url(study, f"endpoints/{unused.pk}/delete/")).status_code == 302
    assert not ModelEndpoint.objects.filter(pk=unused.pk).exists()
