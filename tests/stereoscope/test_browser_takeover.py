"""Must show (issue 32): in a browser, another study's admin who adds a pending invitee gets no link, and the real
invitee's link still works and signs them in on the study that invited them."""

import pytest

from stereoscope.models import Membership

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

NEW_PASSWORD = "violet-lantern-4821"


def test_takeover_attempt_gets_no_link_and_the_invitee_link_still_works(page, login, roles):
    study_a, study_b = roles["a"], roles["b"]
    login("admin")
    page.goto(f"/studies/{study_a.pk}/members/")
    page.fill("input[name=username]", "pending1")
    page.fill("input[name=email]", "p1@example.org")
    page.select_option("select[name=role]", "admin")
    page.click("text=Save member")
    link = page.locator("input.invitation-link").input_value()
    assert "/accounts/invitation/" in link
    page.click("button:has-text('Log out')")
    page.wait_for_url("**/accounts/login/**")

    # the attacker administers another study and adds the pending account there
    login("b_admin")
    page.goto(f"/studies/{study_b.pk}/members/")
    page.fill("input[name=username]", "pending1")
    page.fill("input[name=email]", "attacker@example.org")
    page.select_option("select[name=role]", "admin")
    page.click("text=Save member")
    page.wait_for_selector("text=pending1 is now admin if an account by that name exists")
    assert page.locator("input.invitation-link").count() == 0
    assert "/accounts/invitation/" not in page.content()
    assert Membership.objects.filter(study=study_b, user__username="pending1").exists()
    page.click("button:has-text('Log out')")
    page.wait_for_url("**/accounts/login/**")

    # the real invitee's link still works and signs them in, on the study that invited them
    page.goto(link)
    page.fill("input[name=new_password1]", NEW_PASSWORD)
    page.fill("input[name=new_password2]", NEW_PASSWORD)
    page.click("button:has-text('Set password')")
    page.wait_for_url(f"**/studies/{study_a.pk}/")
    page.wait_for_selector("text=Your password is set and you are signed in")
    assert page.locator("h1").inner_text() == "Study A"
    assert page.locator("button:has-text('Log out')").count() == 1
