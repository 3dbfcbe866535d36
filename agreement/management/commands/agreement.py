"""manage.py agreement --input FILE.csv --level nominal --format json  (or --study ID for a study's codings).

manage.py runs a file (`--input FILE`) without starting Django, through agreement/cli.py, which this command shares;
everything else, and every error, comes here."""

from django.core.management.base import BaseCommand, CommandError

from agreement import cli
from stereoscope.stats import agreement as ag


class Command(BaseCommand):
    help = (
        "Inter-rater agreement from a CSV with the columns unit,rater,value (empty value = missing), or from a study."
    )
    requires_system_checks = []  # a read-only computation; the URL checks alone import every app's API (~1.4 s)

    def add_arguments(self, parser):
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--input", help="CSV file with the columns unit,rater,value ('-' reads standard input).")
        source.add_argument("--study", type=int, help="Compute from a study's codings and verdicts instead of a file.")
        cli.add_file_arguments(parser)
        parser.add_argument("--code", type=int, help="With --study: one code id.")
        parser.add_argument("--dimension", type=int, help="With --study: one dimension (top-level code) id.")
        parser.add_argument("--codebook", type=int, help="With --study: the codebook (default: the study's newest).")
        parser.add_argument(
            "--raters", help="With --study: comma-separated rater keys (e.g. coder:alice,judge:gpt-4o)."
        )

    def handle(self, *args, **opts):
        if opts["bootstrap"] < 0:
            raise CommandError("--bootstrap must be 0 or more.")
        if opts["input"]:
            rm = self._from_file(opts["input"], opts["level"])
        else:
            rm = self._from_study(opts)
        for line in cli.report_lines(cli.compute(rm, opts), opts["format"]):
            self.stdout.write(line)

    def _from_file(self, path, level):
        try:
            return cli.read_file(path, level)
        except FileNotFoundError:
            raise CommandError(f"No such file: {path}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"Cannot read {path}: {exc}") from None
        except ag.AgreementInputError as exc:
            raise CommandError(str(exc)) from None

    def _from_study(self, opts):
        from agreement import services

        try:
            return services.command_matrix(opts)
        except services.AgreementRequestError as exc:
            raise CommandError(str(exc)) from None
