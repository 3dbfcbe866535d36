"""Toolkit pages: roles, library copy, editing, slots, twins, locking, import/export, escaping."""

import io
import json

import pytest
from django.urls import reverse

from generation.models import Toolkit
from stereoscope.models import ActivityEvent

pytestmark = pytest.mark.django_db


def url(name, study, *args):
    return reverse(name, args=[study.pk, *args])


@pytest.fixture
def toolkit(make_toolkit):
    return make_toolkit(
        items=[
            {
                "number": 1,
                "text": "Write a story about {name}, a nurse.",
                "dimension": "Care",
                "target_stereotype": "nurturing",
                "gender_mapping": "F = caring, M = distant",
                "source_reference": "Fang 2025, H.1",
                "notes": "pilot",
            },
            {"number": 2, "text": "Write about a pilot.", "dimension": "Agency", "reversed_order": True},
        ],
        slots={"name": ["Kelly", "Joseph"]},
    )


def test_list_shows_study_toolkits_and_library(roles, client_for, toolkit, phase3):
    response = client_for(roles["users"]["coder"]).get(url("toolkits", roles["a"]))
    assert response.status_code == 200
    html = response.content.decode()
    assert "Toolkit" in html and "Fang" in html
    assert 'id="library-toolkits"' in html
    assert '<td class="num">48</td>' in html  # the Jung grid expands to 48 prompts
    assert '<td class="num">3</td>' in html  # item 1 × 2 names + item 2
    assert "Copy into this study" not in html  # coders cannot copy
    html = client_for(roles["users"]["researcher"]).get(url("toolkits", roles["a"])).content.decode()
    assert html.count("Copy into this study") == Toolkit.objects.filter(study__is_library=True).count()


def test_outsider_gets_404_and_coder_403_on_every_write(roles, client_for, toolkit):
    item = toolkit.items.get(number=1)
    dim = toolkit.dimensions.first()
    outsider, coder = client_for(roles["users"]["outsider"]), client_for(roles["users"]["coder"])
    study = roles["a"]
    reads = [
        url("toolkits", study),
        url("toolkit-detail", study, toolkit.pk),
        url("toolkit-preview", study, toolkit.pk),
        url("toolkit-export", study, toolkit.pk, "json"),
    ]
    writes = [
        url("toolkits", study),
        url("toolkit-import", study),
        url("toolkit-edit", study, toolkit.pk),
        url("toolkit-delete", study, toolkit.pk),
        url("toolkit-new-version", study, toolkit.pk),
        url("toolkit-slot-add", study, toolkit.pk),
        url("toolkit-slots-json", study, toolkit.pk),
        url("toolkit-slot-remove", study, toolkit.pk, "name"),
        url("toolkit-dimension-add", study, toolkit.pk),
        url("toolkit-dimension-edit", study, toolkit.pk, dim.pk),
        url("toolkit-dimension-delete", study, toolkit.pk, dim.pk),
        url("toolkit-dimension-move", study, toolkit.pk, dim.pk, "up"),
        url("toolkit-item-add", study, toolkit.pk),
        url("toolkit-item-edit", study, toolkit.pk, item.pk),
        url("toolkit-item-delete", study, toolkit.pk, item.pk),
        url("toolkit-item-move", study, toolkit.pk, item.pk, "down"),
        url("toolkit-item-twin", study, toolkit.pk, item.pk),
    ]
    for target in reads:
        assert outsider.get(target).status_code == 404, target
        assert coder.get(target).status_code == 200, target
    for target in writes:
        assert outsider.post(target, {"name": "x", "text": "y"}).status_code == 404, target
        assert coder.post(target, {"name": "x", "text": "y"}).status_code == 403, target
    toolkit.refresh_from_db()
    assert (
        toolkit.items.count() == 2
        and toolkit.dimensions.count() == 2
        and toolkit.slots == {"name": ["Kelly", "Joseph"]}
    )
    # A toolkit of another study is not reachable through study A's URLs.
    other = Toolkit.objects.create(study=roles["b"], name="B toolkit")
    assert client_for(roles["users"]["researcher"]).get(url("toolkit-detail", study, other.pk)).status_code == 404


