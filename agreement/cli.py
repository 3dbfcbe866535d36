"""`manage.py agreement --input FILE`, Django-free: its file options, the file reading and the printed report.

A file needs no database, so manage.py runs `agreement --input FILE` through `run_without_django` before it starts
Django (Django, the apps and the Celery app cost about 1.2 s of CPU, as much as the computation). Anything else
(`--study`, standard input, Django's own options, --help, a bad option, a file that cannot be read or analysed)
goes to the Django command, which shares these functions and reports errors its usual way. Imports no Django and
no app (tests/agreement/test_cli_speed.py checks it).
"""

import argparse
import json
import sys

from stereoscope.stats import agreement as ag

FORMATS = ("json", "text")


def add_file_arguments(parser):
    """The options that shape the computation and the report (the command adds --input, --study and its filters)."""
    parser.add_argument("--level", default="nominal", choices=ag.LEVELS)
    parser.add_argument("--format", default="json", choices=FORMATS)
    parser.add_argument("--bootstrap", type=int, default=1000, help="Bootstrap resamples for the 95%% CIs (0 = none).")
    parser.add_argument("--seed", type=int, default=0)


def read_file(path, level) -> ag.RatingMatrix:
    """The ratings of a long CSV file ('-': standard input). Raises OSError, UnicodeDecodeError or
    ag.AgreementInputError."""
    if path == "-":
        text = sys.stdin.read()
    else:
        with open(path, encoding="utf-8-sig") as handle:
            text = handle.read()
    return ag.read_long_csv(text, level=level)


def compute(rm, opts) -> ag.AgreementResult:
    return ag.agreement(rm, level=opts["level"], bootstrap=opts["bootstrap"], seed=opts["seed"])


def report_lines(result: ag.AgreementResult, fmt) -> list[str]:
    """What the command prints, a line each."""
    if fmt == "json":
        return [json.dumps(result.summary(), allow_nan=False)]
    lines = []
    for name in ag.COEFFICIENTS:
        value = getattr(result, name)
        ci = result.ci95.get(name)
        shown = "null" if value is None else f"{value:.4f}"
        interval = f"  [{ci[0]:.4f}, {ci[1]:.4f}]" if ci else ""
        lines.append(f"{name:20s} {shown}{interval}")
    lines.append(f"units {result.n_units}, raters {result.n_raters}, ratings {result.n_ratings}")
    lines += [f"note: {note}" for note in result.notes]
    return lines


class _NotForUs(Exception):
    """The arguments are not a plain `--input FILE` run: the Django command takes them."""


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise _NotForUs(message)


def _parser():
    parser = _Parser(prog="manage.py agreement", add_help=False, allow_abbrev=False)
    parser.add_argument("--input", required=True)
    add_file_arguments(parser)
    return parser


def run_without_django(argv, stdout=None) -> bool:
    """Run `agreement` with the arguments argv (after the command's name) when they read a file, and say whether it
    ran. False, having printed nothing, leaves the run to the Django command."""
    try:
        opts = vars(_parser().parse_args(argv))
    except _NotForUs:
        return False
    if opts["input"] == "-" or opts["bootstrap"] < 0:
        return False
    try:
        rm = read_file(opts["input"], opts["level"])
    except (OSError, UnicodeDecodeError, ag.AgreementInputError):
        return False  # the command says what is wrong, as a CommandError
    stdout = stdout or sys.stdout
    for line in report_lines(compute(rm, opts), opts["format"]):
        stdout.write(line if line.endswith("\n") else line + "\n")
    return True
