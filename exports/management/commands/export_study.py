"""manage.py export_study <study-id> --format qdpx|csv|jsonl|xlsx|report --out PATH [filters]"""

import sys
import time

from django.core.management.base import BaseCommand, CommandError

from exports import services
from exports.models import ExportFormat
from stereoscope.datasets import datasets
from stereoscope.models import Study


class Command(BaseCommand):
    help = (
        "Export a study: csv/jsonl/xlsx write a ZIP (one table per dataset, data_dictionary.csv, manifest.json); "
        "qdpx writes a REFI-QDA project."
    )

    def add_arguments(self, parser):
        parser.add_argument("study_id", type=int)
        parser.add_argument("--format", required=True, choices=ExportFormat.values)
        parser.add_argument("--out", required=True, help="Output file (written to PATH.part, renamed when complete).")
        parser.add_argument("--dataset", action="append", default=[], help="Dataset key (repeatable); default: all.")
        parser.add_argument("--run", action="append", type=int, default=[], dest="run_ids")
        parser.add_argument("--model", action="append", default=[], dest="models")
        parser.add_argument("--item", action="append", type=int, default=[], dest="item_numbers")
        parser.add_argument("--code", action="append", type=int, default=[], dest="code_ids")
        parser.add_argument("--round", action="append", type=int, default=[], dest="round_ids")
        parser.add_argument("--pseudonymise", action="store_true", help="Stable pseudonyms instead of coder names.")
        parser.add_argument(
            "--no-formula-escaping",
            action="store_true",
            help="Do not prefix spreadsheet formulas (= + - @) with ' in CSV/XLSX.",
        )
        parser.add_argument("--list-datasets", action="store_true", help="List the dataset keys and exit.")

    def handle(self, *args, **opts):
        if opts["list_datasets"]:
            for key, ds in datasets().items():
                self.stdout.write(f"{key}\t{ds.app}\t{ds.title}")
            return
        study = Study.objects.filter(pk=opts["study_id"]).first()
        if study is None:
            raise CommandError(f"No study with id {opts['study_id']}.")
        options = {k: opts[k] for k in ("run_ids", "models", "item_numbers", "code_ids", "round_ids")}
        options["pseudonymise"] = opts["pseudonymise"]
        options["escape_formulas"] = not opts["no_formula_escaping"]
        started = time.monotonic()

        def progress(figures):
            if opts["verbosity"] > 1:
                sys.stderr.write(f"\r{figures.get('dataset', '')}: {figures.get('rows', 0)} rows")

        try:
            manifest = services.write_export(
                study,
                opts["format"],
                opts["out"],
                dataset_keys=opts["dataset"] or None,
                options=options,
                progress=progress,
            )
        except services.ExportError as exc:
            raise CommandError(str(exc)) from exc
        counts = ", ".join(f"{k}={v}" for k, v in manifest.get("row_counts", {}).items())
        self.stdout.write(
            self.style.SUCCESS(
                f"Wrote {opts['out']} ({opts['format']}; {counts}) in {time.monotonic() - started:.1f} s."
            )
        )
