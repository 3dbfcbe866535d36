"""Shared fixtures: users in every role, two studies, a browser, a worker environment."""

import gc
import os
import sys
from contextlib import nullcontext
from pathlib import Path

import pytest
from threadpoolctl import threadpool_limits

os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")  # Playwright's sync API runs an event loop

# One BLAS/OpenMP thread per test process. The suite runs as several processes (xdist workers, worker processes,
# Chromium) on few cores; numpy's and scipy's OpenBLAS would start a thread per core in each and oversubscribe them
# (the small matrices here gain nothing from threads). The variables cover libraries loaded later and the child
# processes; threadpool_limits the ones Django's setup may have loaded already.
for _variable in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_variable] = "1"
threadpool_limits(limits=1)

# Cyclic garbage is collected between tests, not while they run. With Python's default thresholds an xdist worker
# ran about 8,000 collections and spent 11-19 s in them over the suite (measured with gc.callbacks): each one walks
# the objects a test keeps alive. Here automatic collection is off; every GC_EVERY_TESTS tests one collection frees
# the cycles, and what survives it is frozen (gc.freeze) so the next collection walks only what came after.
GC_EVERY_TESTS = 100
gc.disable()
_tests_since_gc = 0


def pytest_runtest_logfinish(nodeid, location):
    global _tests_since_gc
    _tests_since_gc += 1
    if _tests_since_gc >= GC_EVERY_TESTS:
        _tests_since_gc = 0
        gc.collect()
        gc.freeze()


# The test client closes a streaming response (a CSV download) only when the test reads it to the end. One left
# unread holds its database cursor open: a server-side cursor inside the test's transaction on PostgreSQL. Each such
# response is closed when its test ends, before the fixtures' teardown rolls the transaction back; otherwise a later
# collection of its reference cycle, inside another test's transaction, finalised the cursor there and its CLOSE
# failed ("cursor ... does not exist"), aborting that test's transaction.
_unread_downloads = []


def _tracking_closing_iterator_wrapper(iterable, close):
    _unread_downloads.append(close)
    return _closing_iterator_wrapper(iterable, close)


def close_unread_downloads():
    """Close the streaming responses the test client gave out and the test did not read to the end (as the test
    client closes one read to the end: without request_finished closing the database connection)."""
    from django.core.signals import request_finished
    from django.db import close_old_connections

    while _unread_downloads:
        close = _unread_downloads.pop()
        if close.__self__.closed:
            continue
        request_finished.disconnect(close_old_connections)
        try:
            close()
        finally:
            request_finished.connect(close_old_connections)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_teardown(item, nextitem):
    close_unread_downloads()
    yield


@pytest.fixture
def automatic_gc():
    """For a test about automatic garbage collection itself: on during the test, off again after."""
    gc.enable()
    yield
    gc.disable()


CHROMIUM = os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PASSWORD = "correct-horse-battery"
REPO_ROOT = Path(__file__).resolve().parents[1]


def _main_checkout(root):
    """The main checkout of `root`: itself, or for a git worktree the checkout that owns its .git directory."""
    dot_git = root / ".git"
    if dot_git.is_file():  # a worktree: "gitdir: <main>/.git/worktrees/<name>"
        gitdir = Path(dot_git.read_text(encoding="utf-8").split(":", 1)[1].strip())
        common = gitdir / "commondir"
        common_dir = (gitdir / common.read_text(encoding="utf-8").strip()).resolve() if common.exists() else gitdir
        return common_dir.parent
    return root


def _find_shared():
    """The research folder `shared/` beside the checkout (../shared), or STEREOSCOPE_SHARED_DIR."""
    candidates = [
        os.environ.get("STEREOSCOPE_SHARED_DIR", ""),
        REPO_ROOT.parent / "shared",
        _main_checkout(REPO_ROOT).parent / "shared",
    ]
    return next((Path(c) for c in candidates if c and Path(c, "seeds").is_dir()), None)


SHARED = _find_shared()


def shared_file(*parts):
    """A file of ../shared; the test skips (saying where it looked) when the research folder is not beside it."""
    if SHARED is None:
        pytest.skip("the research folder ../shared is not beside this checkout; set STEREOSCOPE_SHARED_DIR")
    return SHARED.joinpath(*parts)


