"""Export speed on PostgreSQL.

Targets (issue 36): CSV of 1,000,000 codings in <= 10 s with peak memory < 300 MB; .qdpx of 10,000 stories and
100,000 codings in <= 2 s.

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/sc_exports_bench .venv/bin/python benchmarks/export_speed.py

The first run loads the data with COPY (a few minutes) in one transaction, so a failed load leaves nothing; later
runs reuse it once its row counts are checked (a study with fewer rows than planned, e.g. from an older failed
load, is deleted and loaded again). Each export is timed in a fresh process so that its peak RSS (ru_maxrss) is
the export's own. An export is OK when it is within its targets and holds every row of the study; the script exits
with status 1 when any export is not.
"""

import argparse
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from benchmarks._report import bench  # noqa: E402

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stereoscope.settings")

BIG = "bench: 1M codings"
QDA = "bench: 10k stories"
DATASETS = {  # the two benchmark studies: stories, codings per story, words per story
    BIG: {"outputs": 100_000, "per_output": 10, "words": 40},
    QDA: {"outputs": 10_000, "per_output": 10, "words": 400},
}
WORDS = (
    "she he the team led cared decided protected challenged strong gentle family work home leader nurse "
    "doctor engineer child parent brave kind quiet loud"
).split()


def setup_django():
    import django

    django.setup()


def story(rng, n_words):
    return " ".join(rng.choice(WORDS) for _ in range(n_words)).capitalize() + "."


def build(name, n_outputs, codings_per_output, words):
    """A study with a toolkit (30 items, 6 dimensions), 5 endpoints, one run, outputs, a 53-code codebook
    in 6 dimensions, 2 coders and codings (half span, half document level)."""
    from django.db import connection, transaction
    from django.utils import timezone

    from annotation.models import Code, Codebook
    from benchmarks.bench_data import coded_study, copy_codings, copy_outputs

    rng = random.Random(7)
    with transaction.atomic():  # all or nothing: a failed load must not leave a half-built study to be reused
        data = coded_study(name, "bench_coder", item_fields=lambda n: {"target_stereotype": f"stereotype {n}"})
        study = data["study"]
        book = Codebook.objects.create(study=study, name="Bench codebook")
        codes = []
        for d in range(6):
            dim = Code.objects.create(codebook=book, name=f"Dimension {d}", codable=False, order=d)
            for c in range(9 if d < 5 else 8):
                codes.append(
                    Code.objects.create(
                        codebook=book, parent=dim, name=f"{'FM'[c % 2]} code {d}.{c}", gender_tag="FM"[c % 2], order=c
                    )
                )
        now = timezone.now()
        texts = [story(rng, words) for _ in range(200)]
        provenance = {"source": "generated", "params": {"temperature": 0.7}}
        with connection.cursor() as cursor:
            output_ids = copy_outputs(cursor, data, texts, n_outputs, now, provenance)
            copy_codings(
                cursor,
                data,
                book,
                codes,
                output_ids,
                texts,
                codings_per_output,
                now,
                rng,
                is_span=lambda k: k % 2 == 0,
                max_len=40,
            )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")
    return study


def study_rows(study):
    """{"outputs": n, "codings": n} the study holds."""
    from annotation.models import Coding
    from generation.models import Output

    return {
        "outputs": Output.objects.filter(study=study).count(),
        "codings": Coding.objects.filter(codebook__study=study).count(),
    }


def expected_rows(spec):
    return {"outputs": spec["outputs"], "codings": spec["outputs"] * spec["per_output"]}


def missing_rows(rows, spec):
    """{table: (found, expected)} where the study holds other than the planned number of rows."""
    return {k: (rows.get(k, 0), n) for k, n in expected_rows(spec).items() if rows.get(k, 0) != n}


def ensure_data():
    """{name: study id} of the two benchmark studies, complete: loaded when absent, loaded again when a study of
    that name holds other than the planned rows (what an interrupted load of an older version of this script left)."""
    from stereoscope.models import Study

    made = {}
    for name, spec in DATASETS.items():
        study = Study.objects.filter(name=name).order_by("pk").first()
        wrong = missing_rows(study_rows(study), spec) if study is not None else {}
        if wrong:
            print(f"'{name}' is incomplete {wrong} (found, expected): deleting it to load it again", flush=True)
            Study.objects.filter(name=name).delete()
            study = None
        if study is None:
            started = time.monotonic()
            print(f"loading '{name}' ...", flush=True)
            study = build(name, spec["outputs"], spec["per_output"], spec["words"])
            print(f"  loaded in {time.monotonic() - started:.0f} s", flush=True)
            wrong = missing_rows(study_rows(study), spec)
            if wrong:
                sys.exit(f"'{name}' loaded with the wrong number of rows: {wrong} (found, expected)")
        made[name] = study.pk
    return made


