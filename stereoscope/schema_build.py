"""A fresh database built from the models instead of by applying every migration.

Applying the migrations from scratch costs about 12 s of CPU here (Django renders the model state of each of them);
creating the tables straight from the models (`migrate --run-syncdb` with migrations switched off, as Django's own
test runner does with `TEST: {"MIGRATE": False}`) takes about 1 s. Every migration is then recorded as applied, so
later `migrate` runs apply only the migrations that come after. Used by `manage.py setup` on an empty database and
by the test suite's database (tests/db_template.py).
`tests/architecture/test_migrations_match_models.py` keeps it honest: the migrations describe the models
exactly, and migrating an empty database gives the same schema as this.

The data migrations (RunPython) only transform rows that an empty database does not have.
"""

from django.apps import apps
from django.conf import settings
from django.core.management import call_command
from django.db.migrations.loader import MigrationLoader
from django.db.migrations.recorder import MigrationRecorder


def database_is_empty(connection) -> bool:
    """True when the database has no tables at all (not even Django's migration records)."""
    with connection.cursor() as cursor:
        return not connection.introspection.table_names(cursor)


def build_schema_from_models(connection, **migrate_options) -> int:
    """Create every table from the models, then record every migration as applied; returns how many were recorded."""
    saved = settings.MIGRATION_MODULES
    settings.MIGRATION_MODULES = {config.label: None for config in apps.get_app_configs()}
    try:
        call_command("migrate", database=connection.alias, run_syncdb=True, interactive=False, **migrate_options)
    finally:
        settings.MIGRATION_MODULES = saved
    return record_every_migration_applied(connection)


def record_every_migration_applied(connection) -> int:
    """Record every migration on disk as applied in `connection`'s database; returns how many were new."""
    recorder = MigrationRecorder(connection)
    recorder.ensure_schema()
    applied = set(recorder.applied_migrations())
    missing = [node for node in MigrationLoader(None, ignore_no_migrations=True).graph.nodes if node not in applied]
    for app, name in sorted(missing):
        recorder.record_applied(app, name)
    return len(missing)