def pytest_configure(config):
    """A fast password hasher: Django's default costs about 0.18 s per user, and fixtures make several per test."""
    from django.conf import settings

    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
    from tests.db_template import remove_templates

    remove_templates(config)  # a template left by an earlier run whose controller had this process id
    from django.test import client

    global _closing_iterator_wrapper
    _closing_iterator_wrapper = client.closing_iterator_wrapper
    client.closing_iterator_wrapper = _tracking_closing_iterator_wrapper  # see close_unread_downloads


@pytest.fixture(scope="session")
def django_db_setup(
    request,
    django_test_environment,
    django_db_blocker,
    django_db_use_migrations,
    django_db_keepdb,
    django_db_createdb,
    django_db_modify_db_settings,
):
    """pytest-django's test database set-up (same options), with the database built from the models and every
    migration recorded as applied (tests/db_template.py), then copied from the run's first xdist worker."""
    from django.test.utils import setup_databases, teardown_databases
    from pytest_django.fixtures import _disable_migrations, _get_databases_for_setup

    from tests.db_template import built_from_models, test_databases_from_template

    keepdb = django_db_keepdb and not django_db_createdb
    if not django_db_use_migrations:
        _disable_migrations()
    aliases, serialized_aliases = _get_databases_for_setup(request.session.items)
    verbosity = request.config.option.verbose
    share = django_db_use_migrations and not keepdb
    with (
        django_db_blocker.unblock(),
        test_databases_from_template(request.config, aliases, share),
        built_from_models(aliases) if django_db_use_migrations else nullcontext(),
    ):
        db_cfg = setup_databases(
            verbosity=verbosity,
            interactive=False,
            aliases=aliases,
            serialized_aliases=serialized_aliases,
            keepdb=keepdb,
        )
    yield
    if not django_db_keepdb:
        with django_db_blocker.unblock():
            teardown_databases(db_cfg, verbosity=verbosity)


def pytest_unconfigure(config):
    from tests.db_template import remove_templates

    remove_templates(config)


# Tests that start Celery workers or `serve` (marked `worker`) share the broker folder or Redis database, the
# default queue and the beat schedule file of DATA_DIR; under pytest-xdist (`make test`: --dist loadgroup) they all
# run in one xdist worker, one after another, while the other workers run the rest.
WORKER_PROCESSES_GROUP = "worker-processes"


def pytest_collection_modifyitems(config, items):
    for item in items:
        if item.get_closest_marker("worker"):
            item.add_marker(pytest.mark.xdist_group(WORKER_PROCESSES_GROUP))


# The key variables the tests' endpoints name; the operator's allow-list (PROVIDER_KEY_VARIABLES) must hold them.
TEST_KEY_VARIABLES = [
    "OPENAI_API_KEY",
    "ANTHROPIC_API_KEY",
    "FAKE_KEY_ENV",
    "CANARY_KEY",
    "API_TEST_KEY",
    "MY_KEY_VAR",
    "NOT_SET_ANYWHERE",
    "NOT_SET_ANYWHERE_KEY",
    "NO_SUCH_KEY_VAR",
    "UNSET_CLI_KEY",
]
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


BROWSER_WAIT_MS = 90_000


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
    # Generous: a wait ends as soon as its state arrives, and a loaded CI machine can take long to get there.
    page.set_default_timeout(BROWSER_WAIT_MS)
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


class BlockLocalExtra:
    """A meta-path finder that makes torch and transformers look uninstalled."""

    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("torch", "transformers"):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None


@pytest.fixture
def no_torch(monkeypatch):
    """A server without the 'local' extra: `import torch` and `import transformers` fail."""
    for name in ("torch", "transformers"):
        monkeypatch.delitem(sys.modules, name, raising=False)  # restored after the test
    monkeypatch.setattr(sys, "meta_path", [BlockLocalExtra(), *sys.meta_path])
    with pytest.raises(ModuleNotFoundError):
        import torch  # noqa: F401


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


@pytest.fixture
def celery_processes(tmp_path):
    """Celery workers and beat on the test database and broker (stereoscope/testing/workers.py), each logging to a
    file under tmp_path/celery; whatever still runs is stopped after the test, before the database is flushed."""
    from django.conf import settings

    from stereoscope.testing.workers import CeleryProcesses

    log_dir = tmp_path / "celery"
    log_dir.mkdir()
    with CeleryProcesses(
        database_url=subprocess_database_url(),
        broker=settings.CELERY_BROKER_URL,
        env={"STEREOSCOPE_DATA_DIR": settings.DATA_DIR},
        log_dir=log_dir,
    ) as celery:
        yield celery


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
