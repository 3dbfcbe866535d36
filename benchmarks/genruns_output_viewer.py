"""Output viewer on 100,000 outputs: time of the list page (first page, filters, a deep page), the API list and an
output detail page, with the number of SQL queries each takes.

    .venv/bin/python benchmarks/genruns_output_viewer.py [--outputs 100000]

Uses a fresh SQLite file in a temporary directory unless DATABASE_URL is set (a disposable database).
"""

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--outputs", type=int, default=100_000)
    args = parser.parse_args()
    tmp = tempfile.TemporaryDirectory(prefix="sc-viewer-")
    os.environ["STEREOSCOPE_DATA_DIR"] = tmp.name
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{Path(tmp.name) / 'viewer.sqlite3'}")
    os.environ["ALLOWED_HOSTS"] = "testserver"
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stereoscope.settings")
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    from generation.models import Dimension, GenerationRun, Output, PromptItem, Toolkit
    from stereoscope.models import Membership, Study

    call_command("migrate", verbosity=0)
    user = get_user_model().objects.create_user("bench", password="x")
    study = Study.objects.create(name="viewer bench")
    Membership.objects.create(study=study, user=user, role="researcher")
    toolkit = Toolkit.objects.create(study=study, name="bench", locked=True)
    dims = [Dimension.objects.create(toolkit=toolkit, name=f"Dimension {d}") for d in range(6)]
    items = PromptItem.objects.bulk_create(
        [PromptItem(toolkit=toolkit, number=i, text=f"Prompt {i}.", dimension=dims[i % 6]) for i in range(1, 31)]
    )
    models = [f"model-{m}" for m in range(10)]
    per_run = len(items) * len(models)
    n_runs = 4
    trials = -(-args.outputs // (per_run * n_runs))
    started = time.perf_counter()
    story = "Once upon a time there was a nurse and a doctor. " * 40
    for r in range(n_runs):
        run = GenerationRun.objects.create(
            study=study, name=f"run {r}", toolkit=toolkit, trials=trials, status="completed"
        )
        batch = []
        for item in items:
            for model in models:
                for t in range(1, trials + 1):
                    batch.append(
                        Output(
                            study=study,
                            run=run,
                            item=item,
                            model_name=model,
                            trial=t,
                            prompt_text=item.text,
                            text=story,
                            status="failed" if (item.number + t) % 50 == 0 else "done",
                        )
                    )
        Output.objects.bulk_create(batch, batch_size=5000)
    total = Output.objects.filter(study=study).count()
    print(
        f"{total} outputs created in {time.perf_counter() - started:.1f} s "
        f"({connection.vendor}); ANALYZE for the planner",
        flush=True,
    )
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")

    client = Client()
    client.force_login(user)
    base = f"/studies/{study.pk}/outputs/"
    some = Output.objects.filter(study=study).order_by("id")[total // 2]
    cases = [
        ("list, first page", base),
        ("list, model filter", base + "?model=model-3"),
        ("list, item + trial", base + "?item=17&trial=2"),
        ("list, dimension + status", base + f"?dimension={dims[2].pk}&status=failed"),
        ("list, run + model, page 20", base + f"?run={run.pk}&model=model-5&page=20"),
        ("list, deep page 1500", base + "?page=1500"),
        ("API list, model filter", f"/api/studies/{study.pk}/outputs/?model=model-7&page=3"),
        ("output detail", f"/studies/{study.pk}/outputs/{some.pk}/"),
    ]
    print(f"{'page':32} {'median ms':>10} {'max ms':>8} {'queries':>8}")
    worst = 0.0
    for label, url in cases:
        times = []
        for _ in range(5):
            with CaptureQueriesContext(connection) as queries:
                t0 = time.perf_counter()
                response = client.get(url)
                times.append((time.perf_counter() - t0) * 1000)
            assert response.status_code == 200, (url, response.status_code)
        print(f"{label:32} {statistics.median(times):10.1f} {max(times):8.1f} {len(queries.captured_queries):8d}")
        worst = max(worst, statistics.median(times))
    from benchmarks._report import bench

    bench("output_viewer.slowest_page_median_ms", worst, "ms")
    tmp.cleanup()


if __name__ == "__main__":
    main()
