"""Django admin for toolkits: inline items, slot validation, locked toolkits read-only, new-version action."""

import pytest

from generation.models import PromptItem, Toolkit

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_client(make_user, client_for, roles):
    return client_for(make_user("root", is_staff=True, is_superuser=True))


@pytest.fixture
def toolkit(make_toolkit):
    return make_toolkit(
        items=[{"number": 1, "text": "About {name}.", "dimension": "Care"}], slots={"name": ["Kelly", "Joseph"]}
    )


def item_post(toolkit, item, **changes):
    data = {
        "toolkit": toolkit.pk,
        "number": item.number,
        "text": item.text,
        "dimension": item.dimension_id or "",
        "target_stereotype": "",
        "gender_mapping": "",
        "source_reference": "",
        "notes": "",
        "slots": "{}",
        "combinations": "null",
        "counterfactual_of": "",
    }
    data.update(changes)
    return data


def test_admin_shows_inline_items_and_edits_unlocked(admin_client, toolkit):
    html = admin_client.get(f"/admin/generation/toolkit/{toolkit.pk}/change/").content.decode()
    assert "About {name}." in html and 'name="items-0-text"' in html
    item = toolkit.items.get()
    response = admin_client.post(
        f"/admin/generation/promptitem/{item.pk}/change/", item_post(toolkit, item, text="Hi {name}!")
    )
    assert response.status_code == 302
    item.refresh_from_db()
    assert item.text == "Hi {name}!"


def test_admin_rejects_unknown_slot(admin_client, toolkit):
    item = toolkit.items.get()
    response = admin_client.post(
        f"/admin/generation/promptitem/{item.pk}/change/", item_post(toolkit, item, text="Hi {nmae}!")
    )
    assert response.status_code == 200 and "uses the slot {nmae}, which has no values" in response.content.decode()
    item.refresh_from_db()
    assert item.text == "About {name}."


def test_locked_toolkit_is_read_only_in_admin(admin_client, toolkit, lock_with_run):
    lock_with_run(toolkit)
    html = admin_client.get(f"/admin/generation/toolkit/{toolkit.pk}/change/").content.decode()
    assert 'name="items-0-text"' not in html and "About {name}." in html  # shown, not editable
    item = toolkit.items.get()
    admin_client.post(f"/admin/generation/promptitem/{item.pk}/change/", item_post(toolkit, item, text="Changed"))
    item.refresh_from_db()
    assert item.text == "About {name}."
    assert admin_client.post(f"/admin/generation/toolkit/{toolkit.pk}/delete/", {"post": "yes"}).status_code == 403
    response = admin_client.post(
        "/admin/generation/toolkit/", {"action": "make_new_version", "_selected_action": [toolkit.pk]}
    )
    assert response.status_code == 302
    copy = Toolkit.objects.get(name=toolkit.name, version=2)
    assert copy.parent == toolkit and PromptItem.objects.filter(toolkit=copy).count() == 1
    assert 'name="items-0-text"' in admin_client.get(f"/admin/generation/toolkit/{copy.pk}/change/").content.decode()


def test_library_builtins_are_read_only_in_admin(admin_client, phase3):
    html = admin_client.get(f"/admin/generation/toolkit/{phase3.pk}/change/").content.decode()
    assert 'name="items-0-text"' not in html and phase3.items.get(number=1).text[:40] in html
