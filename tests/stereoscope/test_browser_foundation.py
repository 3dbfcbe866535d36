"""A new user's first steps in Chromium: log in as the printed admin, create a study, add a coder."""

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_admin_logs_in_creates_study_and_adds_coder(page, login, make_user, django_user_model):
    django_user_model.objects.create_superuser("admin", password="s3cret-pass-123")
    make_user("carla")
    page.goto("/studies/")
    assert "/accounts/login/" in page.url  # anonymous users are sent to login
    login("admin", "s3cret-pass-123")
    page.fill("input[name=name]", "Gender audit")
    page.click("text=Create study")
    page.wait_for_selector("h1:has-text('Gender audit')")
    for label in ["Toolkits", "Runs", "Coding", "Judging", "Questionnaires", "Exports"]:
        assert page.locator(f"nav.sidebar a:has-text('{label}')").count() == 1
    page.click("nav.sidebar a:has-text('Members')")
    page.fill("input[name=username]", "carla")
    page.select_option("select[name=role]", "coder")
    page.click("text=Save member")
    page.wait_for_selector("text=carla is now coder")
    assert page.locator("table >> text=carla").count() == 1
    from stereoscope.models import Membership

    assert Membership.objects.get(user__username="carla").role == "coder"
