"""Benchmark: the analysis report of a questionnaire run with 300 contexts × 22 ASI items renders in ≤ 3 s.

Builds a throwaway SQLite database (or uses DATABASE_URL), loads the built-in ASI, creates 300 persona contexts
and 6,600 answered responses (two correlated factors plus noise, a few refusals), then times the report page
(GET /studies/<id>/questionnaires/runs/<id>/report/: queries, scoring, reliability, CFA, group tests, SVG
histograms, template) end to end through Django's test client. Prints the median of 5 renders.

    .venv/bin/python benchmarks/psychometrics_report.py
"""

import os
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
tmp = tempfile.mkdtemp(prefix="psych-bench-")
os.environ.setdefault("DATABASE_URL", f"sqlite:///{tmp}/bench.sqlite3")
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stereoscope.settings")

import django  # noqa: E402

django.setup()
from django.conf import settings  # noqa: E402
from django.core.management import call_command  # noqa: E402
from django.test import Client  # noqa: E402
from django.test.utils import setup_test_environment  # noqa: E402

N_CONTEXTS = 300


def build():
    from django.contrib.auth import get_user_model

    from generation.models import ModelEndpoint
    from psychometrics.models import Context, ContextSet, Instrument, QuestionnaireRun, Response
    from stereoscope.builtin import load_builtins
    from stereoscope.models import Study

    call_command("migrate", verbosity=0)
    load_builtins(log=lambda *_: None)
    user = get_user_model().objects.create_superuser("bench", "", "bench-password")
    study = Study.objects.create(name="Benchmark", created_by=user)
    asi = Instrument.objects.get(builtin_key="asi")
    endpoint = ModelEndpoint.objects.create(study=study, name="bench-model", provider="manual", model_id="bench-model")
    cs = ContextSet.objects.create(study=study, name="300 personas")
    contexts = Context.objects.bulk_create(
        [Context(context_set=cs, key=f"c{i}", persona=f"persona {i}", order=i) for i in range(N_CONTEXTS)]
    )
    run = QuestionnaireRun.objects.create(
        study=study,
        name="bench",
        instrument=asi,
        context_set=cs,
        extractors=["number"],
        status="completed",
        option_order="permuted",
    )
    run.endpoints.set([endpoint])
    rng = random.Random(1)
    items = list(asi.items.all())
    rows = []
    for c in contexts:
        hs, bs = rng.gauss(0, 1), rng.gauss(0, 1)
        bs = 0.5 * hs + 0.87 * bs
        for item in items:
            f = hs if item.subscale == "HS" else bs
            x = 2.5 + (-1 if item.reverse else 1) * 0.9 * f + rng.gauss(0, 0.9)
            value = float(min(5, max(0, round(x))))
            refused = rng.random() < 0.01
            rows.append(
                Response(
                    run=run,
                    item=item,
                    context=c,
                    endpoint=endpoint,
                    model_name="bench-model",
                    repetition=1,
                    options=[{"code": str(v), "label": "", "value": v} for v in range(6)],
                    permutation=list(range(6)),
                    status="done",
                    raw_text="I'm sorry." if refused else str(int(value)),
                    extraction="refused" if refused else "ok",
                    value=None if refused else value,
                )
            )
    Response.objects.bulk_create(rows, batch_size=2000)
    return user, study, run


def main():
    setup_test_environment()
    settings.ALLOWED_HOSTS = ["*"]
    user, study, run = build()
    client = Client()
    client.force_login(user)
    url = f"/studies/{study.pk}/questionnaires/runs/{run.pk}/report/"
    first = time.perf_counter()
    response = client.get(url)
    first = time.perf_counter() - first
    assert response.status_code == 200, response.status_code
    assert b"Stratified" in response.content and b"RMSEA" in response.content
    times = []
    for _ in range(5):
        t0 = time.perf_counter()
        client.get(url)
        times.append(time.perf_counter() - t0)
    print(f"responses: {run.responses.count()} ({N_CONTEXTS} contexts x 22 items)")
    print(f"first render (cold imports): {first:.2f} s")
    print(
        f"report render median of 5: {statistics.median(times):.2f} s "
        f"(min {min(times):.2f}, max {max(times):.2f}); target <= 3 s"
    )
    from benchmarks._report import bench

    bench("psychometrics.report_s", statistics.median(times), "s", target=3)


if __name__ == "__main__":
    main()
