"""In Chromium: open the built-in Phase 3 toolkit, copy it into a study, edit an item, add a slot,
see the expansion preview, derive a twin, export JSON."""

import json

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_phase3_copy_edit_slot_preview_twin_export(page, login, make_user, tmp_path):
    from generation.builtin import builtin_specs
    from generation.models import Toolkit
    from stereoscope.builtin import load_builtins
    from stereoscope.models import Membership, Study

    load_builtins(builtin_specs(), log=lambda line: None)
    user = make_user("rita")
    study = Study.objects.create(name="Audit")
    Membership.objects.create(study=study, user=user, role="researcher")

    login("rita")
    page.goto(f"/studies/{study.pk}/")
    page.click("nav.sidebar a:has-text('Toolkits')")
    page.click("#library-toolkits a:has-text('Phase 3')")
    page.wait_for_selector("h1:has-text('Phase 3')")
    assert page.locator("#items-table tbody tr").count() == 30
    page.click("button:has-text('Copy into this study')")
    page.wait_for_selector("text=It is editable.")
    copy = Toolkit.objects.get(study=study)
    assert f"/studies/{study.pk}/toolkits/{copy.pk}/" in page.url

    # Add a slot, then use it in item 1.
    page.fill("#add-slot input[name=slot_name]", "name")
    page.fill("#add-slot textarea[name=values]", "Kelly\nJoseph")
    page.click("#add-slot button[type=submit]")
    page.wait_for_selector("text=Slot {name} saved.")
    assert page.locator("#slots-table").inner_text().count("Kelly") == 1
    page.click("#item-1 a:has-text('Edit')")
    page.fill("textarea[name=text]", "Write a short story about {name}, who leads a demanding team.")
    page.click("button:has-text('Save item')")
    page.wait_for_selector("text=Item 1 saved.")
    assert page.locator("#item-1 mark.slot").inner_text() == "{name}"

    # The expansion preview: item 1 now expands to two prompts.
    page.wait_for_selector("#unit-count")
    assert page.locator("#unit-count").inner_text() == "31"
    preview = page.locator("#preview-table").inner_text()
    assert "Write a short story about Kelly, who leads a demanding team." in preview
    assert "Write a short story about Joseph, who leads a demanding team." in preview

    # An unknown slot is refused with a clear message.
    page.click("#item-2 a:has-text('Edit')")
    page.fill("textarea[name=text]", "About {nmae}.")
    page.click("button:has-text('Save item')")
    assert "uses the slot {nmae}, which has no values" in page.locator("#item-errors").inner_text()
    page.go_back()
    page.go_back()

    # Derive the gender-swapped twin of item 1.
    page.goto(f"/studies/{study.pk}/toolkits/{copy.pk}/")
    page.click("#item-1 button:has-text('Derive twin')")
    page.wait_for_selector("text=Item 31 is the gender-swapped twin of item 1.")
    assert "twin of item 1" in page.locator("#item-31").inner_text()

    # Reorder with htmx: the twin moves up one place without a page load.
    page.evaluate("window.__marker = 1")
    page.click("#item-31 button[title='Move up']")
    page.wait_for_function(
        "document.querySelector('#item-30') && document.querySelector('#item-30').innerText.includes('twin of item 1')"
    )
    assert page.evaluate("window.__marker") == 1

    # Export JSON.
    with page.expect_download() as info:
        page.click("#export-json")
    path = tmp_path / "toolkit.json"
    info.value.save_as(path)
    data = json.loads(path.read_text(encoding="utf-8"))
    assert len(data["items"]) == 31 and data["slots"] == {"name": ["Kelly", "Joseph"]}
    assert data["items"][0]["text"] == "Write a short story about {name}, who leads a demanding team."
    assert data["items"][29]["counterfactual_of"] == 1 and data["items"][29]["number"] == 30
    assert data["items"][29]["slots"] == {"name": ["Joseph", "Kelly"]}