def problems(result, expected, max_s, max_mb):
    """Why an export result misses its targets (empty: it meets them). Every expected row must be there: an export
    of 0 rows is a failure, however fast."""
    found = [
        f"{key}: {result['rows'].get(key, 0)} rows, expected {n}"
        for key, n in expected.items()
        if result["rows"].get(key, 0) != n
    ]
    if result["seconds"] > max_s:
        found.append(f"{result['seconds']:g} s > {max_s} s")
    if max_mb is not None and result["peak_rss_mb"] >= max_mb:
        found.append(f"peak RSS {result['peak_rss_mb']:g} MB >= {max_mb} MB")
    return found


def measure(kind, study_id):
    """Run one export in this process; print JSON with seconds, peak RSS and size."""
    from exports.services import write_export
    from stereoscope.models import Study

    study = Study.objects.get(pk=study_id)

    def cpu_after():
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return usage.ru_utime + usage.ru_stime

    from stereoscope.datasets import datasets

    datasets()  # app modules imported before the clock starts (a running server has them loaded)
    cpu_before = cpu_after()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / ("out.qdpx" if kind == "qdpx" else "out.zip")
        started = time.monotonic()
        if kind == "csv":
            manifest = write_export(study, "csv", path, dataset_keys=["codings"])
        else:
            manifest = write_export(study, "qdpx", path)
        seconds = time.monotonic() - started
        size = path.stat().st_size
    usage = resource.getrusage(resource.RUSAGE_SELF)
    print(
        json.dumps(
            {
                "kind": kind,
                "seconds": round(seconds, 2),
                "cpu_seconds": round(cpu_after() - cpu_before, 2),
                "peak_rss_mb": round(usage.ru_maxrss / 1024, 1),
                "bytes": size,
                "rows": manifest["row_counts"],
                "load_average": os.getloadavg()[0],
            }
        )
    )


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--measure", choices=["csv", "qdpx"])
    parser.add_argument("--study", type=int)
    args = parser.parse_args()
    if "postgres" not in os.environ.get("DATABASE_URL", ""):
        sys.exit("Set DATABASE_URL to a PostgreSQL database (the benchmark is defined on PostgreSQL).")
    setup_django()
    if args.measure:
        measure(args.measure, args.study)
        return
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    studies = ensure_data()
    targets = {"csv": (BIG, 10, 300), "qdpx": (QDA, 2, None)}
    failed = False
    for kind, (name, max_s, max_mb) in targets.items():
        out = subprocess.run(
            [sys.executable, __file__, "--measure", kind, "--study", str(studies[name])],
            capture_output=True,
            text=True,
            env=os.environ,
        )
        if out.returncode != 0:
            sys.exit(out.stderr)
        result = json.loads(out.stdout.strip().splitlines()[-1])
        planned = expected_rows(DATASETS[name])
        expected = {"codings": planned["codings"]}  # every coding, and in the .qdpx every story as a source
        if kind == "qdpx":
            expected["sources"] = planned["outputs"]
        missed = problems(result, expected, max_s, max_mb)
        failed = failed or bool(missed)
        print(
            f"{kind}: {result['rows']} in {result['seconds']} s wall ({result['cpu_seconds']} s CPU in this process; "
            f"load average {result['load_average']:.1f}), peak RSS {result['peak_rss_mb']} MB, "
            f"{result['bytes'] / 2**20:.1f} MB file  (target <= {max_s} s"
            f"{f', < {max_mb} MB' if max_mb else ''}): {'MISSED: ' + '; '.join(missed) if missed else 'OK'}"
        )
        bench(f"export.{kind}_wall_s", result["seconds"], "s", target=max_s)
        bench(f"export.{kind}_cpu_s", result["cpu_seconds"], "s")
        if max_mb:
            bench(f"export.{kind}_peak_rss_mb", result["peak_rss_mb"], "MB", target=max_mb)
    if failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
