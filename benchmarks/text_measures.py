"""Benchmark: score 10,000 stories of ~400 words with every built-in lexicon and VADER (per sentence).

Targets: ≤ 60 s in all (issue 9); everything except VADER ≤ 2 s (issue 18). Prints, each with its time in seconds:
`1 worker:` the whole run in this process, `VADER only:` the time spent inside VADER, `without VADER:` the rest
(sentence splitting, lexicon matching, gender, row writes, contrasts), and `2 workers:` the same measure run spread
by the job engine over two Celery worker processes (start-up not timed). CPU times are printed beside wall times:
on a loaded machine compare those. The 1-worker run goes through the product's path (`scoring.run_foreground`, as
`manage.py measure --sync` does: queued on the job engine, then executed here: lexicon counts, sentence splitting,
VADER per sentence, subject gender, OutputMeasure rows with their sentence rows packed, then the stored contrasts), on a
throw-away SQLite database and filesystem broker (or DATABASE_URL / CELERY_BROKER_URL if set).

Ends with `RESULT FAIL ...` and exit status 1 when a run scored fewer stories than were created, did not complete
or wrote no sentence rows; `RESULT SLOW` when over a target, else `RESULT PASS`.

    .venv/bin/python benchmarks/text_measures.py [--stories 10000] [--words 400] [--workers 2|0]
"""

import argparse
import atexit
import os
import random
import resource
import shutil
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from benchmarks._report import bench  # noqa: E402


