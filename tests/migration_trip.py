"""Data-migration tests on a database of their own.

Such a test used to migrate the shared test database back to the state before a data migration and forward
again (about 70 s here for the export-job move: Django renders the model state of every migration it unapplies)
and then restore every migration after the test. Here the test gets an empty database (a file beside the test's
tmp_path on SQLite, a new database on PostgreSQL), migrates it forward to the state before the move (only the
migrations that state needs), and the shared test database is not touched.
"""

import os
from contextlib import contextmanager

from django.db import connections
from django.db.migrations.executor import MigrationExecutor
from django.db.migrations.loader import MigrationLoader


@contextmanager
def empty_database(tmp_path):
    """Point the default connection at an empty database for the duration; then back, and the database dropped."""
    connection = connections["default"]
    saved = connection.settings_dict["NAME"]
    connection.close()
    if connection.vendor == "sqlite":
        name = str(tmp_path / "migration-trip.sqlite3")
    else:
        name = f"stereoscope_migration_trip_{os.getpid()}"
        _drop_and_create(connection, name, create=True)
    connection.settings_dict["NAME"] = name
    try:
        yield connection
    finally:
        connection.close()
        connection.settings_dict["NAME"] = saved
        if connection.vendor != "sqlite":
            _drop_and_create(connection, name, create=False)


def _drop_and_create(connection, name, create):
    quoted = connection.ops.quote_name(name)
    with connection._nodb_cursor() as cursor:
        cursor.execute(f"DROP DATABASE IF EXISTS {quoted}")
        if create:
            cursor.execute(f"CREATE DATABASE {quoted}")


def migrate(targets):
    """Migrate the default database to `targets` (only what they need); the historical models of every app as
    that database now stands."""
    connection = connections["default"]
    MigrationExecutor(connection).migrate(targets)
    loader = MigrationLoader(connection)
    return loader.project_state(sorted(loader.applied_migrations)).apps


def leaves(*apps):
    """The latest migration of each of these apps (of every app when none is named)."""
    graph = MigrationLoader(None, ignore_no_migrations=True).graph
    return [node for node in graph.leaf_nodes() if not apps or node[0] in apps]
