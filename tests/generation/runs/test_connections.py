"""Provider connections: the operator decides where keys go. A non-staff user can never make a request that carries a
configured key reach a host staff did not approve, through the API, the pages, recipes or the admin; staff approve a
connection and the run on it completes; the migration turns old endpoints into approved or pending connections."""

import pytest
from django.core.management import CommandError, call_command
from django.utils import timezone

from generation.models import ModelEndpoint, Output, ProviderConnection
from generation.runs import connections
from generation.runs import services as runs
from tests.migration_trip import empty_database, migrate

KEY = "sk-operator-paid-key-0042"


def keyed(fake_provider):
    """Requests the listener received that carried the operator's key."""
    return [r for r in fake_provider.requests if KEY in (r.get("auth") or "")]


@pytest.fixture
def operator_key(monkeypatch):
    monkeypatch.setenv("FAKE_KEY_ENV", KEY)
    return "FAKE_KEY_ENV"


@pytest.mark.django_db
def test_no_researcher_request_sends_a_key_to_an_unapproved_host(
    roles, api_for, client_for, fake_provider, operator_key, make_toolkit, django_capture_on_commit_callbacks, tmp_path
):
    """Every way a researcher could name a host or a key variable is refused, and the listener gets no key."""
    study = roles["a"]
    researcher = roles["users"]["researcher"]
    api = api_for(researcher)
    page = client_for(researcher)
    listener = fake_provider.openai_base_url
    attempts = [
        {"name": "x", "provider": "openai_compatible", "model_id": "m", "base_url": listener},
        {"name": "x", "provider": "openai", "model_id": "m", "api_key_env": operator_key},
        {
            "name": "x",
            "provider": "openai_compatible",
            "model_id": "m",
            "base_url": listener,
            "api_key_env": operator_key,
        },
    ]
    for body in attempts:
        response = api.post(f"/api/studies/{study.pk}/endpoints/", body, format="json")
        assert response.status_code == 400, response.content
        assert "choose a provider connection" in response.content.decode()
        response = page.post(f"/studies/{study.pk}/endpoints/new/", {**body, "max_concurrency": 2, "max_attempts": 1})
        assert response.status_code == 400
    # Researchers cannot create, change or approve connections.
    assert api.get("/api/connections/").status_code == 403
    made = api.post(
        "/api/connections/",
        {"name": "mine", "provider": "openai_compatible", "base_url": listener, "api_key_env": operator_key},
        format="json",
    )
    assert made.status_code == 403 and not ProviderConnection.objects.filter(name="mine").exists()
    assert page.get("/settings/connections/").status_code in (302, 403)
    assert page.post("/settings/connections/new/", {"name": "mine", "provider": "openai"}).status_code in (302, 403)
    assert page.get("/admin/generation/providerconnection/add/").status_code == 302  # to the admin's login
    # A pending connection to the listener (what the migration makes of an old endpoint) is visible but holds runs.
    pending = ProviderConnection.objects.create(
        name="old host", provider="openai_compatible", base_url=listener, api_key_env=operator_key, status="pending"
    )
    response = api.post(
        f"/api/studies/{study.pk}/endpoints/",
        {"name": "e", "connection": "old host", "model_id": "m", "max_attempts": 1},
        format="json",
    )
    assert response.status_code == 201, response.content
    endpoint = ModelEndpoint.objects.get(pk=response.json()["id"])
    run = runs.create_run(study, name="r", toolkit=make_toolkit(study, 2), endpoints=[endpoint])
    runs.start(run, researcher)
    run.refresh_from_db()
    assert run.status == "waiting" and "waiting for approval by site staff" in run.message
    detail = page.get(f"/studies/{study.pk}/runs/{run.pk}/").content.decode()
    assert "waiting for approval by site staff" in detail
    assert keyed(fake_provider) == [] and fake_provider.requests == []
    # Recipes name connections only: a base URL or key variable in a recipe endpoint is refused.
    recipe = (
        "name: exfiltrate\nendpoints:\n  - name: x\n    provider: openai_compatible\n    model_id: m\n"
        f"    base_url: {listener}\n    api_key_env: {operator_key}\n"
    )
    admin = api_for(roles["users"]["admin"])
    response = admin.post(f"/api/studies/{study.pk}/recipe/apply/", {"recipe": recipe}, format="json")
    assert response.status_code == 400 and "do not set base URLs or key variables" in response.content.decode()
    admin_page = client_for(roles["users"]["admin"])
    response = admin_page.post(f"/studies/{study.pk}/recipe/apply/", {"recipe": recipe})
    assert response.status_code == 400 and "do not set base URLs or key variables" in response.content.decode()
    response = admin_page.post(f"/studies/{study.pk}/recipe/", {"recipe": recipe})
    assert response.status_code == 400 and "do not set base URLs or key variables" in response.content.decode()
    recipe_file = tmp_path / "exfiltrate.yaml"
    recipe_file.write_text(recipe, encoding="utf-8")
    with pytest.raises(CommandError, match="do not set base URLs or key variables"):
        call_command("recipe", "apply", str(recipe_file), "--study", str(study.pk))
    assert keyed(fake_provider) == [] and ModelEndpoint.objects.filter(study=study).count() == 1
    # Staff approve: the waiting run goes on by itself and completes.
    with django_capture_on_commit_callbacks(execute=True):
        connections.approve_connection(pending, actor=roles["users"]["staff"])
    run.refresh_from_db()
    if run.status == "queued":  # the sweep (or the task the approval sent) picks it up
        runs.execute(run.pk)
    run.refresh_from_db()
    assert run.status == "completed", run.message
    assert Output.objects.filter(run=run, status="done").count() == 2
    assert len(keyed(fake_provider)) == 2