def test_detail_shows_items_fields_slots_and_preview(roles, client_for, toolkit):
    c = client_for(roles["users"]["coder"])
    html = c.get(url("toolkit-detail", roles["a"], toolkit.pk)).content.decode()
    assert '<mark class="slot" title="slot">{name}</mark>' in html
    for text in [
        "nurturing",
        "F = caring, M = distant",
        "Fang 2025, H.1",
        "pilot",
        "reversed",
        "Care",
        "Agency",
        "Kelly · Joseph",
    ]:
        assert text in html, text
    assert "Edit details" not in html and "Derive twin" not in html  # read-only for coders
    preview = c.get(url("toolkit-preview", roles["a"], toolkit.pk) + "?limit=2").content.decode()
    assert '<strong id="unit-count">3</strong>' in preview  # 2 names for item 1 + item 2
    assert "Write a story about Kelly, a nurse." in preview and "Write a story about Joseph, a nurse." in preview
    assert "Write about a pilot." not in preview  # limited to 2


def test_copy_builtin_phase3_into_study(roles, client_for, phase3):
    c = client_for(roles["users"]["researcher"])
    response = c.post(url("toolkit-copy", roles["a"], phase3.pk))
    copy = Toolkit.objects.get(study=roles["a"])
    assert response.status_code == 302 and response["Location"] == url("toolkit-detail", roles["a"], copy.pk)
    assert copy.items.count() == 30 and copy.dimensions.count() == 6 and not copy.locked
    assert list(copy.items.values_list("text", flat=True)) == list(phase3.items.values_list("text", flat=True))
    html = c.get(response["Location"]).content.decode()
    assert "Derive twin" in html and "Edit details" in html
    # The library original stays read-only even through the study's URLs.
    assert c.post(url("toolkit-item-add", roles["a"], phase3.pk), {"text": "x"}).status_code == 404
    # Copying something that is not a built-in is refused.
    other = Toolkit.objects.create(study=roles["b"], name="B toolkit")
    assert c.post(url("toolkit-copy", roles["a"], other.pk)).status_code == 404


def test_library_detail_is_readable_with_copy_button(roles, client_for, phase3):
    html = client_for(roles["users"]["researcher"]).get(url("toolkit-detail", roles["a"], phase3.pk)).content.decode()
    assert "Copy into this study" in html and "Derive twin" not in html and "30 items" in html


def test_create_toolkit_and_edit_metadata(roles, client_for):
    c = client_for(roles["users"]["researcher"])
    response = c.post(url("toolkits", roles["a"]), {"name": "Occupations", "description": "d", "language": "en"})
    toolkit = Toolkit.objects.get(study=roles["a"], name="Occupations")
    assert response.status_code == 302 and toolkit.version == 1
    duplicate = c.post(url("toolkits", roles["a"]), {"name": "Occupations"})
    assert duplicate.status_code == 400 and "already exists" in duplicate.content.decode()
    c.post(
        url("toolkit-edit", roles["a"], toolkit.pk), {"name": "Occupations 2", "description": "new", "language": "de"}
    )
    toolkit.refresh_from_db()
    assert (toolkit.name, toolkit.description, toolkit.language) == ("Occupations 2", "new", "de")
    assert ActivityEvent.objects.filter(study=roles["a"], verb="edited a toolkit").exists()


