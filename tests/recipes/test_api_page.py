"""Recipe API and page: roles enforced, bad recipes 400 with paths and nothing written, plan before apply."""

import pytest
import yaml
from django.contrib.auth import get_user_model
from rest_framework.test import APIClient

from recipes.loader import dump

from .test_validate_apply import row_counts


@pytest.fixture
def people(db):
    from stereoscope.models import Membership, Study

    study = Study.objects.create(name="Target")
    users = {}
    for role in ("coder", "researcher", "admin"):
        users[role] = get_user_model().objects.create_user(role, password="pw")
        Membership.objects.create(study=study, user=users[role], role=role)
    return study, users


def client_for(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_api_roles_and_flow(people, recipe):
    study, users = people
    base = f"/api/studies/{study.pk}/recipe/"
    text = dump(recipe)
    assert client_for(users["coder"]).post(base + "validate/", {"recipe": text}, format="json").status_code == 403
    assert client_for(users["researcher"]).post(base + "validate/", {"recipe": text}, format="json").json()["valid"]
    before = row_counts()
    plan = client_for(users["researcher"]).post(base + "plan/", {"recipe": recipe}, format="json")
    assert plan.status_code == 200 and plan.json()["jobs"][0]["calls"] == 24
    assert row_counts() == before
    assert client_for(users["researcher"]).post(base + "apply/", {"recipe": text}, format="json").status_code == 403
    applied = client_for(users["admin"]).post(base + "apply/", {"recipe": text}, format="json")
    assert applied.status_code == 200 and applied.json()["study"] == study.pk
    exported = client_for(users["researcher"]).get(base).json()
    assert [r["name"] for r in exported["runs"]] == ["Stories"]
    assert client_for(users["coder"]).get(base).status_code == 403
    assert client_for(users["coder"]).get("/api/recipe-schema/").json()["title"] == "Stereoscope recipe"


def test_api_bad_recipe_is_400_with_paths(people, recipe):
    study, users = people
    recipe["runs"][0]["endpoints"][0] = "gpt4o"
    before = row_counts()
    for body in ({"recipe": recipe}, {"recipe": "format: [unclosed"}, {}):
        response = client_for(users["admin"]).post(f"/api/studies/{study.pk}/recipe/apply/", body, format="json")
        assert response.status_code == 400
    assert response.json()["problems"][0]["message"].startswith("Send the recipe")
    response = client_for(users["admin"]).post(
        f"/api/studies/{study.pk}/recipe/apply/", {"recipe": recipe}, format="json"
    )
    assert {"path": "runs[0].endpoints[0]", "message": "no endpoint named 'gpt4o'"} in response.json()["problems"]
    assert row_counts() == before


def test_page_upload_shows_plan_then_applies(people, recipe, client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    study, users = people
    recipe["runs"][0]["system_prompt"] = "<script>alert(1)</script>"
    text = yaml.safe_dump(recipe, allow_unicode=True)
    client.force_login(users["admin"])
    before = row_counts()
    page = client.post(f"/studies/{study.pk}/recipe/", {"file": SimpleUploadedFile("r.yaml", text.encode())})
    assert page.status_code == 200
    body = page.content.decode()
    assert "Apply this recipe" in body and "generation run" in body and "<script>alert(1)" not in body
    assert row_counts() == before
    client.force_login(users["researcher"])
    assert client.post(f"/studies/{study.pk}/recipe/apply/", {"recipe": text}).status_code == 403
    client.force_login(users["admin"])
    assert client.post(f"/studies/{study.pk}/recipe/apply/", {"recipe": text}).status_code == 302
    assert study.generation_runs.get().name == "Stories"
    download = client.get(f"/studies/{study.pk}/recipe/download.yaml")
    assert "Stories" in download.content.decode()
    bad = client.post(f"/studies/{study.pk}/recipe/", {"file": SimpleUploadedFile("r.yaml", b"study: [")})
    assert bad.status_code == 400 and "nothing was written" in bad.content.decode()
    huge = client.post(f"/studies/{study.pk}/recipe/", {"file": SimpleUploadedFile("r.yaml", b"#" * 5_000_001)})
    assert huge.status_code == 400 and "larger than 5 MB" in huge.content.decode()
