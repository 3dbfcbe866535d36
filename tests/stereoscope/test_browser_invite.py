"""Must show: a study admin invites a coder from Members; the coder sets a password from the link, signs in, codes
a story and sees no researcher-only links."""

import pytest

from annotation.models import Assignment, Coding
from tests.annotation.conftest import outputs_factory, small_codebook  # noqa: F401 (fixtures)
from tests.annotation.test_browser import select

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NEW_PASSWORD = "violet-lantern-4821"


def test_admin_invites_coder_who_sets_password_and_codes(
    page, login, roles, outputs_factory, small_codebook, django_user_model
):
    study = roles["a"]
    codebook, codes = small_codebook(study)
    (story,) = outputs_factory(study, ["Mara led the expedition and everyone followed her."])

    login("admin")
    page.goto(f"/studies/{study.pk}/")
    page.click("nav.sidebar a:has-text('Members')")
    page.fill("input[name=username]", "ana")
    page.fill("input[name=email]", "ana@example.org")
    page.select_option("select[name=role]", "coder")
    page.click("text=Save member")
    link = page.locator("input.invitation-link").input_value()
    assert "/accounts/invitation/" in link
    assert page.locator("table >> text=ana@example.org").count() == 1
    page.click("button:has-text('Log out')")

    # a researcher puts the story in Ana's queue
    ana = django_user_model.objects.get(username="ana")
    Assignment.objects.create(study=study, codebook=codebook, output=story, coder=ana, position=1)

    page.goto(link)
    page.fill("input[name=new_password1]", NEW_PASSWORD)
    page.fill("input[name=new_password2]", NEW_PASSWORD)
    page.click("button:has-text('Set password')")
    page.wait_for_selector("text=Your password is set and you are signed in")  # on the study that invited her
    page.wait_for_url(f"**/studies/{study.pk}/")
    sidebar = page.locator("nav.sidebar").inner_text()
    for hidden in ["Agreement", "Exports", "Members"]:
        assert hidden not in sidebar
    assert "Coding" in sidebar

    page.click("nav.sidebar a:has-text('Coding')")
    page.wait_for_url(f"**/studies/{study.pk}/coding/")  # else the counts below could read the old page
    page.wait_for_selector("text=Continue coding")
    for researcher_only in ["Assignments", "AI code discovery", "New codebook"]:
        assert page.locator(f"main a:has-text('{researcher_only}')").count() == 0
    page.click("text=Continue coding")
    page.wait_for_selector("#story")
    select(page, "led the expedition")
    page.keyboard.press("2")  # F charisma
    page.wait_for_selector("#codings li[data-coding]")
    coding = Coding.objects.get()
    assert (coding.coder.username, coding.code_id, coding.quote) == ("ana", codes["lead_f"].pk, "led the expedition")