def test_add_edit_delete_and_reorder_items(roles, client_for, toolkit):
    c = client_for(roles["users"]["researcher"])
    dim = toolkit.dimensions.get(name="Care")
    response = c.post(
        url("toolkit-item-add", roles["a"], toolkit.pk),
        {
            "text": "A story about {name} the engineer.",
            "dimension": dim.pk,
            "target_stereotype": "competence",
            "gender_mapping": "F = doubted",
            "reversed_order": "on",
            "source_reference": "new",
            "notes": "n",
        },
    )
    assert response.status_code == 302
    item = toolkit.items.get(number=3)
    assert item.dimension == dim and item.reversed_order and item.gender_mapping == "F = doubted"
    response = c.post(
        url("toolkit-item-edit", roles["a"], toolkit.pk, item.pk), {"number": 3, "text": "Edited {name}."}
    )
    item.refresh_from_db()
    assert response.status_code == 302 and item.text == "Edited {name}." and item.dimension is None
    # Move item 3 up: it takes number 2; the old item 2 becomes 3.
    old_two = toolkit.items.get(number=2)
    response = c.post(url("toolkit-item-move", roles["a"], toolkit.pk, item.pk, "up"), HTTP_HX_REQUEST="true")
    assert response.status_code == 200 and response["HX-Trigger"] == "toolkit-changed"
    item.refresh_from_db()
    old_two.refresh_from_db()
    assert (item.number, old_two.number) == (2, 3)
    assert 'id="items-table"' in response.content.decode()
    c.post(url("toolkit-item-move", roles["a"], toolkit.pk, item.pk, "up"))
    c.post(url("toolkit-item-move", roles["a"], toolkit.pk, item.pk, "up"))  # already first: no change, no error
    assert list(toolkit.items.order_by("number").values_list("text", flat=True)) == [
        "Edited {name}.",
        "Write a story about {name}, a nurse.",
        "Write about a pilot.",
    ]
    c.post(url("toolkit-item-delete", roles["a"], toolkit.pk, item.pk))
    assert toolkit.items.count() == 2


def test_unknown_slot_in_item_is_a_clear_error_and_saves_nothing(roles, client_for, toolkit):
    c = client_for(roles["users"]["researcher"])
    response = c.post(url("toolkit-item-add", roles["a"], toolkit.pk), {"text": "About {nmae} at {age}."})
    html = response.content.decode()
    assert response.status_code == 400
    assert "uses the slot {nmae}, which has no values" in html
    response = c.post(url("toolkit-item-add", roles["a"], toolkit.pk), {"text": "Broken {name"})
    assert response.status_code == 400 and "Invalid placeholder" in response.content.decode()
    response = c.post(url("toolkit-item-add", roles["a"], toolkit.pk), {"text": "ok", "slots": "{not json"})
    assert response.status_code == 400 and "Item slots is not valid JSON" in response.content.decode()
    response = c.post(url("toolkit-item-add", roles["a"], toolkit.pk), {"text": "dup", "number": 1})
    assert response.status_code == 400 and "already used" in response.content.decode()
    assert toolkit.items.count() == 2


def test_slots_add_remove_and_json(roles, client_for, toolkit):
    c = client_for(roles["users"]["researcher"])
    c.post(url("toolkit-slot-add", roles["a"], toolkit.pk), {"slot_name": "age", "values": "20\n40\n\n60\n"})
    toolkit.refresh_from_db()
    assert toolkit.slots == {"name": ["Kelly", "Joseph"], "age": ["20", "40", "60"]}
    # Removing a slot that an item uses is refused with the item named.
    response = c.post(url("toolkit-slot-remove", roles["a"], toolkit.pk, "name"), follow=True)
    assert "Item 1 uses the slot {name}, which has no values" in response.content.decode()
    toolkit.refresh_from_db()
    assert "name" in toolkit.slots
    c.post(url("toolkit-slot-remove", roles["a"], toolkit.pk, "age"))
    toolkit.refresh_from_db()
    assert "age" not in toolkit.slots
    response = c.post(
        url("toolkit-slot-add", roles["a"], toolkit.pk), {"slot_name": "first name", "values": "a"}, follow=True
    )
    assert "not a valid slot name" in response.content.decode()
    response = c.post(
        url("toolkit-slots-json", roles["a"], toolkit.pk),
        {"slots": '{"name": ["A", "B", "C"]}', "combinations": ""},
        follow=True,
    )
    toolkit.refresh_from_db()
    assert toolkit.slots == {"name": ["A", "B", "C"]} and toolkit.combinations is None
    response = c.post(
        url("toolkit-slots-json", roles["a"], toolkit.pk), {"slots": "[1,", "combinations": ""}, follow=True
    )
    assert "Slots is not valid JSON" in response.content.decode()
    response = c.post(
        url("toolkit-slots-json", roles["a"], toolkit.pk),
        {"slots": '{"name": ["A"]}', "combinations": '[{"name": "A"}, {"gender": "f"}]'},
        follow=True,
    )
    assert "every entry needs the same slots" in response.content.decode()
    toolkit.refresh_from_db()
    assert toolkit.slots == {"name": ["A", "B", "C"]}


