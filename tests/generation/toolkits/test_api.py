"""Toolkit REST API: roles, CRUD, lock → 409, expansion, versions, import/export, twins."""

import json

import pytest

from generation.models import Toolkit

pytestmark = pytest.mark.django_db


def base(study):
    return f"/api/studies/{study.pk}"


@pytest.fixture
def toolkit(make_toolkit):
    return make_toolkit(
        items=[
            {
                "number": 1,
                "text": "A story about {name} and his job.",
                "dimension": "Care",
                "gender_mapping": "F = soft",
            },
            {"number": 2, "text": "A story about a pilot.", "dimension": "Agency"},
        ],
        slots={"name": ["Kelly", "Joseph"]},
    )


def test_roles_on_every_endpoint(roles, api_for, toolkit):
    study, item, dim = roles["a"], toolkit.items.get(number=1), toolkit.dimensions.first()
    outsider, coder = api_for(roles["users"]["outsider"]), api_for(roles["users"]["coder"])
    reads = [
        f"{base(study)}/toolkits/",
        f"{base(study)}/toolkits/{toolkit.pk}/",
        f"{base(study)}/toolkits/{toolkit.pk}/expand/",
        f"{base(study)}/toolkits/{toolkit.pk}/export/",
        f"{base(study)}/toolkit-items/",
        f"{base(study)}/toolkit-items/{item.pk}/",
        f"{base(study)}/toolkit-dimensions/",
        f"{base(study)}/toolkit-dimensions/{dim.pk}/",
    ]
    for target in reads:
        assert outsider.get(target).status_code == 404, target
        assert coder.get(target).status_code == 200, target
    writes = [
        ("post", f"{base(study)}/toolkits/"),
        ("patch", f"{base(study)}/toolkits/{toolkit.pk}/"),
        ("delete", f"{base(study)}/toolkits/{toolkit.pk}/"),
        ("post", f"{base(study)}/toolkits/{toolkit.pk}/new_version/"),
        ("post", f"{base(study)}/toolkits/import/"),
        ("post", f"{base(study)}/toolkits/copy/"),
        ("post", f"{base(study)}/toolkit-items/"),
        ("patch", f"{base(study)}/toolkit-items/{item.pk}/"),
        ("delete", f"{base(study)}/toolkit-items/{item.pk}/"),
        ("post", f"{base(study)}/toolkit-items/{item.pk}/counterfactual/"),
        ("post", f"{base(study)}/toolkit-items/{item.pk}/move/"),
        ("post", f"{base(study)}/toolkit-dimensions/"),
        ("patch", f"{base(study)}/toolkit-dimensions/{dim.pk}/"),
        ("delete", f"{base(study)}/toolkit-dimensions/{dim.pk}/"),
    ]
    for method, target in writes:
        assert getattr(outsider, method)(target, {"name": "x"}, format="json").status_code == 404, target
        assert getattr(coder, method)(target, {"name": "x"}, format="json").status_code == 403, target
    assert (
        Toolkit.objects.filter(study=study).count() == 1
        and toolkit.items.count() == 2
        and toolkit.dimensions.count() == 2
    )
    # Another study's objects are invisible through study A.
    other = Toolkit.objects.create(study=roles["b"], name="B")
    researcher = api_for(roles["users"]["researcher"])
    assert researcher.get(f"{base(study)}/toolkits/{other.pk}/").status_code == 404
    assert [t["id"] for t in researcher.get(f"{base(study)}/toolkits/").json()["results"]] == [toolkit.pk]


def test_create_blank_and_full_toolkit(roles, api_for):
    api = api_for(roles["users"]["researcher"])
    response = api.post(f"{base(roles['a'])}/toolkits/", {"name": "Grid", "slots": {"age": [20, 40]}}, format="json")
    assert response.status_code == 201, response.json()
    assert response.json()["slots"] == {"age": ["20", "40"]} and response.json()["version"] == 1
    assert api.post(f"{base(roles['a'])}/toolkits/", {"name": "Grid"}, format="json").status_code == 400
    bad = api.post(f"{base(roles['a'])}/toolkits/", {"name": "Bad", "slots": {"age": []}}, format="json")
    assert bad.status_code == 400 and "non-empty list" in bad.json()["detail"]
    assert not Toolkit.objects.filter(name="Bad").exists()
    full = {
        "name": "Full",
        "slots": {"name": ["Kelly", "Joseph"]},
        "dimensions": [{"name": "Care"}],
        "items": [
            {"number": 1, "text": "About {name}.", "dimension": "Care"},
            {"number": 2, "text": "Twin", "counterfactual_of": 1},
        ],
    }
    response = api.post(f"{base(roles['a'])}/toolkits/", full, format="json")
    assert response.status_code == 201 and [i["text"] for i in response.json()["items"]] == ["About {name}.", "Twin"]
    full["name"], full["items"][0]["text"] = "Broken", "About {nobody}."
    response = api.post(f"{base(roles['a'])}/toolkits/", full, format="json")
    assert response.status_code == 400 and "uses the slot {nobody}" in response.json()["detail"]
    assert not Toolkit.objects.filter(name="Broken").exists()


