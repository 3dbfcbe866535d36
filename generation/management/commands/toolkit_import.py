from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from generation.toolkits import file_format as toolkit_format
from stereoscope.models import Study
from stereoscope.services import record_activity


class Command(BaseCommand):
    help = (
        "Import a toolkit from a JSON or CSV file into a study. "
        "The whole file is validated first; nothing is saved on any error."
    )

    def add_arguments(self, parser):
        parser.add_argument("study_id", type=int)
        parser.add_argument("file")
        parser.add_argument("--format", choices=["json", "csv"], help="Default: from the file extension.")
        parser.add_argument("--name", help="Override the toolkit name in the file.")

    def handle(self, study_id, file, format=None, name=None, **options):
        study = Study.objects.filter(pk=study_id).first()
        if study is None:
            raise CommandError(f"No study with id {study_id}.")
        if study.is_library:
            raise CommandError("The built-in library is read-only; use load_builtin for it.")
        path = Path(file)
        if not path.is_file():
            raise CommandError(f"No such file: {file}")
        try:
            fmt = format or toolkit_format.guess_format(path.name)
            toolkit = toolkit_format.import_toolkit(study, path.read_bytes(), fmt=fmt, name=name)
        except toolkit_format.ToolkitFormatError as exc:
            raise CommandError("Nothing was imported:\n  " + "\n  ".join(exc.errors)) from None
        record_activity(study, None, "imported a toolkit", f"{toolkit} from {path.name}")
        self.stdout.write(
            self.style.SUCCESS(
                f"Imported {toolkit} (id {toolkit.pk}) into study {study.pk}: {toolkit.items.count()} items, "
                f"{toolkit.dimensions.count()} dimensions."
            )
        )
