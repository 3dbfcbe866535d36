"""First start and every start after it: migrate, load the built-ins, create the first admin and the official
provider connections, in one process with the system checks run once (`make run` / scripts/run.sh calls it).

On an empty database the schema is built from the models and every migration recorded as applied
(stereoscope/schema_build.py): about 1 s instead of about 12 s of replaying every migration. A database that has
tables is migrated as usual."""

from django.core.management import call_command
from django.core.management.base import BaseCommand
from django.db import DEFAULT_DB_ALIAS, connections

from stereoscope.schema_build import build_schema_from_models, database_is_empty

STEPS_AFTER_SCHEMA = (
    ("load_builtin", {}),
    ("ensure_admin", {}),
    ("ensure_connections", {}),
)


class Command(BaseCommand):
    help = "Migrate, load the built-ins, ensure the admin and the official connections: one process, checks once."

    def handle(self, *args, **options):
        verbosity = options["verbosity"]
        streams = {"verbosity": verbosity, "stdout": self.stdout, "stderr": self.stderr}
        connection = connections[DEFAULT_DB_ALIAS]
        # call_command skips the system checks: they ran once, before this handle()
        if database_is_empty(connection):
            recorded = build_schema_from_models(connection, **streams)
            self.stdout.write(f"Empty database: tables built from the models, {recorded} migrations marked applied.")
        else:
            call_command("migrate", interactive=False, **streams)
        for name, kwargs in STEPS_AFTER_SCHEMA:
            call_command(name, **streams, **kwargs)
