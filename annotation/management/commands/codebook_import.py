import io
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation import codebook_format as fmt
from annotation import services
from annotation.api.files import import_upload
from generation.selectors import study_toolkit
from stereoscope.models import Study


class Command(BaseCommand):
    help = (
        "Import a codebook (.qdc REFI-QDA, .csv or .json) into a study. "
        "Validated in full first; nothing is saved on any error."
    )

    def add_arguments(self, parser):
        parser.add_argument("study_id", type=int)
        parser.add_argument("file")
        parser.add_argument(
            "--format", dest="file_format", choices=["qdc", "csv", "json"], help="Default: from the file extension."
        )
        parser.add_argument("--name", help="Codebook name (a new version when it exists).")
        parser.add_argument("--toolkit", type=int, help="Toolkit id that item_number links refer to.")

    def handle(self, study_id, file, file_format=None, name=None, toolkit=None, **options):
        study = Study.objects.filter(pk=study_id).first()
        if study is None:
            raise CommandError(f"No study with id {study_id}.")
        if study.is_library:
            raise CommandError("The built-in library is read-only; use load_builtin for it.")
        path = Path(file)
        if not path.is_file():
            raise CommandError(f"No such file: {file}")
        toolkit_obj = None
        if toolkit is not None:
            toolkit_obj = study_toolkit(study, toolkit)
            if toolkit_obj is None:
                raise CommandError(f"No toolkit {toolkit} in study {study.pk}.")
        upload = io.BytesIO(path.read_bytes())
        upload.name = path.name
        try:
            codebook = import_upload(study, upload, file_format, name or path.stem, None, toolkit_obj)
        except fmt.CodebookFormatError as exc:
            raise CommandError("Nothing was imported:\n  " + "\n  ".join(exc.errors)) from None
        except services.AnnotationError as exc:
            raise CommandError(f"Nothing was imported: {exc}") from None
        codes = codebook.codes.all()
        self.stdout.write(
            self.style.SUCCESS(
                f"Imported {codebook} (id {codebook.pk}) into study {study.pk}: "
                f"{codes.filter(codable=True).count()} codes, "
                f"{codes.filter(codable=False).count()} dimensions/groups."
            )
        )
