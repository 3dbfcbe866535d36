"""A provider key set in the environment appears in no database row, log line, export, admin page, API answer or
HTML page, even when the provider echoes it back in an error."""

import io
import logging

import pytest
from django.core.management import call_command
from django.db import connection

from generation.models import ModelEndpoint, Output, ProviderCall
from generation.runs import services as runs

pytestmark = pytest.mark.django_db
CANARY = "sk-canary-4f9d2c7e8b1a6053-DO-NOT-LEAK"


def all_database_text():
    chunks = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f'SELECT * FROM "{table}"')
            chunks.extend(str(row) for row in cursor.fetchall())
    return "\n".join(chunks)


def test_key_never_leaks(
    roles, client_for, api_for, django_user_model, make_endpoint, make_toolkit, fake_provider, monkeypatch, caplog
):
    caplog.set_level(logging.DEBUG)
    study = roles["a"]
    monkeypatch.setenv("CANARY_KEY", CANARY)
    openai_ep = make_endpoint(study, "openai_compatible", name="compat", api_key_env="CANARY_KEY", max_attempts=2)
    anthropic_ep = make_endpoint(study, "anthropic", name="claude", api_key_env="CANARY_KEY", max_attempts=1)
    toolkit = make_toolkit(study, 3)
    # the provider echoes the key in an error body (some real ones echo a prefix)
    fake_provider.script([{"status": 401, "message": f"Incorrect API key provided: {CANARY}"}], match="item 3")
    fake_provider.script([{"status": 500, "message": f"upstream said {CANARY}"}], match="item 2")
    run = runs.create_run(study, name="keys", toolkit=toolkit, endpoints=[openai_ep, anthropic_ep], trials=1)
    runs.start(run)
    run.refresh_from_db()
    assert run.status == "completed"
    # the key really was used: the server saw it in the auth headers
    assert any(CANARY in r["auth"] for r in fake_provider.requests)
    errors = list(ProviderCall.objects.exclude(error="").values_list("error", flat=True))
    assert any("[redacted key]" in e for e in errors), errors
    assert Output.objects.filter(run=run, status="failed").exists()

    assert CANARY not in all_database_text()
    assert CANARY not in caplog.text
    dump = io.StringIO()
    call_command("dumpdata", "generation", stdout=dump)
    assert CANARY not in dump.getvalue()

    staff = client_for(django_user_model.objects.create_superuser("root", "root@example.org", "pw-not-used"))
    output = Output.objects.filter(run=run).first()
    call = ProviderCall.objects.first()
    admin_pages = [
        "/admin/generation/modelendpoint/",
        f"/admin/generation/modelendpoint/{openai_ep.pk}/change/",
        "/admin/generation/providercall/",
        f"/admin/generation/providercall/{call.pk}/change/",
        "/admin/generation/output/",
        f"/admin/generation/output/{output.pk}/change/",
        "/admin/generation/generationrun/",
        f"/admin/generation/generationrun/{run.pk}/change/",
        "/admin/generation/providerconnection/",
        f"/admin/generation/providerconnection/{openai_ep.connection_id}/change/",
        "/admin/generation/spendingledger/",
        "/settings/connections/",
        f"/settings/connections/{openai_ep.connection_id}/edit/",
        "/api/connections/",
    ]
    researcher = client_for(roles["users"]["researcher"])
    html_pages = [
        f"/studies/{study.pk}/endpoints/",
        f"/studies/{study.pk}/endpoints/{openai_ep.pk}/edit/",
        f"/studies/{study.pk}/runs/",
        f"/studies/{study.pk}/runs/{run.pk}/",
        f"/studies/{study.pk}/runs/{run.pk}/plan/",
        f"/studies/{study.pk}/outputs/",
        f"/studies/{study.pk}/spending/",
    ] + [f"/studies/{study.pk}/outputs/{o.pk}/" for o in Output.objects.filter(run=run)]
    for client, pages in ((staff, admin_pages), (researcher, html_pages)):
        for page in pages:
            response = client.get(page)
            assert response.status_code == 200, page
            assert CANARY not in response.content.decode(), page
    api = api_for(roles["users"]["researcher"])
    api_pages = [
        f"/api/studies/{study.pk}/endpoints/",
        f"/api/studies/{study.pk}/runs/",
        f"/api/studies/{study.pk}/runs/{run.pk}/status/",
        f"/api/studies/{study.pk}/runs/{run.pk}/plan/",
        f"/api/studies/{study.pk}/outputs/",
        f"/api/studies/{study.pk}/spending/",
        f"/api/studies/{study.pk}/connections/",
    ] + [f"/api/studies/{study.pk}/outputs/{o.pk}/" for o in Output.objects.filter(run=run)]
    for page in api_pages:
        response = api.get(page)
        assert response.status_code == 200, page
        assert CANARY not in response.content.decode(), page
    assert ModelEndpoint.objects.get(pk=openai_ep.pk).api_key_env == "CANARY_KEY"


def test_admin_endpoints_take_a_connection_and_are_validated_like_the_pages(roles, client_for, django_user_model):
    from tests.generation.runs.conftest import approved_connection

    connection = approved_connection("openai", "", "OPENAI_API_KEY", name="OpenAI")
    root = client_for(django_user_model.objects.create_superuser("root2", "r@example.org", "pw-not-used"))
    data = {
        "study": roles["a"].pk,
        "name": "e",
        "provider": "openai",
        "model_id": "gpt",
        "default_params": "{}",
        "max_concurrency": 4,
        "timeout_seconds": 60,
        "max_attempts": 3,
        "backoff_base_s": 1,
        "backoff_max_s": 60,
        "created_at_0": "2026-01-01",
        "created_at_1": "00:00:00",
    }
    response = root.post("/admin/generation/modelendpoint/add/", data)
    assert response.status_code == 200 and "Choose a provider connection" in response.content.decode()
    response = root.post(
        "/admin/generation/modelendpoint/add/",
        {**data, "default_params": '{"temprature": 1}', "connection": connection.pk},
    )
    assert response.status_code == 200 and "Unknown parameter" in response.content.decode()
    assert not ModelEndpoint.objects.exists()
    response = root.post("/admin/generation/modelendpoint/add/", {**data, "connection": connection.pk})
    assert response.status_code == 302 and ModelEndpoint.objects.get().api_key_env == "OPENAI_API_KEY"
