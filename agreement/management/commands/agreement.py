"""manage.py agreement --input FILE.csv --level nominal --format json  (or --study ID for a study's codings)."""

import json
import sys

from django.core.management.base import BaseCommand, CommandError

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
        parser.add_argument("--level", default="nominal", choices=ag.LEVELS)
        parser.add_argument("--format", default="json", choices=["json", "text"])
        parser.add_argument(
            "--bootstrap", type=int, default=1000, help="Bootstrap resamples for the 95%% CIs (0 = none)."
        )
        parser.add_argument("--seed", type=int, default=0)
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
        result = ag.agreement(rm, level=opts["level"], bootstrap=opts["bootstrap"], seed=opts["seed"])
        if opts["format"] == "json":
            self.stdout.write(json.dumps(result.summary(), allow_nan=False))
            return
        for name in ag.COEFFICIENTS:
            value = getattr(result, name)
            ci = result.ci95.get(name)
            shown = "null" if value is None else f"{value:.4f}"
            interval = f"  [{ci[0]:.4f}, {ci[1]:.4f}]" if ci else ""
            self.stdout.write(f"{name:20s} {shown}{interval}")
        self.stdout.write(f"units {result.n_units}, raters {result.n_raters}, ratings {result.n_ratings}")
        for note in result.notes:
            self.stdout.write(f"note: {note}")

    def _from_file(self, path, level):
        try:
            if path == "-":
                text = sys.stdin.read()
            else:
                with open(path, encoding="utf-8-sig") as handle:
                    text = handle.read()
        except FileNotFoundError:
            raise CommandError(f"No such file: {path}") from None
        except (OSError, UnicodeDecodeError) as exc:
            raise CommandError(f"Cannot read {path}: {exc}") from None
        try:
            return ag.read_long_csv(text, level=level)
        except ag.AgreementInputError as exc:
            raise CommandError(str(exc)) from None

    def _from_study(self, opts):
        from agreement import services

        try:
            return services.command_matrix(opts)
        except services.AgreementRequestError as exc:
            raise CommandError(str(exc)) from None
