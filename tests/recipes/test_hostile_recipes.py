"""Issue 32: a YAML alias bomb, deep YAML and NaN/±Infinity are refused on every recipe route (API validate, plan
and apply, the Recipe page and its apply, the CLI) in under a second, with a clear message, nothing written and
little memory."""

import pytest
import yaml
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from recipes.loader import dump
from tests.bombs import MB, deep_yaml, measure, yaml_alias_bomb

from .test_validate_apply import row_counts

ALIAS = "anchors and aliases"
DEPTH = "nested more than"
NAN = "NaN and ±Infinity"


@pytest.fixture
def people(db):
    from stereoscope.models import Membership, Study

    study = Study.objects.create(name="Target")
    users = {}
    for role in ("researcher", "admin"):
        users[role] = get_user_model().objects.create_user(role, password="pw")
        Membership.objects.create(study=study, user=users[role], role=role)
    return study, users


def nan_recipe(recipe, value=".nan"):
    text = dump(recipe).replace("temperature: 0.7", f"temperature: {value}")
    assert f"temperature: {value}" in text
    return text


def hostile_texts(recipe):
    return [
        (yaml_alias_bomb(), ALIAS),
        (deep_yaml(500), DEPTH),
        (deep_yaml(100_000), DEPTH),
        (nan_recipe(recipe), NAN),
        (nan_recipe(recipe, ".inf"), NAN),
        (nan_recipe(recipe, "-.inf"), NAN),
    ]


def _cheap(result, seconds, growth):
    assert seconds < 1.0, (seconds, result)
    assert growth < 50 * MB, (growth / MB, result)
    return result


def test_api_refuses_on_validate_plan_and_apply(people, recipe):
    study, users = people
    api = APIClient()
    api.force_authenticate(users["admin"])
    for action in ("validate", "plan", "apply"):  # warm up: the first request imports what the routes use
        api.post(f"/api/studies/{study.pk}/recipe/{action}/", {"recipe": nan_recipe(recipe)}, format="json")
    before = row_counts()
    for text, message in hostile_texts(recipe):
        for action in ("validate", "plan", "apply"):
            url = f"/api/studies/{study.pk}/recipe/{action}/"
            for body, fmt in (
                ({"recipe": text}, "json"),
                ({"file": SimpleUploadedFile("r.yaml", text.encode())}, None),
            ):
                response = _cheap(*measure(lambda u=url, b=body, f=fmt: api.post(u, b, format=f)))
                assert response.status_code == 400, (action, message, response.status_code)
                problems = " ".join(p["message"] for p in response.json()["problems"])
                assert message in problems, (action, problems)
    assert row_counts() == before


def test_api_refuses_nan_and_infinity_in_a_json_body(people, recipe):
    import json

    study, users = people
    api = APIClient()
    api.force_authenticate(users["admin"])
    before = row_counts()
    for literal in ("1e999", "NaN", "-Infinity"):  # Python reads 1e999 as Infinity
        raw = json.dumps({"recipe": recipe}).replace('"temperature": 0.7', f'"temperature": {literal}')
        for action in ("validate", "plan", "apply"):
            response = api.post(f"/api/studies/{study.pk}/recipe/{action}/", raw, content_type="application/json")
            assert response.status_code == 400, (literal, action)
            assert "NaN" in response.json()["detail"] or "Infinity" in response.json()["detail"]
    assert row_counts() == before


def test_page_refuses_on_plan_and_apply(people, recipe, client):
    study, users = people
    client.force_login(users["admin"])
    client.post(f"/studies/{study.pk}/recipe/", {"recipe": nan_recipe(recipe)})  # warm up
    client.post(f"/studies/{study.pk}/recipe/apply/", {"recipe": nan_recipe(recipe)})
    before = row_counts()
    for text, message in hostile_texts(recipe):
        upload = {"file": SimpleUploadedFile("r.yaml", text.encode())}
        page = _cheap(*measure(lambda u=upload: client.post(f"/studies/{study.pk}/recipe/", u)))
        assert page.status_code == 400 and message in page.content.decode(), (message, page.status_code)
        applied = _cheap(*measure(lambda t=text: client.post(f"/studies/{study.pk}/recipe/apply/", {"recipe": t})))
        assert applied.status_code == 400 and message in applied.content.decode()
    assert row_counts() == before


@pytest.mark.parametrize("action", ["validate", "plan", "apply"])
def test_cli_refuses_with_a_message_not_a_traceback(people, recipe, tmp_path, action):
    warm = tmp_path / "warm.yaml"
    warm.write_text(nan_recipe(recipe))
    with pytest.raises(CommandError):
        call_command("recipe", action, str(warm))  # warm up
    before = row_counts()
    for i, (text, message) in enumerate(hostile_texts(recipe)):
        path = tmp_path / f"hostile{i}.yaml"
        path.write_text(text)
        error = _cheap(*measure(lambda p=path: call_command("recipe", action, str(p))))
        assert isinstance(error, CommandError), repr(error)
        assert message in str(error)
    assert row_counts() == before


def test_an_ordinary_recipe_still_loads(recipe):
    from recipes.loader import load

    assert load(dump(recipe))["endpoints"][0]["params"]["temperature"] == 0.7
    assert yaml.safe_load(deep_yaml(3))["study"]["description"] == [[[]]]


def test_api_refuses_a_deep_json_recipe_object(people):
    study, users = people
    api = APIClient()
    api.force_authenticate(users["admin"])
    deep = {"format": "stereoscope-recipe", "format_version": 1, "study": {"name": "Deep"}}
    node = deep["study"]
    for _ in range(200):
        node["description"] = {}
        node = node["description"]
    before = row_counts()
    for action in ("validate", "plan", "apply"):
        response = api.post(f"/api/studies/{study.pk}/recipe/{action}/", {"recipe": deep}, format="json")
        assert response.status_code == 400
        assert DEPTH in response.json()["problems"][0]["message"]
    assert row_counts() == before
