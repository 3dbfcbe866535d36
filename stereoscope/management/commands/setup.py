"""First start and every start after it: migrate, load the built-ins, create the first admin and the official
provider connections, in one process with the system checks run once (`make run` / scripts/run.sh calls it)."""

from django.core.management import call_command
from django.core.management.base import BaseCommand

STEPS = (
    ("migrate", {"interactive": False}),
    ("load_builtin", {}),
    ("ensure_admin", {}),
    ("ensure_connections", {}),
)


class Command(BaseCommand):
    help = "Migrate, load the built-ins, ensure the admin and the official connections: one process, checks once."

    def handle(self, *args, **options):
        verbosity = options["verbosity"]
        for name, kwargs in STEPS:
            # call_command skips the system checks: they ran once, before this handle()
            call_command(name, verbosity=verbosity, stdout=self.stdout, stderr=self.stderr, **kwargs)
