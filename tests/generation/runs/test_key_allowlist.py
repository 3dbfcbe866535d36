"""A provider connection may name only a key variable the operator allowed (PROVIDER_KEY_VARIABLES), and never one
the server itself reads (SECRET_KEY, DATABASE_URL, ...): refused on the settings page, the API and the admin with one
message, and again when a run starts, so the value is never sent to the connection's base URL."""

import re
from pathlib import Path

import pytest
from django.conf import settings as django_settings

from generation.models import GenerationRun, Output, ProviderConnection
from generation.runs import services as runs

pytestmark = pytest.mark.django_db
SERVER_SECRET = "django-insecure-server-secret-never-sent"

CONNECTION = {"name": "exfil", "provider": "openai_compatible", "base_url": "http://127.0.0.1:9/v1"}


@pytest.mark.parametrize(
    "variable,message",
    [
        ("SECRET_KEY", "SECRET_KEY is a variable the server itself uses"),
        ("DATABASE_URL", "DATABASE_URL is a variable the server itself uses"),
        ("CELERY_BROKER_URL", "CELERY_BROKER_URL is a variable the server itself uses"),
        ("DJANGO_SETTINGS_MODULE", "DJANGO_SETTINGS_MODULE is a variable the server itself uses"),
        ("HOME", "HOME is not an allowed key variable"),
    ],
)
def test_settings_page_and_api_refuse_a_variable_outside_the_allow_list(roles, client_for, api_for, variable, message):
    """Even staff cannot make a connection send a server variable (or one outside the allow-list) as a key."""
    page = client_for(roles["users"]["staff"]).post(
        "/settings/connections/new/", {**CONNECTION, "api_key_env": variable}
    )
    assert page.status_code == 400 and message in page.content.decode()
    api = api_for(roles["users"]["staff"]).post(
        "/api/connections/", {**CONNECTION, "api_key_env": variable}, format="json"
    )
    assert api.status_code == 400 and message in api.json()["api_key_env"][0]
    assert ProviderConnection.objects.count() == 0


def test_product_variables_are_refused_even_when_the_operator_lists_them(roles, api_for, settings):
    settings.PROVIDER_KEY_VARIABLES = ["SECRET_KEY", "OPENAI_API_KEY"]
    response = api_for(roles["users"]["staff"]).post(
        "/api/connections/", {**CONNECTION, "api_key_env": "SECRET_KEY"}, format="json"
    )
    assert response.status_code == 400 and "the server itself uses" in str(response.json())
    assert ProviderConnection.objects.count() == 0


def test_admin_refuses_a_server_variable(client_for, django_user_model):
    root = client_for(django_user_model.objects.create_superuser("root", "r@example.org", "pw-not-used"))
    data = {**CONNECTION, "api_key_env": "SECRET_KEY", "allowed_models": "[]", "all_studies": "on"}
    response = root.post("/admin/generation/providerconnection/add/", data)
    assert response.status_code == 200
    assert "SECRET_KEY is a variable the server itself uses" in response.content.decode()
    assert ProviderConnection.objects.count() == 0
    response = root.post("/admin/generation/providerconnection/add/", {**data, "api_key_env": "OPENAI_API_KEY"})
    assert response.status_code == 302
    made = ProviderConnection.objects.get()
    assert made.status == "approved" and made.api_key_env == "OPENAI_API_KEY"


def test_run_start_rechecks_after_the_allow_list_changed(
    roles, api_for, make_endpoint, make_toolkit, fake_provider, monkeypatch, settings
):
    study = roles["a"]
    monkeypatch.setenv("FAKE_KEY_ENV", SERVER_SECRET)
    endpoint = make_endpoint(study, "openai_compatible", api_key_env="FAKE_KEY_ENV")
    run = runs.create_run(study, name="r", toolkit=make_toolkit(study, 2), endpoints=[endpoint], trials=1)
    settings.PROVIDER_KEY_VARIABLES = ["OPENAI_API_KEY"]  # the operator withdrew FAKE_KEY_ENV
    response = api_for(roles["users"]["researcher"]).post(f"/api/studies/{study.pk}/runs/{run.pk}/start/")
    assert response.status_code == 400
    assert "FAKE_KEY_ENV is not an allowed key variable" in response.json()["detail"]
    assert Output.objects.count() == 0 and GenerationRun.objects.get(pk=run.pk).status == "draft"
    assert fake_provider.stats()["requests"] == 0


def test_queued_run_fails_at_execution_and_the_provider_never_sees_the_secret(
    roles, make_endpoint, make_toolkit, fake_provider, monkeypatch, settings
):
    study = roles["a"]
    monkeypatch.setenv("FAKE_KEY_ENV", SERVER_SECRET)
    endpoint = make_endpoint(study, "openai_compatible", api_key_env="FAKE_KEY_ENV")
    run = runs.create_run(study, name="r", toolkit=make_toolkit(study, 2), endpoints=[endpoint], trials=1)
    runs.materialize(run)
    GenerationRun.objects.filter(pk=run.pk).update(status="queued")
    settings.PROVIDER_KEY_VARIABLES = []  # withdrawn while the run waited in the queue
    assert runs.execute(run.pk) is None
    run.refresh_from_db()
    assert run.status == "failed" and "FAKE_KEY_ENV is not an allowed key variable" in run.message
    assert fake_provider.stats()["requests"] == 0
    assert not any(SERVER_SECRET in r["auth"] for r in fake_provider.requests)


def test_provider_construction_refuses_a_server_variable(roles, make_endpoint, fake_provider, monkeypatch):
    from generation.runs.providers.base import ProviderError, get_provider

    monkeypatch.setenv("SECRET_KEY", SERVER_SECRET)
    endpoint = make_endpoint(roles["a"], "openai_compatible")
    ProviderConnection.objects.filter(pk=endpoint.connection_id).update(api_key_env="SECRET_KEY")  # behind the forms
    endpoint.refresh_from_db()
    assert endpoint.key_is_set is False
    with pytest.raises(ProviderError, match="the server itself uses"):
        get_provider(endpoint).complete([{"role": "user", "content": "hello"}], {})
    assert fake_provider.stats()["requests"] == 0


def test_product_variable_list_covers_every_variable_the_settings_and_commands_read():
    root = Path(__file__).resolve().parents[3]
    sources = [root / "stereoscope" / "settings.py", *(root / "stereoscope" / "management" / "commands").glob("*.py")]
    pattern = re.compile(r"""(?:environ\.get|getenv|env_bool|env_list)\(\s*["']([A-Z0-9_]+)["']""")
    read = {name for path in sources for name in pattern.findall(path.read_text())}
    assert "SECRET_KEY" in read and "DATABASE_URL" in read
    from generation.runs.key_variables import is_product_variable

    assert sorted(n for n in read if not is_product_variable(n)) == []
    assert django_settings.PRODUCT_ENV_VARIABLES  # the one list lives in the settings
