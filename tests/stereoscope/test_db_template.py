"""Under pytest-xdist the first worker builds the test database (from the models, every migration recorded as
applied) and the others start from its copy (tests/db_template.py); a copied database must be as migrated as one
built from scratch."""

import os

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

from tests.db_template import _folder


@pytest.mark.django_db
def test_the_test_database_is_fully_migrated():
    executor = MigrationExecutor(connection)
    assert executor.migration_plan(executor.loader.graph.leaf_nodes()) == []
    assert executor.loader.applied_migrations.keys() >= set(executor.loader.graph.nodes)


@pytest.mark.django_db
def test_xdist_workers_share_one_migrated_template(request):
    if not hasattr(request.config, "workerinput"):
        pytest.skip("only under pytest-xdist (`make test`); one process migrates its one database anyway")
    folder = _folder(os.getppid())
    assert (folder / "ready").read_text() == connection.vendor
    if connection.vendor == "sqlite":
        assert (folder / "template.sqlite3").stat().st_size > 100_000
    else:
        assert (folder / "postgresql").read_text() == f"stereoscope_test_template_{os.getppid()}"
