"""Issue 32: a pending invitation cannot be taken over. Only the study that created the pending account issues its
link, and only by that study's admins; adding the person elsewhere adds the membership and gives no link; adding by
username answers the same whether or not the account exists; the invitee who sets a password is signed in."""

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from stereoscope.models import Invitation, Membership, Study

NEW_PASSWORD = "violet-lantern-4821"


def _link(text):
    return re.search(r"(/accounts/invitation/[^\"<\s]+/)", text).group(1)


@pytest.fixture
def pending(roles, api_for):
    """Admin of study A invites pending1."""
    response = api_for(roles["users"]["admin"]).post(
        f"/api/studies/{roles['a'].pk}/members/", {"username": "pending1", "email": "p1@example.org", "role": "admin"}
    )
    assert response.status_code == 201
    return response.json()["invitation_url"]


def _set_password(client, link):
    form_page = client.get(link, follow=True)
    assert b'name="new_password1"' in form_page.content
    url = form_page.redirect_chain[-1][0] if form_page.redirect_chain else link
    return client.post(url, {"new_password1": NEW_PASSWORD, "new_password2": NEW_PASSWORD}, follow=True)


@pytest.mark.django_db
def test_other_study_admin_gets_no_link_through_the_api(roles, api_for, pending):
    invitation = Invitation.objects.get(user__username="pending1")
    assert invitation.study == roles["a"]
    before = Membership.objects.count()
    response = api_for(roles["users"]["b_admin"]).post(
        f"/api/studies/{roles['b'].pk}/members/", {"username": "pending1", "role": "admin"}
    )
    assert response.status_code == 202
    assert "invitation_url" not in response.json() and "/accounts/invitation/" not in response.content.decode()
    assert Membership.objects.count() == before + 1  # the membership is added
    assert Membership.objects.get(study=roles["b"], user__username="pending1").role == "admin"
    # with an e-mail too: still no link
    response = api_for(roles["users"]["b_admin"]).post(
        f"/api/studies/{roles['b'].pk}/members/", {"username": "pending1", "email": "evil@example.org"}
    )
    assert response.status_code == 202 and "/accounts/invitation/" not in response.content.decode()
    assert get_user_model().objects.get(username="pending1").email == "p1@example.org"
    # the real invitee's link still works and signs them in, landing on the study that invited them
    guest = Client()
    done = _set_password(guest, pending.replace("http://testserver", ""))
    assert done.status_code == 200
    assert done.redirect_chain[-1][0] == f"/studies/{roles['a'].pk}/"
    assert b"Your password is set and you are signed in" in done.content
    assert guest.get(f"/studies/{roles['a'].pk}/").status_code == 200
    assert Invitation.objects.get(user__username="pending1").accepted_at is not None


@pytest.mark.django_db
def test_other_study_admin_gets_no_link_on_the_page(roles, client_for, pending):
    response = client_for(roles["users"]["b_admin"]).post(
        f"/studies/{roles['b'].pk}/members/",
        {"username": "pending1", "email": "x@example.org", "role": "admin"},
        follow=True,
    )
    assert response.status_code == 200
    assert b"/accounts/invitation/" not in response.content
    assert b"pending1 is now admin if an account by that name exists" in response.content
    assert Membership.objects.filter(study=roles["b"], user__username="pending1").exists()


@pytest.mark.django_db
def test_inviting_study_admin_reinvites_with_a_fresh_link(roles, api_for, pending):
    response = api_for(roles["users"]["admin"]).post(
        f"/api/studies/{roles['a'].pk}/members/", {"username": "pending1", "role": "admin"}
    )
    assert response.status_code == 201 and "/accounts/invitation/" in response.json()["invitation_url"]


@pytest.mark.django_db
def test_researcher_of_inviting_study_cannot_get_a_link(roles, pending):
    from stereoscope import invitations

    membership, path = invitations.add_or_invite_member(
        study=roles["a"], username="pending1", email="", role="coder", actor=roles["users"]["researcher"]
    )
    assert path is None and membership is not None


@pytest.mark.django_db
def test_a_study_created_later_by_the_attacker_gets_no_link(roles, api_for, make_user, pending):
    mallory = make_user("mallory")
    study = Study.objects.create(name="M", created_by=mallory)
    Membership.objects.create(study=study, user=mallory, role="admin")
    response = api_for(mallory).post(f"/api/studies/{study.pk}/members/", {"username": "pending1", "role": "coder"})
    assert response.status_code == 202 and "invitation" not in response.content.decode()


@pytest.mark.django_db
def test_adding_answers_the_same_whether_or_not_the_name_exists(roles, api_for, client_for):
    users_before = get_user_model().objects.count()
    api = api_for(roles["users"]["admin"])
    url = f"/api/studies/{roles['a'].pk}/members/"
    exists = api.post(url, {"username": "outsider", "role": "coder"})
    missing = api.post(url, {"username": "nobody", "role": "coder"})
    assert exists.status_code == missing.status_code == 202
    assert exists.json()["detail"].replace("outsider", "X") == missing.json()["detail"].replace("nobody", "X")
    assert set(exists.json()) == set(missing.json())
    assert get_user_model().objects.count() == users_before  # an account is only ever created by an invitation
    web = client_for(roles["users"]["admin"])
    page_exists = web.post(f"/studies/{roles['a'].pk}/members/", {"username": "outsider", "role": "coder"})
    page_missing = web.post(f"/studies/{roles['a'].pk}/members/", {"username": "nobody", "role": "coder"})
    assert page_exists.status_code == page_missing.status_code == 302
    assert page_exists["Location"] == page_missing["Location"]


@pytest.mark.django_db
def test_invitee_is_signed_in_and_lands_on_their_study(roles, client_for):
    admin = client_for(roles["users"]["admin"])
    html = admin.post(
        f"/studies/{roles['a'].pk}/members/", {"username": "ana", "email": "ana@example.org", "role": "coder"}
    ).content.decode()
    guest = Client()
    done = _set_password(guest, _link(html))
    assert done.redirect_chain[-1][0] == f"/studies/{roles['a'].pk}/"
    assert int(guest.session["_auth_user_id"]) == get_user_model().objects.get(username="ana").pk
