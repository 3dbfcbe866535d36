import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from generation.models import Toolkit
from generation.toolkits import file_format as toolkit_format


class Command(BaseCommand):
    help = "Export a toolkit as JSON or CSV (the format toolkit_import and the UI read back)."

    def add_arguments(self, parser):
        parser.add_argument("toolkit_id", type=int)
        parser.add_argument("--format", choices=["json", "csv"], default="json")
        parser.add_argument("--out", help="Output file; '-' or nothing writes to standard output.")

    def handle(self, toolkit_id, format="json", out=None, **options):
        toolkit = Toolkit.objects.filter(pk=toolkit_id).first()
        if toolkit is None:
            raise CommandError(f"No toolkit with id {toolkit_id}.")
        body = toolkit_format.export_json(toolkit) if format == "json" else toolkit_format.export_csv(toolkit)
        if not out or out == "-":
            sys.stdout.write(body)
            return
        path = Path(out)
        if not path.parent.is_dir():
            raise CommandError(f"The folder {path.parent} does not exist.")
        path.write_text(body, encoding="utf-8", newline="")
        self.stderr.write(f"Wrote {toolkit} ({toolkit.items.count()} items) to {path}.")