def test_dimensions_add_edit_move_delete(roles, client_for, toolkit):
    c = client_for(roles["users"]["researcher"])
    c.post(url("toolkit-dimension-add", roles["a"], toolkit.pk), {"name": "Risk", "description": "r"})
    names = lambda: list(toolkit.dimensions.order_by("order", "name").values_list("name", flat=True))  # noqa: E731
    assert names()[-1] == "Risk"
    response = c.post(url("toolkit-dimension-add", roles["a"], toolkit.pk), {"name": "Risk"}, follow=True)
    assert "already exists" in response.content.decode()
    risk = toolkit.dimensions.get(name="Risk")
    c.post(url("toolkit-dimension-move", roles["a"], toolkit.pk, risk.pk, "up"))
    assert names().index("Risk") == len(names()) - 2
    c.post(url("toolkit-dimension-edit", roles["a"], toolkit.pk, risk.pk), {"name": "Risk taking", "description": ""})
    assert "Risk taking" in names()
    care = toolkit.dimensions.get(name="Care")
    c.post(url("toolkit-dimension-delete", roles["a"], toolkit.pk, care.pk))
    assert "Care" not in names() and toolkit.items.get(number=1).dimension is None


def test_derive_twin_links_to_original(roles, client_for, toolkit):
    item = toolkit.items.get(number=1)
    item.text = "Write a story about {name} and his sister."
    item.save()
    c = client_for(roles["users"]["researcher"])
    c.post(url("toolkit-item-twin", roles["a"], toolkit.pk, item.pk))
    twin = toolkit.items.get(number=3)
    assert twin.counterfactual_of == item and twin.text == "Write a story about {name} and her brother."
    assert twin.slots == {"name": ["Joseph", "Kelly"]}
    html = c.get(url("toolkit-detail", roles["a"], toolkit.pk)).content.decode()
    assert (
        "gender-swapped twin of" in html
        and '<span class="tag twin">has twin</span> <a href="#item-3">item 3</a>' in html
    )
    response = c.post(url("toolkit-item-twin", roles["a"], toolkit.pk, item.pk), {"name_pairs": "Kelly"}, follow=True)
    assert "not of the form Female=Male" in response.content.decode() and toolkit.items.count() == 3


def test_locked_toolkit_is_read_only_and_offers_new_version(roles, client_for, toolkit, lock_with_run):
    lock_with_run(toolkit)
    c = client_for(roles["users"]["researcher"])
    html = c.get(url("toolkit-detail", roles["a"], toolkit.pk)).content.decode()
    assert 'id="locked-notice"' in html and "New version" in html and "Derive twin" not in html
    item = toolkit.items.get(number=1)
    response = c.post(
        url("toolkit-item-edit", roles["a"], toolkit.pk, item.pk), {"number": 1, "text": "changed"}, follow=True
    )
    assert "locked because a run uses it" in response.content.decode()
    c.post(url("toolkit-slot-add", roles["a"], toolkit.pk), {"slot_name": "age", "values": "1"})
    c.post(url("toolkit-delete", roles["a"], toolkit.pk))
    item.refresh_from_db()
    toolkit.refresh_from_db()
    assert (
        item.text.startswith("Write a story")
        and "age" not in toolkit.slots
        and Toolkit.objects.filter(pk=toolkit.pk).exists()
    )
    response = c.post(url("toolkit-new-version", roles["a"], toolkit.pk))
    copy = Toolkit.objects.get(study=roles["a"], name=toolkit.name, version=2)
    assert response["Location"] == url("toolkit-detail", roles["a"], copy.pk)
    assert copy.parent == toolkit and not copy.locked and copy.items.count() == 2
    c.post(url("toolkit-item-edit", roles["a"], copy.pk, copy.items.get(number=1).pk), {"number": 1, "text": "changed"})
    assert copy.items.get(number=1).text == "changed"


