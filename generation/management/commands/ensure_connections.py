"""Create approved provider connections for the official OpenAI and Anthropic hosts whose key variables are set
(`make run` calls it; idempotent)."""

from django.core.management.base import BaseCommand

from generation.runs.connections import ensure_official_connections


class Command(BaseCommand):
    help = "Approved connections for the official OpenAI/Anthropic hosts whose key variables are set."

    def handle(self, *args, **options):
        made = ensure_official_connections()
        for name in made:
            self.stdout.write(f"Created the approved provider connection “{name}”.")