def test_update_slots_and_items_validate(roles, api_for, toolkit):
    api = api_for(roles["users"]["researcher"])
    response = api.patch(f"{base(roles['a'])}/toolkits/{toolkit.pk}/", {"slots": {"age": ["20"]}}, format="json")
    assert response.status_code == 400 and "Item 1 uses the slot {name}" in response.json()["detail"]
    response = api.patch(
        f"{base(roles['a'])}/toolkits/{toolkit.pk}/",
        {"description": "new", "slots": {"name": ["A", "B", "C"]}},
        format="json",
    )
    assert response.status_code == 200 and response.json()["description"] == "new"
    response = api.post(
        f"{base(roles['a'])}/toolkit-items/", {"toolkit": toolkit.pk, "text": "About {nmae}."}, format="json"
    )
    assert response.status_code == 400 and "{nmae}" in response.json()["detail"]
    response = api.post(
        f"{base(roles['a'])}/toolkit-items/",
        {"toolkit": toolkit.pk, "text": "About {name}.", "dimension": toolkit.dimensions.get(name="Agency").pk},
        format="json",
    )
    assert (
        response.status_code == 201 and response.json()["number"] == 3 and response.json()["dimension_name"] == "Agency"
    )
    item_id = response.json()["id"]
    response = api.patch(f"{base(roles['a'])}/toolkit-items/{item_id}/", {"number": 1}, format="json")
    assert response.status_code == 400 and "already used" in response.json()["detail"]
    response = api.post(f"{base(roles['a'])}/toolkit-items/{item_id}/move/", {"direction": "up"}, format="json")
    assert response.status_code == 200 and response.json()["number"] == 2
    listed = api.get(f"{base(roles['a'])}/toolkit-items/?toolkit={toolkit.pk}").json()["results"]
    assert [i["number"] for i in listed] == [1, 2, 3]
    other_study_dim = Toolkit.objects.create(study=roles["b"], name="B").dimensions.create(name="X")
    response = api.patch(
        f"{base(roles['a'])}/toolkit-items/{item_id}/", {"dimension": other_study_dim.pk}, format="json"
    )
    assert response.status_code == 400
    response = api.post(
        f"{base(roles['a'])}/toolkit-dimensions/", {"toolkit": toolkit.pk, "name": "Care"}, format="json"
    )
    assert response.status_code == 400 and "already exists" in response.json()["detail"]
    response = api.post(
        f"{base(roles['a'])}/toolkit-dimensions/", {"toolkit": toolkit.pk, "name": "Risk"}, format="json"
    )
    assert response.status_code == 201
    assert api.delete(f"{base(roles['a'])}/toolkit-dimensions/{response.json()['id']}/").status_code == 204


