"""Issue 32: failed logins on the login page and /api/token/ are throttled per username and per address, with a
clear message (429) and an unlock by staff; each lockout is logged."""

import logging

import pytest
from django.core.management import call_command
from django.test import Client
from rest_framework.test import APIClient

from tests.conftest import PASSWORD

LIMIT = 3


@pytest.fixture(autouse=True)
def small_limit(settings):
    settings.AXES_FAILURE_LIMIT = LIMIT


def _page_login(client, username, password, address="10.0.0.1"):
    return client.post("/accounts/login/", {"username": username, "password": password}, REMOTE_ADDR=address)


def _token(username, password, address="10.0.0.2"):
    return APIClient().post(
        "/api/token/", {"username": username, "password": password}, format="json", REMOTE_ADDR=address
    )


@pytest.mark.django_db
def test_login_page_locks_a_username_after_failures_and_staff_unlock(roles, caplog):
    client = Client()
    for _ in range(LIMIT - 1):
        assert _page_login(client, "coder", "wrong").status_code == 200  # the form's own error
    with caplog.at_level(logging.WARNING, logger="stereoscope.security"):
        locked = _page_login(client, "coder", "wrong")
    assert locked.status_code == 429 and b"Too many failed logins" in locked.content
    assert any("locked out" in r.getMessage() and "coder" in r.getMessage() for r in caplog.records)
    # the right password does not help now, from any address
    right = _page_login(Client(), "coder", PASSWORD, address="10.9.9.9")
    assert right.status_code == 429 and "_auth_user_id" not in Client().session
    # another user from another address is not affected
    assert _page_login(Client(), "researcher", PASSWORD, address="10.8.8.8").status_code == 302
    call_command("axes_reset_username", "coder")
    assert _page_login(Client(), "coder", PASSWORD, address="10.9.9.9").status_code == 302


@pytest.mark.django_db
def test_login_page_locks_an_address_trying_many_usernames(roles):
    for name in ["u1", "u2", "u3"]:
        response = _page_login(Client(), name, "wrong", address="10.1.1.1")
    assert response.status_code == 429
    assert _page_login(Client(), "coder", PASSWORD, address="10.1.1.1").status_code == 429
    assert _page_login(Client(), "coder", PASSWORD, address="10.1.1.2").status_code == 302
    call_command("axes_reset_ip", "10.1.1.1")
    assert _page_login(Client(), "researcher", PASSWORD, address="10.1.1.1").status_code == 302


@pytest.mark.django_db
def test_token_route_answers_429_with_a_message(roles):
    for _ in range(LIMIT - 1):
        assert _token("admin", "wrong").status_code == 400
    locked = _token("admin", "wrong")
    assert locked.status_code == 429 and "Too many failed logins" in locked.json()["detail"]
    assert _token("admin", PASSWORD, address="10.7.7.7").status_code == 429
    call_command("axes_reset_username", "admin")
    ok = _token("admin", PASSWORD, address="10.7.7.7")
    assert ok.status_code == 200 and ok.json()["token"]


@pytest.mark.django_db
def test_a_success_before_the_limit_resets_the_count(roles):
    for _ in range(LIMIT - 1):
        _page_login(Client(), "coder", "wrong")
    assert _page_login(Client(), "coder", PASSWORD).status_code == 302
    for _ in range(LIMIT - 1):
        assert _page_login(Client(), "coder", "wrong").status_code == 200