@pytest.mark.django_db
def test_a_connection_closed_to_the_study_or_model_stops_calls(study, make_endpoint, make_toolkit, fake_provider):
    endpoint = make_endpoint(study, max_attempts=1)
    connection = endpoint.connection
    connection.all_studies = False
    connection.save()
    run = runs.create_run(study, name="r", toolkit=make_toolkit(study, 2), endpoints=[endpoint])
    with pytest.raises(runs.RunError, match="not open to this study"):
        runs.start(run)
    connection.all_studies = True
    connection.allowed_models = ["another-model"]
    connection.save()
    with pytest.raises(runs.RunError, match="does not serve the model"):
        runs.start(run)
    assert fake_provider.requests == []


@pytest.mark.django_db
def test_staff_manage_connections_over_the_api(roles, api_for, monkeypatch):
    staff = api_for(roles["users"]["staff"])
    body = {"name": "Lab vLLM", "provider": "openai_compatible", "base_url": "http://127.0.0.1:9/v1"}
    response = staff.post("/api/connections/", body, format="json")
    assert response.status_code == 201 and response.json()["status"] == "approved"
    bad = staff.post("/api/connections/", {**body, "name": "y", "api_key_env": "SECRET_KEY"}, format="json")
    assert bad.status_code == 400 and "the server itself uses" in str(bad.json())
    bad = staff.post("/api/connections/", {**body, "name": "z", "base_url": "ftp://x"}, format="json")
    assert bad.status_code == 400 and "http://" in str(bad.json())
    listing = api_for(roles["users"]["researcher"]).get(f"/api/studies/{roles['a'].pk}/connections/")
    assert listing.status_code == 200 and [c["name"] for c in listing.json()] == ["Lab vLLM"]
    assert "base_url" not in listing.json()[0] and "api_key_env" not in listing.json()[0]


def test_migration_makes_connections_of_old_endpoints(tmp_path, django_db_blocker):
    with django_db_blocker.unblock():
        with empty_database(tmp_path):
            _migration_makes_connections()


def _migration_makes_connections():
    old = migrate([("generation", "0008_batch_mode_endpoints_runs_batches")])
    study = old.get_model("stereoscope", "Study").objects.create(name="S")
    Endpoint = old.get_model("generation", "ModelEndpoint")
    made = {
        "gpt": ("openai", "", "OPENAI_API_KEY"),
        "gpt-official-url": ("openai", "https://api.openai.com/v1", "OPENAI_API_KEY"),
        "claude": ("anthropic", "", "ANTHROPIC_API_KEY"),
        "proxy": ("openai", "http://proxy.example:8080/v1", "OPENAI_API_KEY"),
        "vllm": ("openai_compatible", "http://127.0.0.1:8000/v1", ""),
        "local": ("transformers", "", ""),
        "chat": ("manual", "", ""),
    }
    for name, (provider, base_url, key) in made.items():
        Endpoint.objects.create(
            study=study, name=name, provider=provider, model_id="m", base_url=base_url, api_key_env=key
        )
    new = migrate([("generation", "0009_provider_connections_and_spending")])
    Connection = new.get_model("generation", "ProviderConnection")
    endpoints = {e.name: e for e in new.get_model("generation", "ModelEndpoint").objects.all()}
    status = {name: Connection.objects.get(pk=e.connection_id).status for name, e in endpoints.items()}
    assert status == {
        "gpt": "approved",
        "gpt-official-url": "approved",
        "claude": "approved",
        "proxy": "pending",
        "vllm": "pending",
        "local": "approved",
        "chat": "approved",
    }
    proxy = Connection.objects.get(pk=endpoints["proxy"].connection_id)
    assert proxy.base_url == "http://proxy.example:8080/v1" and proxy.api_key_env == "OPENAI_API_KEY"
    assert "approve" in proxy.status_reason
    assert endpoints["gpt"].connection_id != endpoints["gpt-official-url"].connection_id  # distinct triples
    assert Connection.objects.count() == 7