def test_export_downloads_json_and_csv(roles, client_for, toolkit):
    c = client_for(roles["users"]["coder"])
    response = c.get(url("toolkit-export", roles["a"], toolkit.pk, "json"))
    assert response["Content-Disposition"] == 'attachment; filename="toolkit-v1.json"'
    data = json.loads(response.content)
    assert [i["text"] for i in data["items"]] == ["Write a story about {name}, a nurse.", "Write about a pilot."]
    response = c.get(url("toolkit-export", roles["a"], toolkit.pk, "csv"))
    assert response["Content-Type"].startswith("text/csv") and response.content.decode().startswith(
        "kind,number,name,text"
    )


def test_import_round_trip_and_errors_with_line_numbers(roles, client_for, toolkit):
    c = client_for(roles["users"]["researcher"])
    exported = c.get(url("toolkit-export", roles["a"], toolkit.pk, "csv")).content
    upload = io.BytesIO(exported)
    upload.name = "toolkit.csv"
    response = c.post(url("toolkit-import", roles["a"]), {"file": upload, "name": "Imported"})
    imported = Toolkit.objects.get(study=roles["a"], name="Imported")
    assert response.status_code == 302
    assert list(imported.items.values_list("text", "reversed_order")) == list(
        toolkit.items.values_list("text", "reversed_order")
    )
    bad = io.BytesIO(b"number,text,reversed_order\n1,About {nmae}.,false\n2,Fine.,maybe\n")
    bad.name = "bad.csv"
    before = Toolkit.objects.count()
    response = c.post(url("toolkit-import", roles["a"]), {"file": bad, "name": "Bad"})
    html = response.content.decode()
    assert response.status_code == 400 and 'id="import-errors"' in html
    assert (
        "Row 2 (item 1) uses the slot {nmae}" in html
        and "Row 3 (item 2), reversed_order: must be true or false" in html
    )
    assert Toolkit.objects.count() == before
    broken = io.BytesIO(b'{"name": "x", "items": [}')
    broken.name = "broken.json"
    html = c.post(url("toolkit-import", roles["a"]), {"file": broken}).content.decode()
    assert "Not valid JSON" in html and "line 1" in html
    odd = io.BytesIO(b"whatever")
    odd.name = "toolkit.xlsx"
    assert "Cannot tell the format" in c.post(url("toolkit-import", roles["a"]), {"file": odd}).content.decode()
    assert Toolkit.objects.count() == before


def test_item_text_and_llm_like_payloads_are_escaped(roles, client_for, make_toolkit):
    payload = '<script>alert("x")</script><img src=x onerror=alert(1)>'
    toolkit = make_toolkit(
        name=payload,
        description=payload,
        items=[
            {
                "number": 1,
                "text": payload + " {name}",
                "target_stereotype": payload,
                "notes": payload,
                "dimension": payload,
            }
        ],
        slots={"name": [payload]},
    )
    c = client_for(roles["users"]["researcher"])
    pages = [
        c.get(url("toolkit-detail", roles["a"], toolkit.pk)),
        c.get(url("toolkit-preview", roles["a"], toolkit.pk)),
        c.get(url("toolkits", roles["a"])),
        c.get(url("toolkit-item-edit", roles["a"], toolkit.pk, toolkit.items.get().pk)),
    ]
    for response in pages:
        html = response.content.decode()
        assert "<script>alert" not in html and "<img src=x" not in html
        assert "&lt;script&gt;" in html
