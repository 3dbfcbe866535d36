"""One test database per test run, built from the models and copied for each pytest-xdist worker.

Migrating from scratch takes about 20 s of CPU here (Django renders the model state of every migration), so the
test database is built from the models instead (Django's `TEST: {"MIGRATE": False}`: one `syncdb`, about 2 s) and
every migration is recorded as applied, so a later `migrate` finds nothing to do.
`tests/architecture/test_migrations_match_models.py` checks that the migrations describe the models and that
applying them to an empty database gives the same schema. The first xdist worker builds the database, keeps a copy as a
template and the others start from that copy: the SQLite file is copied, PostgreSQL creates the database with
`TEMPLATE`. The copy lives in a folder named after the xdist controller's process id; the controller removes it (and
drops the PostgreSQL template) when the run ends.
"""

import fcntl
import os
import shutil
import sqlite3
import tempfile
from contextlib import contextmanager
from pathlib import Path

from django.db import connections

from stereoscope.schema_build import record_every_migration_applied


def _folder(controller_pid):
    return Path(tempfile.gettempdir()) / f"stereoscope-test-db-{controller_pid}"


def _template_name(controller_pid):
    return f"stereoscope_test_template_{controller_pid}"


@contextmanager
def _locked(path):
    with open(path, "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


@contextmanager
def test_databases_from_template(config, aliases, share=True):
    """Around Django's setup_databases() in an xdist worker: copy the run's migrated template when there is one,
    else migrate (holding the lock, so the others wait) and leave a template behind. Without xdist (or with
    --reuse-db / --no-migrations, share=False): nothing."""
    if not share or not hasattr(config, "workerinput") or set(aliases) != {"default"}:
        yield
        return
    connection = connections["default"]
    vendor = connection.vendor
    if vendor not in ("sqlite", "postgresql"):
        yield
        return
    controller = os.getppid()  # execnet starts each xdist worker as a child of the controller
    folder = _folder(controller)
    folder.mkdir(exist_ok=True)
    ready = folder / "ready"
    with _locked(folder / "lock"):
        first = not ready.exists()
        if first:
            yield
            _save_template(connection, folder, controller)
            ready.write_text(vendor)
            return
    with _created_from_template(connection, folder, controller):
        yield


@contextmanager
def built_from_models(aliases):
    """Around Django's setup_databases(): create each test database from the models rather than by migrating, then
    record every migration as applied in it."""
    tests = [connections[alias].settings_dict["TEST"] for alias in aliases]
    saved = [test.get("MIGRATE", True) for test in tests]
    for test in tests:
        test["MIGRATE"] = False
    try:
        yield
    finally:
        for test, value in zip(tests, saved, strict=True):
            test["MIGRATE"] = value
    for alias in aliases:
        record_every_migration_applied(connections[alias])


def _save_template(connection, folder, controller):
    if connection.vendor == "sqlite":
        copy = folder / "template.sqlite3.part"
        with sqlite3.connect(connection.settings_dict["NAME"]) as source, sqlite3.connect(copy) as target:
            source.backup(target)
        source.close()
        target.close()
        copy.rename(folder / "template.sqlite3")
        return
    name = connection.settings_dict["NAME"]
    connection.close()  # CREATE DATABASE ... TEMPLATE needs the source without sessions
    with connection._nodb_cursor() as cursor:
        quote = connection.ops.quote_name
        cursor.execute(f"CREATE DATABASE {quote(_template_name(controller))} TEMPLATE {quote(name)}")
    (folder / "postgresql").write_text(_template_name(controller))


@contextmanager
def _created_from_template(connection, folder, controller):
    creation = type(connection.creation)
    if connection.vendor == "postgresql":
        test = connection.settings_dict["TEST"]
        test["TEMPLATE"] = _template_name(controller)
        try:
            yield
        finally:
            test.pop("TEMPLATE", None)
        return
    original = creation._create_test_db

    def create_from_template(self, *args, **kwargs):
        name = original(self, *args, **kwargs)
        for leftover in (f"{name}-wal", f"{name}-shm"):
            if os.path.exists(leftover):
                os.remove(leftover)
        shutil.copyfile(folder / "template.sqlite3", name)
        return name

    creation._create_test_db = create_from_template
    try:
        yield
    finally:
        creation._create_test_db = original


def copy_of_migrated_sqlite(config, destination):
    """Copy this run's migrated SQLite template to `destination` (for a subprocess that would migrate a database of
    its own from scratch). False when there is none (no xdist, or PostgreSQL): the subprocess migrates."""
    if not hasattr(config, "workerinput"):
        return False
    template = _folder(os.getppid()) / "template.sqlite3"
    if not template.exists():
        return False
    shutil.copyfile(template, destination)
    return True


def remove_templates(config):
    """In the xdist controller at the end of the run: the template copy and the PostgreSQL template database."""
    if hasattr(config, "workerinput"):
        return
    folder = _folder(os.getpid())
    if not folder.exists():
        return
    marker = folder / "postgresql"
    if marker.exists():
        import psycopg

        params = connections["default"].get_connection_params()
        params["dbname"] = "postgres"
        with psycopg.connect(**params, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{marker.read_text()}"')
    shutil.rmtree(folder, ignore_errors=True)