def test_locked_toolkit_answers_409_and_new_version_is_editable(roles, api_for, toolkit, lock_with_run):
    lock_with_run(toolkit)
    api = api_for(roles["users"]["researcher"])
    item, dim = toolkit.items.get(number=1), toolkit.dimensions.first()
    attempts = [
        api.patch(f"{base(roles['a'])}/toolkits/{toolkit.pk}/", {"description": "x"}, format="json"),
        api.delete(f"{base(roles['a'])}/toolkits/{toolkit.pk}/"),
        api.post(f"{base(roles['a'])}/toolkit-items/", {"toolkit": toolkit.pk, "text": "new"}, format="json"),
        api.patch(f"{base(roles['a'])}/toolkit-items/{item.pk}/", {"text": "changed"}, format="json"),
        api.delete(f"{base(roles['a'])}/toolkit-items/{item.pk}/"),
        api.post(f"{base(roles['a'])}/toolkit-items/{item.pk}/counterfactual/", {}, format="json"),
        api.post(f"{base(roles['a'])}/toolkit-items/{item.pk}/move/", {"direction": "down"}, format="json"),
        api.patch(f"{base(roles['a'])}/toolkit-dimensions/{dim.pk}/", {"name": "x"}, format="json"),
        api.delete(f"{base(roles['a'])}/toolkit-dimensions/{dim.pk}/"),
    ]
    for response in attempts:
        assert response.status_code == 409 and "locked because a run uses it" in response.json()["detail"]
    assert api.get(f"{base(roles['a'])}/toolkits/{toolkit.pk}/").json()["locked"] is True
    response = api.post(f"{base(roles['a'])}/toolkits/{toolkit.pk}/new_version/")
    assert response.status_code == 201
    body = response.json()
    assert body["version"] == 2 and body["parent"] == toolkit.pk and body["locked"] is False and len(body["items"]) == 2
    new_item = body["items"][0]["id"]
    assert (
        api.patch(f"{base(roles['a'])}/toolkit-items/{new_item}/", {"text": "changed"}, format="json").status_code
        == 200
    )
    item.refresh_from_db()
    assert item.text == "A story about {name} and his job."


def test_expand_preview(roles, api_for, toolkit):
    api = api_for(roles["users"]["coder"])
    body = api.get(f"{base(roles['a'])}/toolkits/{toolkit.pk}/expand/?limit=2").json()
    assert body["count"] == 3 and body["problems"] == []
    assert body["units"] == [
        {
            "item_number": 1,
            "slot_values": {"name": "Kelly"},
            "variant_key": '{"name":"Kelly"}',
            "prompt": "A story about Kelly and his job.",
        },
        {
            "item_number": 1,
            "slot_values": {"name": "Joseph"},
            "variant_key": '{"name":"Joseph"}',
            "prompt": "A story about Joseph and his job.",
        },
    ]
    assert api.get(f"{base(roles['a'])}/toolkits/{toolkit.pk}/expand/?limit=x").status_code == 400


def test_expand_renders_only_the_units_it_returns(roles, api_for, make_toolkit, monkeypatch):
    """An item's slots multiply: six slots of 40 values are 4,096,000,000 prompts from a 2 KB body. The preview
    rendered every prompt of an item before taking the first `limit` (a million of them took 15 s of a web worker);
    it renders only the prompts it returns, and still counts them all."""
    from generation.toolkits import expansion

    slots = {name: [f"{name}{i}" for i in range(10)] for name in "abcd"}
    toolkit = make_toolkit(items=[{"number": 1, "text": "{a} {b} {c} {d}"}], slots=slots)
    rendered = []
    render = expansion.render
    monkeypatch.setattr(expansion, "render", lambda text, values: rendered.append(1) or render(text, values))
    body = api_for(roles["users"]["coder"]).get(f"{base(roles['a'])}/toolkits/{toolkit.pk}/expand/?limit=3").json()
    assert body["count"] == 10_000
    assert [u["prompt"] for u in body["units"]] == ["a0 b0 c0 d0", "a0 b0 c0 d1", "a0 b0 c0 d2"]
    assert len(rendered) <= 3


def test_counterfactual_action(roles, api_for, toolkit):
    api = api_for(roles["users"]["researcher"])
    item = toolkit.items.get(number=1)
    response = api.post(
        f"{base(roles['a'])}/toolkit-items/{item.pk}/counterfactual/", {"name_pairs": "Kelly=Joseph"}, format="json"
    )
    assert response.status_code == 201
    assert (
        response.json()["text"] == "A story about {name} and her job."
        and response.json()["counterfactual_of"] == item.pk
    )
    assert response.json()["slots"] == {"name": ["Joseph", "Kelly"]}
    response = api.post(
        f"{base(roles['a'])}/toolkit-items/{item.pk}/counterfactual/", {"name_pairs": "Kelly-Joseph"}, format="json"
    )
    assert response.status_code == 400 and "Female=Male" in response.json()["detail"]
    for pairs in (["Kelly=Joseph"], {"Kelly": "Joseph"}, 5):  # a TypeError in re.split (a 500) before
        response = api.post(
            f"{base(roles['a'])}/toolkit-items/{item.pk}/counterfactual/", {"name_pairs": pairs}, format="json"
        )
        assert response.status_code == 400 and "name_pairs must be text" in response.json()["detail"], pairs