def story(rng, words, name, pronoun, vocab):
    out, sentence = [name, "is"], 2
    while len(out) < words:
        n = rng.randint(8, 22)
        chunk = [rng.choice(vocab) for _ in range(n)]
        chunk[0] = (
            (pronoun if rng.random() < 0.5 else name).capitalize() if rng.random() < 0.6 else chunk[0].capitalize()
        )
        out.extend(chunk)
        out[-1] += "."
        sentence += 1
    return " ".join(out[:words]).rstrip(".") + "."


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stories", type=int, default=10_000)
    parser.add_argument("--words", type=int, default=400)
    parser.add_argument("--workers", type=int, default=2, choices=(0, 2), help="0: skip the 2-worker run")
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="sc-bench-")
    atexit.register(shutil.rmtree, tmp, ignore_errors=True)  # the SQLite file, the broker and the worker logs
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{tmp}/bench.sqlite3")
    os.environ.setdefault("STEREOSCOPE_DATA_DIR", tmp)  # the filesystem broker the 2-worker run uses lives here
    os.environ.pop("CELERY_TASK_ALWAYS_EAGER", None)
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stereoscope.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from generation.models import GenerationRun, Output
    from generation.toolkits.expansion import variant_key
    from measures import scoring
    from measures.builtin import builtin_specs
    from measures.models import Lexicon
    from stereoscope.builtin import load_builtins
    from stereoscope.models import Study

    load_builtins(builtin_specs(), log=lambda *_: None)
    import scipy.stats  # noqa: F401  imported on first use (stereoscope/lazy_imports.py): part of start-up, not timed

    lexicons = list(Lexicon.objects.filter(study__is_library=True))
    words = [w for lx in lexicons for c in lx.categories.all() for w in c.words if " " not in w]
    common = (
        "the a and of to in was with for on at as by from that this her his their team work project day city night "
        "good great bad happy sad wonderful terrible quiet bright strong kind warm careful brilliant leader nurse "
        "doctor engineer family child home office meeting plan idea question answer smiled walked said thought"
    ).split()
    vocab = common * 6 + [w + rng_suffix for w in words for rng_suffix in ("", "s", "ed", "ing")]
    rng = random.Random(42)
    study = Study.objects.create(name="Benchmark")
    run = GenerationRun.objects.create(study=study, name="bench", is_import=True, status="completed")
    t0 = time.perf_counter()
    batch = []
    for i in range(args.stories):
        female = i % 2 == 0
        name, pronoun = ("Kelly", "she") if female else ("Joseph", "he")
        slots = {"name": name}
        batch.append(
            Output(
                study=study,
                run=run,
                model_name=f"model-{i % 5}",
                trial=i + 1,
                slot_values=slots,
                variant_key=variant_key(slots),
                status="done",
                text=story(rng, args.words, name, pronoun, vocab),
            )
        )
        if len(batch) == 2000:
            Output.objects.bulk_create(batch)
            batch = []
    Output.objects.bulk_create(batch)
    print(f"created {args.stories} stories of {args.words} words in {time.perf_counter() - t0:.1f} s")

    measure_run = scoring.create_run(study, name="bench", lexicons=lexicons, classifier="vader")
    import measures.contrasts as contrasts_module
    from measures.classifiers import VaderClassifier

    vader = {"wall": 0.0, "cpu": 0.0}
    original_predict = VaderClassifier.predict

    def timed_predict(self, texts):
        s, c = time.perf_counter(), time.process_time()
        result = original_predict(self, texts)
        vader["wall"] += time.perf_counter() - s
        vader["cpu"] += time.process_time() - c
        return result

    phases = {}
    originals = {
        "score": scoring.Scorer.score,
        "packed_sentences": scoring.packed_chunk,
        "contrasts": contrasts_module.store_contrasts,
    }

    def phase(name, fn):
        def timed(*a, **kw):
            c = time.process_time()
            try:
                return fn(*a, **kw)
            finally:
                phases[name] = phases.get(name, 0.0) + time.process_time() - c

        return timed

    VaderClassifier.predict = timed_predict
    scoring.Scorer.score = phase("score", originals["score"])
    scoring.packed_chunk = phase("packed_sentences", originals["packed_sentences"])
    contrasts_module.store_contrasts = phase("contrasts", originals["contrasts"])
    cpu0, wall0 = time.process_time(), time.perf_counter()
    try:
        # The product's path: what `manage.py measure --sync` and `recipe run` do (queue on the job engine, then
        # execute here). Calling scoring.execute on a draft run does nothing: the engine only runs queued jobs.
        scoring.run_foreground(measure_run)
    finally:
        wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
        scoring.Scorer.score, scoring.packed_chunk = originals["score"], originals["packed_sentences"]
        contrasts_module.store_contrasts = originals["contrasts"]
        VaderClassifier.predict = original_predict
    found = outcome(measure_run)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"lexicons: {', '.join(str(lx) for lx in lexicons)}; classifier: VADER per sentence")
    print(
        f"scored {found['scored']} of {args.stories} stories ({found['sentences']} sentences) status={found['status']}"
    )
    bad = problems("1 worker", created=args.stories, classifier="vader", **found)
    print(
        f"scoring + storing + contrasts: {wall:.1f} s wall, {cpu:.1f} s CPU "
        f"(contrasts {phases.get('contrasts', 0):.1f} s CPU); peak RSS {rss:.0f} MB; target ≤ 60 s"
    )
    rest_wall, rest_cpu = wall - vader["wall"], cpu - vader["cpu"]
    print(f"1 worker: {wall:.2f} s ({cpu:.2f} s CPU)")
    print(f"VADER only: {vader['wall']:.2f} s ({vader['cpu']:.2f} s CPU)")
    print(f"without VADER: {rest_wall:.2f} s ({rest_cpu:.2f} s CPU); target ≤ 2 s for 10,000 stories")
    bench("text_measures.without_vader_cpu_s", rest_cpu, "s", target=2 * args.stories / 10_000)
    bench("text_measures.vader_cpu_s", vader["cpu"], "s")
    scoring_cpu = phases.get("score", 0) - vader["cpu"]
    print(
        f"CPU by phase: scoring without VADER (splitting, lexicons, gender) {scoring_cpu:.2f} s, "
        f"packing sentence rows {phases.get('packed_sentences', 0):.2f} s, "
        f"contrasts {phases.get('contrasts', 0):.2f} s, "
        f"rest (reading outputs, writing measures, progress) "
        f"{rest_cpu - scoring_cpu - phases.get('packed_sentences', 0) - phases.get('contrasts', 0):.2f} s"
    )
    print(f"load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    if args.workers:
        line, more = two_workers(study, lexicons, args, Path(tmp))
        bad += more
    else:
        line = "2 workers: not measured (--workers 0)"
    print(line, flush=True)
    if bad:
        atexit.unregister(shutil.rmtree)  # keep the database and the worker logs to look at
        for problem in bad:
            print(f"FAILED: {problem}")
        print(f"(files kept in {tmp})")
        print(f"RESULT FAIL {'; '.join(bad)}")
        sys.exit(1)
    slow = wall > 60 or rest_cpu > 2 * args.stories / 10_000
    print(f"RESULT {'SLOW' if slow else 'PASS'} {wall:.1f}")


def outcome(measure_run):
    """What a finished measure run holds: its status, scored outputs and sentence rows."""
    from measures.models import OutputMeasure
    from measures.sentence_pack import unpack

    measure_run.refresh_from_db()
    return {
        "status": measure_run.status,
        "scored": OutputMeasure.objects.filter(run=measure_run).count(),
        "sentences": sum(
            len(unpack(packed))
            for packed in OutputMeasure.objects.filter(run=measure_run).values_list("sentences_packed", flat=True)
        ),
    }


def problems(label, *, created, scored, status, sentences, classifier):
    """Why a measure run did not do what the benchmark timed (empty when it did)."""
    found = []
    if scored < created:
        found.append(f"{label}: scored {scored} of {created} stories")
    if status != "completed":
        found.append(f"{label}: the measure run ended with status {status}")
    if classifier and created and not sentences:
        found.append(f"{label}: no sentence rows were written")
    return found


def two_workers(study, lexicons, args, workdir):
    """The same measure run (a new one over the same stories) spread by the job engine over two Celery worker
    processes (the shared launcher, stereoscope/testing/workers.py). Returns (the `2 workers:` line, problems)."""
    from django.conf import settings

    from measures import scoring
    from stereoscope.celery import app
    from stereoscope.testing.workers import CeleryProcesses, WorkerStartError

    measure_run = scoring.create_run(study, name="bench 2 workers", lexicons=lexicons, classifier="vader")
    queue = f"measures-{uuid.uuid4().hex[:8]}"
    with CeleryProcesses(broker=settings.CELERY_BROKER_URL, log_dir=workdir, loglevel="WARNING", host="bench") as c:
        try:
            c.wait_ready(c.start_workers(2, queue))  # start-up is not timed
        except WorkerStartError as exc:
            return "2 workers: not measured (the workers did not come up)", [f"2 workers: {exc}"]
        scoring._enqueue = lambda run: app.send_task(scoring.MEASURE_JOB.task_name, args=[run.pk], queue=queue)
        t0 = time.perf_counter()
        scoring.start(measure_run)
        deadline = time.monotonic() + max(300, args.stories / 10)
        while time.monotonic() < deadline:
            measure_run.refresh_from_db()
            if measure_run.status in ("completed", "failed", "cancelled"):
                break
            time.sleep(0.05)
        wall = time.perf_counter() - t0
    found = outcome(measure_run)
    hosts = measure_run_workers(measure_run)
    line = (
        f"2 workers: {wall:.2f} s wall, scored {found['scored']} of {args.stories} stories "
        f"({found['sentences']} sentences) status={found['status']}; chunks done by {hosts} worker process(es)"
    )
    bench("text_measures.two_workers_wall_s", wall, "s", target=12 * args.stories / 10_000)
    return line, problems("2 workers", created=args.stories, classifier="vader", **found)


def measure_run_workers(measure_run):
    from measures.scoring import MEASURE_JOB
    from stereoscope.jobs import JobChunk

    return JobChunk.objects.filter(kind=MEASURE_JOB.name, job_id=measure_run.pk).values("worker").distinct().count()


if __name__ == "__main__":
    main()
