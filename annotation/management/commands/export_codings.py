import sys
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation import selectors
from annotation.models import Codebook
from stereoscope.models import Study
from stereoscope.tables import TEXT_WRITERS


class Command(BaseCommand):
    help = "Export codings as CSV or JSONL: one row per coding with story, coder, code path, offsets and quoted text."

    def add_arguments(self, parser):
        parser.add_argument("study_id", type=int)
        parser.add_argument("output", help="File to write (.csv or .jsonl); '-' for standard output.")
        parser.add_argument("--codebook", type=int, help="Only this codebook (default: all of the study's).")
        parser.add_argument("--format", dest="file_format", choices=["csv", "jsonl"])
        parser.add_argument("--with-text", action="store_true", help="Add the full story text to every row.")

    def handle(self, study_id, output, codebook=None, file_format=None, with_text=False, **options):
        study = Study.objects.filter(pk=study_id).first()
        if study is None:
            raise CommandError(f"No study with id {study_id}.")
        cb = None
        if codebook is not None:
            cb = Codebook.objects.filter(pk=codebook, study=study).first()
            if cb is None:
                raise CommandError(f"No codebook {codebook} in study {study.pk}.")
        kind = file_format or (Path(output).suffix.lstrip(".").lower() if output != "-" else "csv")
        if kind not in ("csv", "jsonl"):
            raise CommandError("Give --format csv or jsonl (or a file ending in .csv or .jsonl).")
        rows = selectors.coding_rows(study, codebook=cb, include_text=with_text)
        handle = sys.stdout if output == "-" else open(output, "w", encoding="utf-8", newline="")
        try:
            writer = TEXT_WRITERS[kind](handle, selectors.coding_columns(with_text))
            for row in rows:
                writer.write(row)
        finally:
            if handle is not sys.stdout:
                handle.close()
        self.stderr.write(self.style.SUCCESS(f"Exported {writer.rows} codings."))
