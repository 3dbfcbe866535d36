"""Shared fixtures: users in every role, two studies, a browser, a worker environment."""
import os

import pytest

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API runs an event loop

CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
PASSWORD = "correct-horse-battery"
# The key variables the tests' endpoints name; the operator's allow-list (PROVIDER_KEY_VARIABLES) must hold them.
TEST_KEY_VARIABLES = ["OPENAI_API_KEY", "ANTHROPIC_API_KEY", "FAKE_KEY_ENV", "CANARY_KEY", "API_TEST_KEY", "MY_KEY_VAR",
                      "NOT_SET_ANYWHERE", "NOT_SET_ANYWHERE_KEY", "NO_SUCH_KEY_VAR", "UNSET_CLI_KEY"]
os.environ["PROVIDER_KEY_VARIABLES"] = ",".join(TEST_KEY_VARIABLES)  # child processes (workers) inherit it


@pytest.fixture(autouse=True, scope="session")
def provider_key_variables():
    """Tests use their own key variable names; this process's settings may have been read before this file."""
    from django.conf import settings

    settings.PROVIDER_KEY_VARIABLES = list(TEST_KEY_VARIABLES)
    yield


@pytest.fixture(autouse=True, scope="session")
def celery_eager():
    """Unit tests run tasks eagerly; the worker tests send real messages with send_task."""
    from stereoscope.celery import app

    app.conf.task_always_eager = True
    app.conf.task_eager_propagates = True
    yield


@pytest.fixture
def make_user(django_user_model):
    def make(username, **extra):
        return django_user_model.objects.create_user(username=username, password=PASSWORD, **extra)

    return make


@pytest.fixture
def roles(db, make_user):
    """Study A with a coder, a researcher and an admin; study B with its own admin; an outsider; staff."""
    from stereoscope.models import Membership, Study

    users = {name: make_user(name) for name in ["coder", "researcher", "admin", "b_admin", "outsider"]}
    users["staff"] = make_user("staff", is_staff=True)
    study_a = Study.objects.create(name="Study A", created_by=users["admin"])
    study_b = Study.objects.create(name="Study B", created_by=users["b_admin"])
    for name, role in [("coder", "coder"), ("researcher", "researcher"), ("admin", "admin")]:
        Membership.objects.create(study=study_a, user=users[name], role=role)
    Membership.objects.create(study=study_b, user=users["b_admin"], role="admin")
    return {"users": users, "a": study_a, "b": study_b}


@pytest.fixture
def client_for(client):
    from django.test import Client

    def make(user):
        c = Client()
        c.force_login(user)
        return c

    return make


@pytest.fixture
def api_for():
    from rest_framework.test import APIClient

    def make(user):
        c = APIClient()
        c.force_authenticate(user)
        return c

    return make


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
        yield b
        b.close()


@pytest.fixture
def page(browser, live_server):
    context = browser.new_context(base_url=live_server.url)
    page = context.new_page()
    page.set_default_timeout(15000)
    dialogs = []
    page.on("dialog", lambda d: (dialogs.append(d.message), d.dismiss()))
    page.dialogs = dialogs
    yield page
    context.close()


@pytest.fixture
def login(page):
    def do(username, password=PASSWORD):
        page.goto("/accounts/login/")
        page.fill("input[name=username]", username)
        page.fill("input[name=password]", password)
        page.click("button[type=submit]")
        page.wait_for_load_state()

    return do


def subprocess_database_url():
    """A DATABASE_URL that points a child process (a worker) at the current test database."""
    from django.db import connection

    s = connection.settings_dict
    if connection.vendor == "sqlite":
        return f"sqlite:///{s['NAME']}"
    user = s.get("USER") or ""
    password = f":{s['PASSWORD']}" if s.get("PASSWORD") else ""
    auth = f"{user}{password}@" if user else ""
    return f"postgres://{auth}{s.get('HOST') or '127.0.0.1'}:{s.get('PORT') or 5432}/{s['NAME']}"


@pytest.fixture(scope="session")
def _fake_provider_server():
    from .fake_provider import FakeProvider

    server = FakeProvider().start()
    yield server
    server.stop()


@pytest.fixture
def fake_provider(_fake_provider_server):
    """The fake OpenAI/Anthropic server on 127.0.0.1 (see tests/fake_provider.py), reset for each test."""
    _fake_provider_server.reset()
    _fake_provider_server.default_delay = 0.0
    yield _fake_provider_server
    _fake_provider_server.reset()
