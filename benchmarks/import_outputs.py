"""Import speed: 100,000 outputs made elsewhere (CSV) into a new import run, as `manage.py import_outputs` does.

Target: <= 30 s for 100,000 outputs, all-or-nothing (one bad row saves nothing).

    .venv/bin/python benchmarks/import_outputs.py                     # a fresh SQLite database in a temp folder
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/sc_import_bench .venv/bin/python benchmarks/import_outputs.py

Prints the time of each phase (read, validate, save) and the whole command; `--profile` adds a cProfile top 25.
"""

import argparse
import csv
import io
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stereoscope.settings")
TMP = tempfile.mkdtemp(prefix="sc-import-bench-")
os.environ.setdefault("DATABASE_URL", f"sqlite:///{TMP}/bench.sqlite3")
os.environ.setdefault("STEREOSCOPE_DATA_DIR", TMP)

WORDS = (
    "she he the team led cared decided protected challenged strong gentle family work home leader nurse "
    "doctor engineer child parent brave kind quiet loud"
).split()
MODELS = ["gpt-4o", "claude-3-5-sonnet", "llama-3-70b", "mistral-large", "gemma-2-27b"]


def setup():
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def build_study(n_items):
    from generation.models import Dimension, PromptItem, Toolkit
    from stereoscope.models import Study

    study = Study.objects.create(name="bench: import")
    toolkit = Toolkit.objects.create(study=study, name="bench toolkit", slots={"name": ["Kelly", "Joseph"]})
    dimension = Dimension.objects.create(toolkit=toolkit, name="Leadership")
    for number in range(1, n_items + 1):
        PromptItem.objects.create(
            toolkit=toolkit,
            number=number,
            dimension=dimension,
            text=f"Write a short story about {{name}}, item {number}.",
        )
    return study, toolkit


def make_csv(n_outputs, n_items, bad_row=None):
    rng = random.Random(7)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["model", "item", "slot:name", "trial", "text", "external_id", "temperature"])
    per_trial = len(MODELS) * n_items * 2
    for i in range(n_outputs):
        trial, rest = divmod(i, per_trial)
        model, rest = divmod(rest, n_items * 2)
        item, name = divmod(rest, 2)
        text = " ".join(rng.choice(WORDS) for _ in range(60)).capitalize() + "."
        item_cell = "not-a-number" if i == bad_row else item + 1
        writer.writerow([MODELS[model], item_cell, ["Kelly", "Joseph"][name], trial + 1, text, f"ext-{i}", "0.7"])
    return out.getvalue().encode("utf-8")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--outputs", type=int, default=100_000)
    parser.add_argument("--items", type=int, default=30)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    setup()
    from django.core.management import call_command

    from generation.models import Output
    from generation.runs import collect

    study, toolkit = build_study(args.items)
    content = make_csv(args.outputs, args.items)
    path = Path(TMP) / "outputs.csv"
    path.write_bytes(content)
    vendor = os.environ["DATABASE_URL"].split(":")[0]
    print(f"file: {args.outputs:,} outputs, {len(content) / 1e6:.1f} MB; database: {vendor}")

    started, cpu = time.perf_counter(), time.process_time()
    records = collect.read_records(path.name, content)
    read_s, read_cpu = time.perf_counter() - started, time.process_time() - cpu
    started, cpu = time.perf_counter(), time.process_time()
    rows = collect.validate_import(records, toolkit)
    validate_s, validate_cpu = time.perf_counter() - started, time.process_time() - cpu
    print(
        f"read {read_s:.2f} s ({read_cpu:.2f} s CPU), validate {validate_s:.2f} s ({validate_cpu:.2f} s CPU) "
        f"({len(rows):,} rows)"
    )

    if args.profile:
        import cProfile
        import pstats

        profiler = cProfile.Profile()
        profiler.enable()
    started = time.perf_counter()
    call_command(
        "import_outputs", study.pk, str(path), "--toolkit", str(toolkit.pk), "--run-name", "bench", stdout=io.StringIO()
    )
    total_s = time.perf_counter() - started
    if args.profile:
        profiler.disable()
        pstats.Stats(profiler).sort_stats("cumulative").print_stats(25)
    saved = Output.objects.filter(run__study=study, run__name="bench").count()
    assert saved == args.outputs, saved

    bad = make_csv(args.outputs, args.items, bad_row=args.outputs - 1)  # the very last row is wrong
    bad_path = Path(TMP) / "bad.csv"
    bad_path.write_bytes(bad)
    before = Output.objects.count()
    try:
        call_command("import_outputs", study.pk, str(bad_path), "--toolkit", str(toolkit.pk), stdout=io.StringIO())
        raise SystemExit("the bad file was imported")
    except Exception as exc:  # CommandError: nothing was imported
        assert "Nothing was imported" in str(exc), exc
    assert Output.objects.count() == before, "a failed import saved rows"
    print("all-or-nothing: a file whose last row is wrong saved 0 outputs")
    print(f"import_outputs_100k_s={total_s:.2f}" if args.outputs == 100_000 else f"import_outputs_s={total_s:.2f}")
    from benchmarks._report import bench

    bench("import_outputs.seconds_per_100k", total_s * 100_000 / args.outputs, "s", target=30)
    print(
        f"target <= 30 s: {'met' if total_s <= 30 * args.outputs / 100_000 else 'MISSED'}"
        f" (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
    )


if __name__ == "__main__":
    main()
