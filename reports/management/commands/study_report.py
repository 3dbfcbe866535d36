from django.core.management.base import BaseCommand, CommandError

from reports import builder
from reports.render import FORMATS, PDFUnavailable, render
from stereoscope.models import Study
from stereoscope.untrusted import whole_number


class Command(BaseCommand):
    help = "Write a study's report (its saved sections) as HTML, PDF or Markdown."

    def add_arguments(self, parser):
        parser.add_argument("study", help="The study's id or name.")
        parser.add_argument("--format", choices=list(FORMATS), default="html")
        parser.add_argument("--output", help="File to write (default: standard output; PDF needs a file).")

    def handle(self, *args, study, format, output, **options):
        pk = whole_number(study)
        found = Study.objects.filter(pk=pk) if pk is not None else Study.objects.filter(name=study)
        if found.count() != 1:
            raise CommandError(f"No single study {study!r}: give its id or its exact name.")
        try:
            body, _type, _ext = render(builder.build(found.get()), format)
        except PDFUnavailable as exc:
            raise CommandError(str(exc)) from None
        if output:
            with open(output, "wb") as fh:
                fh.write(body)
            self.stdout.write(f"Wrote {output} ({len(body):,} bytes).")
        elif format == "pdf":
            raise CommandError("A PDF needs --output FILE.")
        else:
            self.stdout.write(body.decode("utf-8"), ending="")
