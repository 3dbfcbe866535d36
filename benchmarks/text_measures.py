"""Benchmark: score 10,000 stories of ~400 words with every built-in lexicon and VADER (per sentence) in one worker.

Target (issue 9): ≤ 60 s. Runs the real measure-run executor (`measures.scoring.execute`: lexicon counts, sentence
splitting, VADER per sentence, subject gender, OutputMeasure + SentenceMeasure rows written in batches) and then the
stored contrasts, on a throw-away SQLite database (or DATABASE_URL if set).

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
    scored = scoring.execute(measure_run.pk)
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    contrasts_module.store_contrasts = original
    measure_run.refresh_from_db()
    n_sentences = SentenceMeasure.objects.filter(output_measure__run=measure_run).count()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"lexicons: {', '.join(str(lx) for lx in lexicons)}; classifier: VADER per sentence")
    print(f"scored {scored} stories ({n_sentences} sentences) status={measure_run.status}")
    print(f"scoring + storing + contrasts: {wall:.1f} s wall, {cpu:.1f} s CPU "
          f"(contrasts {timings.get('contrasts', 0):.1f} s); peak RSS {rss:.0f} MB; target ≤ 60 s")
    print(f"RESULT {'PASS' if wall <= 60 else 'SLOW'} {wall:.1f}")


if __name__ == "__main__":
    main()
