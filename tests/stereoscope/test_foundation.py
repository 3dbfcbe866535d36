import json
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

ROOT = Path(__file__).resolve().parents[2]


def test_uuid_and_django_import_from_repo_root():
    result = subprocess.run(
        [sys.executable, "-c", "import uuid, django, platform; print(platform.system())"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stderr
    assert not (ROOT / "platform").exists() and not (ROOT / "platform.py").exists()


@pytest.mark.django_db
def test_create_study_via_ui_makes_creator_admin(make_user, client):
    user = make_user("alice")
    client.force_login(user)
    response = client.post("/studies/", {"name": "Audit 2026", "description": "GPT stories"})
    assert response.status_code == 302
    from stereoscope.models import Study

    study = Study.objects.get(name="Audit 2026")
    assert study.memberships.get(user=user).role == "admin"
    page = client.get(f"/studies/{study.pk}/").content.decode()
    assert "created the study" in page and "Audit 2026" in page


@pytest.mark.django_db
def test_study_name_is_escaped(make_user, client):
    user = make_user("bob")
    client.force_login(user)
    client.post("/studies/", {"name": "<script>alert(1)</script>"})
    html = client.get("/studies/").content.decode()
    assert "<script>alert(1)</script>" not in html and "&lt;script&gt;" in html


@pytest.mark.django_db
def test_healthz_reports_database_and_broker(client):
    response = client.get("/healthz?format=json")
    data = response.json()
    assert data["database"]["ok"] is True
    assert data["broker"]["ok"] is True, data["broker"]
    assert data["workers"]["live"] == 0
    assert response.status_code == 200
    assert "Live workers" in client.get("/healthz").content.decode()
    assert client.get("/api/health/").json()["database"]["ok"] is True


@pytest.mark.django_db
def test_healthz_counts_only_fresh_heartbeats(client):
    from django.utils import timezone

    from stereoscope.models import WorkerHeartbeat

    WorkerHeartbeat.objects.create(hostname="fresh", pid=1)
    WorkerHeartbeat.objects.create(hostname="stale", pid=2, last_seen=timezone.now() - timezone.timedelta(minutes=5))
    data = client.get("/healthz?format=json").json()
    assert data["workers"]["live"] == 1 and data["workers"]["list"][0]["hostname"] == "fresh"


@pytest.mark.django_db
def test_openapi_schema_and_docs(admin_client):
    schema = admin_client.get("/api/schema/?format=json")
    assert schema.status_code == 200
    paths = json.loads(schema.content)["paths"]
    assert "/api/studies/" in paths and "/api/studies/{study_pk}/members/" in paths
    assert admin_client.get("/api/docs/").status_code == 200


@pytest.mark.django_db
def test_token_auth(make_user, client):
    from rest_framework.authtoken.models import Token

    user = make_user("tok")
    token = Token.objects.create(user=user)
    response = client.get("/api/studies/", HTTP_AUTHORIZATION=f"Token {token.key}")
    assert response.status_code == 200
    assert client.get("/api/studies/", HTTP_AUTHORIZATION="Token wrong").status_code == 401


@pytest.mark.django_db
def test_api_create_study_and_add_coder(make_user, api_for):
    owner = make_user("owner")
    make_user("cody")
    api = api_for(owner)
    study = api.post("/api/studies/", {"name": "Via API"}, format="json").json()
    assert study["my_role"] == "admin"
    response = api.post(f"/api/studies/{study['id']}/members/", {"username": "cody", "role": "coder"}, format="json")
    assert response.status_code == 202 and "cody is now coder" in response.json()["detail"]
    response = api.post(f"/api/studies/{study['id']}/members/", {"username": "cody", "role": "boss"}, format="json")
    assert response.status_code == 400 and "Unknown role" in response.json()["detail"]


@pytest.mark.django_db
def test_every_model_is_registered_in_admin():
    from django.apps import apps
    from django.contrib import admin

    ours = [
        m
        for m in apps.get_models()
        if m._meta.app_label in {"stereoscope", "generation", "annotation", "judging", "psychometrics", "measures"}
    ]
    missing = [m.__name__ for m in ours if m not in admin.site._registry]
    assert not missing, f"not in the admin: {missing}"


@pytest.mark.django_db
def test_dashboard_counts_study_models(roles, client_for):
    # a researcher's dashboard counts (a coder's shows their queue instead: tests/annotation/test_my_work.py)
    html = client_for(roles["users"]["researcher"]).get(f"/studies/{roles['a'].pk}/").content.decode()
    assert "members" in html and ">3<" in html.replace(" ", "")


@pytest.mark.django_db
def test_load_builtin_twice_changes_nothing(tmp_path):
    from stereoscope import builtin
    from stereoscope.models import ActivityEvent, BuiltinRecord

    data = tmp_path / "note.json"
    data.write_text(json.dumps({"text": "v1"}))

    def loader(study, payload):
        return ActivityEvent.objects.create(study=study, verb="builtin", target=payload["text"])

    def snapshot():
        from django.apps import apps

        return {m._meta.label: m.objects.count() for m in apps.get_models()}

    spec = builtin.BuiltinSpec("note", "demo", "1", data, loader)
    call_command("load_builtin")  # the real built-ins
    assert builtin.load_builtins([spec], log=lambda *_: None) == [spec]
    before = snapshot()
    call_command("load_builtin")
    assert builtin.load_builtins([spec], log=lambda *_: None) == []
    assert snapshot() == before
    newer = builtin.BuiltinSpec("note", "demo", "2", data, loader)
    assert builtin.load_builtins([newer], log=lambda *_: None) == [newer]
    assert BuiltinRecord.objects.filter(kind="note", key="demo").count() == 2
    assert ActivityEvent.objects.filter(verb="builtin").count() == 2  # v1 kept beside v2


def test_deploy_check_passes_with_production_settings(tmp_path):
    import os

    env = {k: v for k, v in os.environ.items() if k != "DJANGO_ALLOW_ASYNC_UNSAFE"}
    env.update(
        SECRET_KEY="x" * 64 + "-production-secret-key-for-check",
        DEBUG="false",
        ALLOWED_HOSTS="stereoscope.example.org",
        SECURE_SSL_REDIRECT="true",
        SESSION_COOKIE_SECURE="true",
        CSRF_COOKIE_SECURE="true",
        SECURE_HSTS_SECONDS="31536000",
        SECURE_HSTS_INCLUDE_SUBDOMAINS="true",
        SECURE_HSTS_PRELOAD="true",
        STEREOSCOPE_DATA_DIR=str(tmp_path),
    )
    result = subprocess.run(
        [sys.executable, "manage.py", "check", "--deploy", "--fail-level", "WARNING"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr
