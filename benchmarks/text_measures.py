"""Benchmark: score 10,000 stories of ~400 words with every built-in lexicon and VADER (per sentence) in one worker.

Targets: ≤ 60 s in all (issue 9); everything except VADER ≤ 2 s (issue 18). Prints, each with its time in seconds:
`1 worker:` the whole run in this process, `VADER only:` the time spent inside VADER, `without VADER:` the rest
(sentence splitting, lexicon matching, gender, row writes, contrasts), and `2 workers:` once a job engine spreads a
measure run over worker processes (until then the line says it is not available). CPU times are printed beside wall
times: on a loaded machine compare those. Runs the real measure-run executor (`measures.scoring.execute`: lexicon
counts, sentence splitting, VADER per sentence, subject gender, OutputMeasure + SentenceMeasure rows written in
batches) and then the stored contrasts, on a throw-away SQLite database (or DATABASE_URL if set).

    .venv/bin/python benchmarks/text_measures.py [--stories 10000] [--words 400]
"""
import argparse
import os
import random
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def story(rng, words, name, pronoun, vocab):
    out, sentence = [name, "is"], 2
    while len(out) < words:
        n = rng.randint(8, 22)
        chunk = [rng.choice(vocab) for _ in range(n)]
        chunk[0] = (pronoun if rng.random() < 0.5 else name).capitalize() if rng.random() < 0.6 else chunk[0].capitalize()
        out.extend(chunk)
        out[-1] += "."
        sentence += 1
    return " ".join(out[:words]).rstrip(".") + "."


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--stories", type=int, default=10_000)
    parser.add_argument("--words", type=int, default=400)
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="sc-bench-")
    os.environ.setdefault("DATABASE_URL", f"sqlite:///{tmp}/bench.sqlite3")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stereoscope.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from generation.models import GenerationRun, Output
    from generation.toolkits import variant_key
    from measures import scoring
    from measures.builtin import builtin_specs
    from measures.models import Lexicon, SentenceMeasure
    from stereoscope.builtin import load_builtins
    from stereoscope.models import Study

    load_builtins(builtin_specs(), log=lambda *_: None)
    lexicons = list(Lexicon.objects.filter(study__is_library=True))
    words = [w for lx in lexicons for c in lx.categories.all() for w in c.words if " " not in w]
    common = ("the a and of to in was with for on at as by from that this her his their team work project day city night "
              "good great bad happy sad wonderful terrible quiet bright strong kind warm careful brilliant leader nurse "
              "doctor engineer family child home office meeting plan idea question answer smiled walked said thought").split()
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
        batch.append(Output(study=study, run=run, model_name=f"model-{i % 5}", trial=i + 1, slot_values=slots,
                            variant_key=variant_key(slots), status="done", text=story(rng, args.words, name, pronoun, vocab)))
        if len(batch) == 2000:
            Output.objects.bulk_create(batch)
            batch = []
    Output.objects.bulk_create(batch)
    print(f"created {args.stories} stories of {args.words} words in {time.perf_counter() - t0:.1f} s")

    measure_run = scoring.create_run(study, name="bench", lexicons=lexicons, classifier="vader")
    cpu0, wall0 = time.process_time(), time.perf_counter()
    import measures.contrasts as contrasts_module

    timings = {}
    original = contrasts_module.store_contrasts

    def timed_store(run_obj, *a, **kw):
        s = time.perf_counter()
        result = original(run_obj, *a, **kw)
        timings["contrasts"] = time.perf_counter() - s
        return result

    contrasts_module.store_contrasts = timed_store
    vader = {"wall": 0.0, "cpu": 0.0}
    from measures.classifiers import VaderClassifier

    original_predict = VaderClassifier.predict

    def timed_predict(self, texts):
        s, c = time.perf_counter(), time.process_time()
        result = original_predict(self, texts)
        vader["wall"] += time.perf_counter() - s
        vader["cpu"] += time.process_time() - c
        return result

    VaderClassifier.predict = timed_predict
    phases = {}
    originals = {"score": scoring.Scorer.score, "insert_sentences": scoring.insert_sentences,
                 "contrasts": contrasts_module.store_contrasts}

    def phase(name, fn):
        def timed(*a, **kw):
            c = time.process_time()
            try:
                return fn(*a, **kw)
            finally:
                phases[name] = phases.get(name, 0.0) + time.process_time() - c
        return timed

    scoring.Scorer.score = phase("score", originals["score"])
    scoring.insert_sentences = phase("insert_sentences", originals["insert_sentences"])
    contrasts_module.store_contrasts = phase("contrasts", contrasts_module.store_contrasts)
    scored = scoring.execute(measure_run.pk)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    scoring.Scorer.score, scoring.insert_sentences = originals["score"], originals["insert_sentences"]
    contrasts_module.store_contrasts = original
    VaderClassifier.predict = original_predict
    measure_run.refresh_from_db()
    n_sentences = SentenceMeasure.objects.filter(output_measure__run=measure_run).count()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"lexicons: {', '.join(str(lx) for lx in lexicons)}; classifier: VADER per sentence")
    print(f"scored {scored} stories ({n_sentences} sentences) status={measure_run.status}")
    print(f"scoring + storing + contrasts: {wall:.1f} s wall, {cpu:.1f} s CPU "
          f"(contrasts {timings.get('contrasts', 0):.1f} s); peak RSS {rss:.0f} MB; target ≤ 60 s")
    rest_wall, rest_cpu = wall - vader["wall"], cpu - vader["cpu"]
    print(f"1 worker: {wall:.2f} s ({cpu:.2f} s CPU)")
    print(f"VADER only: {vader['wall']:.2f} s ({vader['cpu']:.2f} s CPU)")
    print(f"without VADER: {rest_wall:.2f} s ({rest_cpu:.2f} s CPU); target ≤ 2 s for 10,000 stories")
    scoring_cpu = phases.get("score", 0) - vader["cpu"]
    print(f"CPU by phase: scoring without VADER (splitting, lexicons, gender) {scoring_cpu:.2f} s, "
          f"sentence rows {phases.get('insert_sentences', 0):.2f} s, contrasts {phases.get('contrasts', 0):.2f} s, "
          f"rest (reading outputs, writing measures, progress) "
          f"{rest_cpu - scoring_cpu - phases.get('insert_sentences', 0) - phases.get('contrasts', 0):.2f} s")
    print(two_workers_line(args))
    print(f"RESULT {'PASS' if wall <= 60 else 'SLOW'} {wall:.1f}")


def two_workers_line(args):
    """The `2 workers:` line: a measure run spread over two worker processes by the job engine, when there is one."""
    try:
        from stereoscope import jobs  # noqa: F401  (the job engine, once merged)
    except ImportError:
        return "2 workers: not available (no job engine on this branch to spread a measure run over workers)"
    return "2 workers: not measured (the job engine's worker API is not wired into this benchmark yet)"


if __name__ == "__main__":
    main()