def test_export_and_import_round_trip(roles, api_for, toolkit):
    api = api_for(roles["users"]["researcher"])
    for fmt in ("json", "csv"):
        exported = api.get(f"{base(roles['a'])}/toolkits/{toolkit.pk}/export/?file_format={fmt}")
        assert exported.status_code == 200
        content = exported.content.decode()
        response = api.post(
            f"{base(roles['a'])}/toolkits/import/",
            {"content": content, "format": fmt, "name": f"Copy {fmt}"},
            format="json",
        )
        assert response.status_code == 201, response.json()
        copy = Toolkit.objects.get(pk=response.json()["id"])
        again = api.get(f"{base(roles['a'])}/toolkits/{copy.pk}/export/?file_format={fmt}").content.decode()
        assert again.replace(f"Copy {fmt}", "Toolkit") == content  # byte-identical apart from the name
    assert api.get(f"{base(roles['a'])}/toolkits/{toolkit.pk}/export/?file_format=xml").status_code == 400
    before = Toolkit.objects.count()
    from django.core.files.uploadedfile import SimpleUploadedFile

    bad = SimpleUploadedFile("bad.csv", b"number,text\n1,ok\n1,duplicate\nx,bad number\n")
    response = api.post(f"{base(roles['a'])}/toolkits/import/", {"file": bad, "name": "Bad"}, format="multipart")
    assert response.status_code == 400
    errors = response.json()["errors"]
    assert any("Row 3" in e and "used twice" in e for e in errors) and any(
        "Row 4" in e and "whole number" in e for e in errors
    )
    response = api.post(f"{base(roles['a'])}/toolkits/import/", {"content": "{", "format": "json"}, format="json")
    assert response.status_code == 400 and "Not valid JSON" in response.json()["detail"]
    assert api.post(f"{base(roles['a'])}/toolkits/import/", {}, format="json").status_code == 400
    response = api.post(f"{base(roles['a'])}/toolkits/import/", {"content": "{}", "format": "xml"}, format="json")
    assert response.status_code == 400 and "json or csv" in json.dumps(response.json())
    assert Toolkit.objects.count() == before


def test_copy_from_library_and_library_is_read_only(roles, api_for, phase3):
    api = api_for(roles["users"]["researcher"])
    response = api.post(f"{base(roles['a'])}/toolkits/copy/", {"toolkit": phase3.pk}, format="json")
    assert response.status_code == 201 and len(response.json()["items"]) == 30 and response.json()["locked"] is False
    assert api.post(f"{base(roles['a'])}/toolkits/copy/", {"toolkit": "nope"}, format="json").status_code == 400
    library = phase3.study
    assert api.get(f"/api/studies/{library.pk}/toolkits/{phase3.pk}/expand/?limit=1").json()["count"] == 30
    assert (
        api.patch(f"/api/studies/{library.pk}/toolkits/{phase3.pk}/", {"description": "x"}, format="json").status_code
        == 403
    )
    staff = api_for(roles["users"]["staff"])
    response = staff.patch(f"/api/studies/{library.pk}/toolkits/{phase3.pk}/", {"description": "x"}, format="json")
    assert response.status_code == 403 and "read-only" in response.json()["detail"]
    item = phase3.items.first()
    assert (
        staff.patch(f"/api/studies/{library.pk}/toolkit-items/{item.pk}/", {"text": "x"}, format="json").status_code
        == 403
    )


def test_schema_lists_toolkit_endpoints(admin_client):
    schema = admin_client.get("/api/schema/?format=json").json()
    paths = schema["paths"]
    for path in [
        "/api/studies/{study_pk}/toolkits/",
        "/api/studies/{study_pk}/toolkits/{id}/expand/",
        "/api/studies/{study_pk}/toolkits/{id}/new_version/",
        "/api/studies/{study_pk}/toolkits/{id}/export/",
        "/api/studies/{study_pk}/toolkits/import/",
        "/api/studies/{study_pk}/toolkit-items/{id}/counterfactual/",
    ]:
        assert path in paths, path
    for name in [
        "Toolkit",
        "ToolkitDetail",
        "PromptItem",
        "ToolkitDimension",
        "ToolkitExpansion",
        "ToolkitImportRequest",
    ]:
        assert name in schema["components"]["schemas"]
    json.dumps(schema)