@pytest.mark.django_db
def test_a_pending_connection_run_shows_why_it_waits_and_resumes_on_approval(
    study, make_toolkit, fake_provider, operator_key
):
    pending = ProviderConnection.objects.create(
        name="lab proxy",
        provider="openai_compatible",
        base_url=fake_provider.openai_base_url,
        api_key_env=operator_key,
        status="pending",
        status_reason="Made from existing endpoints.",
    )
    endpoint = ModelEndpoint.objects.create(
        study=study, name="e", provider="openai_compatible", model_id="m", connection=pending, max_attempts=1
    )
    run = runs.create_run(study, name="r", toolkit=make_toolkit(study, 3), endpoints=[endpoint])
    runs.start(run)
    run.refresh_from_db()
    assert run.status == "waiting" and "“lab proxy” is waiting for approval" in run.message
    assert fake_provider.requests == []
    from stereoscope import jobs

    assert jobs.wake_waiting() == []  # still pending: nothing queued
    ProviderConnection.objects.filter(pk=pending.pk).update(status="approved", approved_at=timezone.now())
    assert jobs.wake_waiting() == [("generation.run", run.pk)]
    runs.execute(run.pk)
    run.refresh_from_db()
    assert run.status == "completed" and len(keyed(fake_provider)) == 3


def test_make_run_creates_official_connections_for_set_keys(db, monkeypatch, settings):
    settings.PROVIDER_KEY_VARIABLES = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY"]
    monkeypatch.setenv("OPENAI_API_KEY", "sk-x")
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    assert connections.ensure_official_connections() == ["OpenAI (OPENAI_API_KEY)"]
    assert connections.ensure_official_connections() == []
    made = ProviderConnection.objects.get()
    assert made.status == "approved" and made.base_url == "" and made.provider == "openai"


@pytest.mark.django_db
def test_study_creators_staff_lets_only_staff_create_studies(roles, api_for, client_for, settings):
    from stereoscope.models import Study

    settings.STUDY_CREATORS = "staff"
    before = Study.objects.count()
    response = api_for(roles["users"]["researcher"]).post("/api/studies/", {"name": "mine"}, format="json")
    assert response.status_code == 403 and "only site staff create studies" in response.json()["detail"]
    page = client_for(roles["users"]["researcher"])
    assert "created by site staff" in page.get("/studies/").content.decode()
    assert page.post("/studies/", {"name": "mine"}).status_code == 403
    assert Study.objects.count() == before
    assert api_for(roles["users"]["staff"]).post("/api/studies/", {"name": "lab"}, format="json").status_code == 201
    settings.STUDY_CREATORS = "any"
    assert api_for(roles["users"]["researcher"]).post("/api/studies/", {"name": "x"}, format="json").status_code == 201


@pytest.mark.django_db
def test_a_connections_concurrency_limit_holds_over_all_its_endpoints(
    study, make_endpoint, make_toolkit, fake_provider
):
    a = make_endpoint(study, name="a", max_concurrency=8)
    b = make_endpoint(study, name="b", max_concurrency=8)
    assert a.connection_id == b.connection_id
    ProviderConnection.objects.filter(pk=a.connection_id).update(max_concurrency=2)
    fake_provider.default_delay = 0.05
    run = runs.create_run(study, name="r", toolkit=make_toolkit(study, 8), endpoints=[a, b])
    runs.start(run)
    run.refresh_from_db()
    assert run.status == "completed" and Output.objects.filter(run=run, status="done").count() == 16
    assert fake_provider.stats()["max_in_flight"] == 2
