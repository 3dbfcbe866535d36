"""Accounts: a study admin invites a person from Members; the one-time link sets a password; users change theirs."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.core import mail
from django.test import Client, override_settings

from stereoscope.models import Membership

NEW_PASSWORD = "violet-lantern-4821"


def _invite(client, study, follow=False, **data):
    return client.post(f"/studies/{study.pk}/members/", {"role": "coder", **data}, follow=follow)


def _link(html):
    return re.search(r'(/accounts/invitation/[^"<\s]+/)', html).group(1)


@pytest.mark.django_db
def test_admin_invites_new_person_who_sets_password_once(roles):
    study = roles["a"]
    admin = Client()
    admin.force_login(roles["users"]["admin"])
    response = _invite(admin, study, username="ana", email="ana@example.org")
    assert response.status_code == 200
    html = response.content.decode()
    assert "not shown again" in html
    user = get_user_model().objects.get(username="ana")
    assert user.email == "ana@example.org" and not user.has_usable_password()
    assert Membership.objects.get(study=study, user=user).role == "coder"
    link = _link(html)

    guest = Client()
    form_page = guest.get(link, follow=True)
    assert b'name="new_password1"' in form_page.content
    done = guest.post(
        form_page.redirect_chain[-1][0] if form_page.redirect_chain else link,
        {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
        follow=True,
    )
    assert done.status_code == 200 and b"Your password is set" in done.content
    assert Client().login(username="ana", password=NEW_PASSWORD)
    # one time only: the same link no longer works
    again = Client().get(link, follow=True)
    assert b'name="new_password1"' not in again.content and b"already been used or has expired" in again.content


@pytest.mark.django_db
def test_unknown_username_without_email_is_refused_and_nothing_saved(roles):
    admin = Client()
    admin.force_login(roles["users"]["admin"])
    users_before = get_user_model().objects.count()
    response = _invite(admin, roles["a"], username="nobody", follow=True)
    assert response.status_code == 200  # the same answer as for an existing account: no probing for usernames
    assert b"to invite a new person, give their e-mail address" in response.content.lower()
    response = _invite(admin, roles["a"], username="bad name!", email="x@example.org")
    assert response.status_code == 400
    assert get_user_model().objects.count() == users_before


@pytest.mark.django_db
@pytest.mark.parametrize("who", ["coder", "researcher", "b_admin"])
def test_only_study_admins_invite(roles, who):
    client = Client()
    client.force_login(roles["users"][who])
    response = _invite(client, roles["a"], username="eve", email="eve@example.org")
    assert response.status_code in (403, 404)
    assert not get_user_model().objects.filter(username="eve").exists()


@pytest.mark.django_db
def test_existing_user_is_added_without_a_link(roles):
    admin = Client()
    admin.force_login(roles["users"]["admin"])
    response = _invite(admin, roles["a"], username="outsider", follow=True)
    assert b"outsider is now coder" in response.content
    assert b"/accounts/invitation/" not in response.content


@pytest.mark.django_db
def test_invitation_is_mailed_when_email_is_configured(roles):
    admin = Client()
    admin.force_login(roles["users"]["admin"])
    with override_settings(SEND_INVITATION_EMAILS=True):
        html = _invite(admin, roles["a"], username="bo", email="bo@example.org").content.decode()
    assert len(mail.outbox) == 1 and mail.outbox[0].to == ["bo@example.org"]
    assert _link(html) in mail.outbox[0].body
    assert "sent to bo@example.org" in html


@pytest.mark.django_db
def test_invitation_not_mailed_without_email_configuration(roles):
    admin = Client()
    admin.force_login(roles["users"]["admin"])
    with override_settings(SEND_INVITATION_EMAILS=False):
        _invite(admin, roles["a"], username="cy", email="cy@example.org")
    assert mail.outbox == []


@pytest.mark.django_db
def test_user_changes_password(roles):
    client = Client()
    client.force_login(roles["users"]["coder"])
    page = client.get("/accounts/password/")
    assert page.status_code == 200 and b'name="old_password"' in page.content
    response = client.post(
        "/accounts/password/",
        {"old_password": "correct-horse-battery", "new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD},
        follow=True,
    )
    assert b"Your password was changed" in response.content
    assert Client().login(username="coder", password=NEW_PASSWORD)
    assert Client().get("/accounts/password/").status_code == 302  # anonymous users log in first


@pytest.mark.django_db
def test_api_invites_with_email_and_refuses_non_admins(roles, api_for):
    url = f"/api/studies/{roles['a'].pk}/members/"
    refused = api_for(roles["users"]["researcher"]).post(url, {"username": "dee", "email": "dee@example.org"})
    assert refused.status_code == 403 and not get_user_model().objects.filter(username="dee").exists()
    missing = api_for(roles["users"]["admin"]).post(url, {"username": "dee"})
    assert missing.status_code == 202 and "e-mail" in missing.json()["detail"]
    assert not get_user_model().objects.filter(username="dee").exists()
    response = api_for(roles["users"]["admin"]).post(
        url, {"username": "dee", "email": "dee@example.org", "role": "coder"}
    )
    assert response.status_code == 201
    assert "/accounts/invitation/" in response.json()["invitation_url"]
    assert not get_user_model().objects.get(username="dee").has_usable_password()


def test_email_settings_can_never_be_an_endpoint_key(settings):
    from generation.runs.key_variables import key_variable_problem

    settings.PROVIDER_KEY_VARIABLES = ["EMAIL_HOST_PASSWORD", "DEFAULT_FROM_EMAIL", "OPENAI_API_KEY"]
    for name in ["EMAIL_HOST_PASSWORD", "EMAIL_HOST_USER", "DEFAULT_FROM_EMAIL"]:
        assert "the server itself uses" in key_variable_problem(name)
    assert key_variable_problem("OPENAI_API_KEY") is None
