"""Coder onboarding in Chromium: a coder signs in to My work and continues a queue from there; the admin copies the
one-time invitation link with a button."""

import pytest
from django.urls import reverse

from tests.annotation.test_my_work import queues  # noqa: F401  (the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_coder_signs_in_to_my_work_and_continues_a_queue(page, login, queues):  # noqa: F811
    study_a, cb_a, outs_a = queues["made"]["Study A"]
    login("coder")
    page.wait_for_url(f"**{reverse('my-work')}")
    assert page.locator("h1").inner_text() == "My work"
    rows = page.locator("#queues tbody tr")
    assert rows.count() == 2
    texts = rows.all_inner_texts()
    assert any("Study A" in t and "1 / 3 done" in t for t in texts)
    assert any("Study C" in t and "0 / 2 done" in t for t in texts)
    assert page.locator("text=New study").count() == 0
    page.locator("#queues tr:has-text('Study A') a:has-text('Continue coding')").click()
    page.wait_for_url(f"**/studies/{study_a.pk}/coding/codebooks/{cb_a.pk}/stories/{outs_a[1].pk}/")
    assert page.locator("#story").inner_text() == "Story 1"  # the first story not done yet

    page.goto(f"/studies/{study_a.pk}/")
    assert "1 / 3 done" in page.locator("#my-queue").inner_text()
    assert page.locator(".stats").count() == 0


def test_the_admin_copies_the_invitation_link(page, login, roles):
    page.context.grant_permissions(["clipboard-read", "clipboard-write"])
    login("admin")
    page.goto(f"/studies/{roles['a'].pk}/members/")
    page.fill("input[name=username]", "ana")
    page.fill("input[name=email]", "ana@example.org")
    page.select_option("select[name=role]", "coder")
    page.click("text=Save member")
    link = page.locator("#invitation-link").input_value()
    assert "/accounts/invitation/" in link
    page.click("button:has-text('Copy link')")
    page.wait_for_selector("#invitation-copied:has-text('Copied.')")
    assert page.evaluate("() => navigator.clipboard.readText()") == link
