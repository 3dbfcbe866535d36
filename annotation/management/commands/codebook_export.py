from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotation import codebook_format as fmt
from annotation import services
from annotation.models import Codebook


class Command(BaseCommand):
    help = "Export a codebook as REFI-QDA .qdc (valid against Codebook.xsd), CSV or JSON."

    def add_arguments(self, parser):
        parser.add_argument("codebook_id", type=int)
        parser.add_argument("output", help="File to write; '-' for standard output.")
        parser.add_argument(
            "--format", dest="file_format", choices=["qdc", "csv", "json"], help="Default: from the file extension."
        )

    def handle(self, codebook_id, output, file_format=None, **options):
        import json

        codebook = Codebook.objects.filter(pk=codebook_id).first()
        if codebook is None:
            raise CommandError(f"No codebook with id {codebook_id}.")
        kind = file_format or (Path(output).suffix.lstrip(".").lower() if output != "-" else "qdc")
        tree = services.codebook_tree(codebook)
        if kind == "qdc":
            data = fmt.tree_to_qdc(tree)
        elif kind == "csv":
            data = fmt.tree_to_csv(tree).encode("utf-8")
        elif kind == "json":
            data = json.dumps({"format": "stereoscope-codebook", **tree}, ensure_ascii=False, indent=1).encode("utf-8")
        else:
            raise CommandError("Give --format qdc, csv or json (or a file ending in one of them).")
        if output == "-":
            self.stdout.write(data.decode("utf-8"))
        else:
            Path(output).write_bytes(data)
            self.stderr.write(
                self.style.SUCCESS(f"Wrote {codebook} to {output} ({kind}, {fmt.count_codes(tree)} codes).")
            )
