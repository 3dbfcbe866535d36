"""The test databases are built from the models (tests/db_template.py), not by applying every migration; these
tests keep that honest: the migrations describe the models exactly, and applying all of them to an empty database
gives the same tables, columns and constraints as building it from the models."""

import pytest
from django.core.management import call_command
from django.db import connection

from tests.migration_trip import empty_database, leaves, migrate

pytestmark = pytest.mark.django_db(transaction=True)


def schema(conn):
    """table -> (columns with their type and nullability, constraints without their names)."""
    introspection = conn.introspection
    out = {}
    with conn.cursor() as cursor:
        for table in introspection.table_names(cursor):
            columns = {
                (c.name, str(c.type_code).lower(), bool(c.null_ok))
                for c in introspection.get_table_description(cursor, table)
            }
            constraints = sorted(
                (
                    tuple(c["columns"] or ()),
                    bool(c["primary_key"]),
                    bool(c["unique"]),
                    tuple(c["foreign_key"] or ()),
                    bool(c["index"]),
                    bool(c["check"]),
                )
                for c in introspection.get_constraints(cursor, table).values()
            )
            out[table] = (sorted(columns), constraints)
    return out


def test_the_migrations_describe_the_models():
    call_command("makemigrations", "--check", "--dry-run", verbosity=0)  # exits with 1 when a migration is missing


def test_migrating_an_empty_database_gives_the_schema_of_the_test_database(tmp_path):
    from_models = schema(connection)
    with empty_database(tmp_path) as conn:
        migrate(leaves())
        from_migrations = schema(conn)
    assert from_migrations.keys() == from_models.keys()
    ours = _tables_of_this_project()
    assert len(ours) > 40
    differ = {t: (from_migrations[t], from_models[t]) for t in ours if from_migrations[t] != from_models[t]}
    assert not differ, "\n".join(f"{t}:\n  migrated {m}\n  models   {d}" for t, (m, d) in differ.items())


def _tables_of_this_project():
    """Tables of the project's apps (with their many-to-many tables). Django's own contrib apps are left out: on
    PostgreSQL their migrations give auth's many-to-many tables an `integer` id where the models, under this
    project's DEFAULT_AUTO_FIELD, give `bigint`, which is Django's affair, not this project's."""
    from django.apps import apps

    tables = set()
    for config in apps.get_app_configs():
        if config.name.startswith("django."):
            continue
        for model in config.get_models(include_auto_created=True):
            tables.add(model._meta.db_table)
    return sorted(tables)
