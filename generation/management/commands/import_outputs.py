"""Import outputs generated elsewhere into a new import run of a study."""

from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from generation.runs import collect
from generation.runs.services import toolkits_for
from stereoscope.models import Study


class Command(BaseCommand):
    help = (
        "Import outputs (CSV, XLSX, JSONL or JSON with model, item or prompt, trial, slot values, text, external_id) "
        "into a new import run. The file is validated completely; nothing is saved if any row is wrong."
    )

    def add_arguments(self, parser):
        parser.add_argument("study_id", type=int)
        parser.add_argument("file")
        parser.add_argument("--run-name", default="")
        parser.add_argument("--format", choices=collect.FORMATS, help="Default: from the file name.")
        parser.add_argument("--toolkit", type=int, help="Toolkit id to match item numbers and prompts against.")

    def handle(self, *args, study_id, file, run_name, format, toolkit, **options):
        study = Study.objects.filter(pk=study_id).first()
        if study is None:
            raise CommandError(f"No study with id {study_id}.")
        path = Path(file)
        if not path.is_file():
            raise CommandError(f"No such file: {file}.")
        toolkit_obj = None
        if toolkit is not None:
            toolkit_obj = toolkits_for(study).filter(pk=toolkit).first()
            if toolkit_obj is None:
                raise CommandError(f"No toolkit {toolkit} in this study.")
        try:
            run = collect.import_outputs(
                study, path.name, path.read_bytes(), fmt=format, run_name=run_name, toolkit=toolkit_obj
            )
        except collect.ImportProblems as exc:
            raise CommandError("Nothing was imported:\n  " + "\n  ".join(exc.problems)) from exc
        self.stdout.write(self.style.SUCCESS(f"Imported {run.outputs.count()} outputs into run {run.pk} “{run.name}”."))
