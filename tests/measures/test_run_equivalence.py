"""A measure run with every built-in lexicon and VADER stores, per story and per sentence, exactly what a plain
computation gives: words by one regex, sentences by the reference splitter, category counts by one plain regex per
entry, VADER called sentence by sentence; and its stored contrasts (pooled category odds, label counts, Wan's word
ORs) equal the same sums done by hand. Guards the fast paths of the measure run (issue 18)."""

import random
import re
from collections import Counter

import pytest
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

from measures import contrasts, lexical, scoring, services
from measures import stats as mstats
from measures.models import ContrastResult, OutputMeasure

from .test_speed_equivalence import PIECES, _reference_matcher_counts, reference_split

pytestmark = pytest.mark.django_db

PLAIN_WORD = re.compile(r"\w+(?:[-'’]\w+)*")
LEXICON_WORDS = [
    "confident",
    "confidence",
    "excellent",
    "superb",
    "well-rounded",
    "kind",
    "kindness",
    "helpful",
    "dependable",
    "hardworking",
    "skill",
    "skilled",
    "talented",
    "baby",
    "Babylon",
    "mother",
    "au pair",
    "sex worker",
    "strip club",
    "criminal",
    "not aggressive",
    "aggressive",
    "Mutter",
    "Familie",
    "nicht aggressiv",
    "Terrorist",
    "Einbrecherin",
]


def corpus(n=40, seed=18, german=True):
    rng = random.Random(seed)
    specs = []
    for i in range(n):
        female = i % 2 == 0
        name, pronoun = ("Kelly", "She") if female else ("Joseph", "He")
        parts = []
        for _ in range(rng.randint(5, 40)):
            piece = rng.choice(LEXICON_WORDS + PIECES + [name, pronoun, "the team", "works hard"])
            parts.append(piece + rng.choice([" ", " ", ". ", "! ", "\n", ", ", "? "]))
        text = f"{name} {rng.choice(['is', 'was'])} " + "".join(parts)
        specs.append((text, {"name": name}, "F" if female else "M", "de" if german and i % 7 == 3 else "en"))
    return specs


def plain_lower(text):
    """Lower case, keeping offsets: a character whose lower case is longer ("İ") stays as it is."""
    lowered = text.lower()
    return lowered if len(lowered) == len(text) else "".join(c if len(c.lower()) != 1 else c.lower() for c in text)


def reference_vader(analyzer, sentence):
    s = analyzer.polarity_scores(sentence)
    c = s["compound"]
    return ("positive" if c >= 0.05 else "negative" if c <= -0.05 else "neutral"), c, s


@pytest.mark.parametrize("german", [True, False], ids=["english and german", "english only"])
def test_measure_run_equals_plain_computation(study, make_outputs, library_lexicons, german):
    from generation.models import Dimension, PromptItem, Toolkit

    toolkit_de = Toolkit.objects.create(study=study, name="Deutsch", language="de")
    dim = Dimension.objects.create(toolkit=toolkit_de, name="Fürsorge")
    item_de = PromptItem.objects.create(toolkit=toolkit_de, number=1, text="Schreibe eine Geschichte.", dimension=dim)
    specs = corpus(german=german)
    outputs = make_outputs(
        study,
        [
            {
                "text": text,
                "slot_values": slots,
                "model_name": f"model-{i % 3}",
                **({"item": item_de} if lang == "de" else {}),
            }
            for i, (text, slots, _, lang) in enumerate(specs)
        ],
    )
    lexicons = list(library_lexicons.values())
    run = scoring.create_run(study, name="equivalence", lexicons=lexicons, classifier="vader")
    scoring.start(run)  # eager: the job engine's path
    run.refresh_from_db()
    assert run.status == "completed"

    analyzer = SentimentIntensityAnalyzer()
    words_by_gender = {"F": Counter(), "M": Counter()}
    totals = Counter()
    labels_by_gender = {"F": Counter(), "M": Counter()}
    for out, (text, _, gender, lang) in zip(outputs, specs, strict=True):
        m = OutputMeasure.objects.get(run=run, output=out)
        words = PLAIN_WORD.findall(plain_lower(text))
        sentences = reference_split(text)
        assert (m.language, m.gender, m.gender_source) == (lang, gender, "slots")
        assert (m.word_count, m.sentence_count) == (len(words), len(sentences)), text
        expected_counts = {}
        for lx in lexicons:
            cats = [c for c in lx.categories.all() if services.language_applies(c.language, lang)]
            specs_ = [lexical.CategorySpec(str(c.pk), tuple(c.words), c.match_mode) for c in cats]
            exclusions = []
            for ex in lx.exclusions.all():
                keys = [str(ex.category_id)] if ex.category_id else [s.key for s in specs_]
                exclusions += [
                    lexical.ExclusionSpec(ex.phrase, ex.is_regex, k) for k in keys if k in {s.key for s in specs_}
                ]
            expected_counts.update(_reference_matcher_counts(specs_, exclusions, lx.count_policy, text))
        assert m.category_counts == expected_counts, text
        rows = m.sentence_rows()
        expected_rows = []
        for s in sentences:
            label, score, scores = reference_vader(analyzer, s.text)
            expected_rows.append((s.index, s.start, s.end, label, score, scores))
        assert [(r.index, r.start, r.end, r.label, r.score, r.scores) for r in rows] == expected_rows, text
        shares = Counter(r[3] for r in expected_rows)
        assert m.label_shares == {lb: shares[lb] / len(rows) for lb in ("negative", "neutral", "positive")}
        assert m.mean_score == pytest.approx(sum(r[4] for r in expected_rows) / len(rows), abs=1e-12)
        words_by_gender[gender].update(words)
        for key, n in expected_counts.items():
            totals[(gender, key)] += n
        totals[(gender, "words")] += len(words)
        labels_by_gender[gender].update(shares)

    # pooled category odds of the stored contrasts (English categories: every text in English)
    for lx in lexicons:
        for cat in lx.categories.all():
            if not cat.words:
                continue
            res = ContrastResult.objects.get(run=run, kind="category", grouping="overall", measure=f"cat:{cat.pk}")
            odds = res.result["odds_ratio"]
            key = str(cat.pk)
            apply_f = [
                len(PLAIN_WORD.findall(plain_lower(t)))
                for t, _, g, lang in specs
                if g == "F" and services.language_applies(cat.language, lang)
            ]
            assert odds["words_f"] == totals[("F", key)] and odds["total_f"] == sum(apply_f), cat.key
            apply_m = [
                len(PLAIN_WORD.findall(plain_lower(t)))
                for t, _, g, lang in specs
                if g == "M" and services.language_applies(cat.language, lang)
            ]
            assert odds["words_m"] == totals[("M", key)] and odds["total_m"] == sum(apply_m), cat.key
    chi2 = ContrastResult.objects.get(run=run, kind="chi2", grouping="overall")
    assert chi2.result["n_f"] == 20 and chi2.result["n_m"] == 20
    assert chi2.result["total_f"] == totals[("F", "words")] and chi2.result["total_m"] == totals[("M", "words")]
    assert chi2.result["table"] == [
        [labels_by_gender[g][lb] for lb in chi2.result["labels"]] for g in chi2.result["groups"]
    ]
    ids = {out.pk: gender for out, (_, _, gender, _) in zip(outputs, specs, strict=True)}
    assert contrasts.stored_word_counts(run, ids) == words_by_gender  # counted while scoring, not read again
    assert {lang for *_, lang in specs} == ({"en", "de"} if german else {"en"})
    if not german:  # all English: stop words are left out
        for gender in ("F", "M"):
            for word in lexical.STOPWORDS_EN:
                words_by_gender[gender].pop(word, None)
    expected_words = lexical.word_odds_ratios(words_by_gender["M"], words_by_gender["F"], run.zero_policy, min_count=5)
    male, female = lexical.top_salient(expected_words, 15)
    stored = ContrastResult.objects.get(run=run, kind="word_or").result
    assert stored["n_words"] == len(expected_words)
    assert stored["male_salient"] == male and stored["female_salient"] == female
    # without the stored word counts (runs scored before them) the texts are read again: the same result
    run.word_counts.first().delete()
    assert contrasts.stored_word_counts(run, ids) is None
    assert contrasts.json_clean(contrasts.word_results(run, contrasts.rows_for(run))) == stored


# -- the contrasts: category results by the plain loops they replaced ------------------------------------------------


def _plain_rate(row, cat_key):
    return 100 * row["counts"].get(cat_key, 0) / row["words"] if row["words"] else None


def _plain_tests(female, male):
    out = {}
    for name, fn in (("welch", mstats.welch_t), ("mann_whitney", mstats.mann_whitney)):
        try:
            out[name] = fn(female, male)
        except mstats.StatsError as exc:
            out[name] = {"error": str(exc)}
        except ValueError as exc:  # e.g. identical values in Mann-Whitney
            out[name] = {"error": str(exc)}
    return out


def plain_category_results(rows, categories, zero_policy, convention="per_category"):
    """category_results as it was before the speed work: loops over the rows' dicts."""
    female = [r for r in rows if r["gender"] == "F"]
    male = [r for r in rows if r["gender"] == "M"]
    total_f, total_m = sum(r["words"] for r in female), sum(r["words"] for r in male)
    results = []
    for cat in categories:
        key = str(cat.pk)
        if not cat.words:
            results.append(
                {
                    "category_id": cat.pk,
                    "category": cat.name,
                    "key": cat.key,
                    "lexicon": str(cat.lexicon),
                    "lexicon_id": cat.lexicon_id,
                    "direction": cat.direction,
                    "color": cat.color,
                    "n_f": 0,
                    "n_m": 0,
                    "odds_ratio": {"or": None, "note": "The category has no entries.", "zero_policy": zero_policy},
                    "rate_tests": {
                        "welch": {"error": "The category has no entries."},
                        "mann_whitney": {"error": "The category has no entries."},
                    },
                }
            )
            continue
        applicable_f = [r for r in female if key in r["counts"]]
        applicable_m = [r for r in male if key in r["counts"]]
        words_f = sum(r["counts"][key] for r in applicable_f)
        words_m = sum(r["counts"][key] for r in applicable_m)
        tf, tm = sum(r["words"] for r in applicable_f), sum(r["words"] for r in applicable_m)
        if tf and tm and words_f <= tf and words_m <= tm:
            odds_ratio = lexical.category_odds_ratio(words_m, tm, words_f, tf, cat.direction, zero_policy, convention)
        else:
            odds_ratio = {
                "or": None,
                "note": "No female or no male texts in this category's language.",
                "zero_policy": zero_policy,
                "words_m": words_m,
                "words_f": words_f,
                "total_m": tm,
                "total_f": tf,
                "convention": convention,
                "orientation": "female" if cat.direction == "female" and convention == "per_category" else "male",
            }
        tests = _plain_tests([_plain_rate(r, key) for r in applicable_f], [_plain_rate(r, key) for r in applicable_m])
        results.append(
            {
                "category_id": cat.pk,
                "category": cat.name,
                "key": cat.key,
                "lexicon": str(cat.lexicon),
                "lexicon_id": cat.lexicon_id,
                "direction": cat.direction,
                "color": cat.color,
                "odds_ratio": odds_ratio,
                "rate_tests": tests,
                "n_f": len(applicable_f),
                "n_m": len(applicable_m),
            }
        )
    return results, {
        "n_f": len(female),
        "n_m": len(male),
        "total_f": total_f,
        "total_m": total_m,
        "n_unknown": sum(1 for r in rows if r["gender"] not in ("F", "M")),
    }


def test_category_results_equal_the_plain_loops(study, make_outputs, library_lexicons):
    rng = random.Random(5)
    specs = []
    for i, (text, slots, _, _) in enumerate(corpus(60, seed=7)):
        if i % 9 == 4:
            slots = {}  # unknown gender
        if i % 13 == 6:
            text = "—"  # no words
        specs.append({"text": text, "slot_values": slots, "model_name": f"model-{rng.randint(0, 3)}"})
    make_outputs(study, specs)
    run = scoring.create_run(study, name="contrasts", lexicons=list(library_lexicons.values()), classifier="vader")
    scoring.start(run)
    rows, categories = contrasts.rows_for(run), contrasts.categories_for(run)
    table = contrasts.RowTable(rows, categories)
    for grouping in ("overall", "model"):
        for _, members in contrasts.groups(rows, grouping).items():
            for convention in ("per_category", "male_salient"):
                for policy in ("exclude", "smooth"):
                    got = contrasts.category_results(members, categories, policy, convention, table)
                    want = plain_category_results(members, categories, policy, convention)
                    assert contrasts.json_clean(got) == contrasts.json_clean(want)
                    assert contrasts.json_clean(
                        contrasts.category_results(members, categories, policy, convention)
                    ) == (contrasts.json_clean(want))


def test_chunks_are_bigger_when_outputs_are_quick_to_score(study, make_outputs, library_lexicons):
    from stereoscope import jobs

    make_outputs(study, [{"text": f"Kelly is kind {i}.", "slot_values": {"name": "Kelly"}} for i in range(1200)])
    quick = scoring.create_run(study, name="quick", lexicons=list(library_lexicons.values()), classifier="vader")
    jobs.queue(scoring.MEASURE_JOB, quick)
    sizes = list(
        jobs.JobChunk.objects.filter(kind=scoring.MEASURE_JOB.name, job_id=quick.pk).values_list("size", flat=True)
    )
    assert sorted(sizes) == [200, scoring.QUICK_BATCH]
    assert scoring.MEASURE_JOB.units_per_chunk(scoring.MeasureRun(classifier="transformers")) == scoring.BATCH
    assert scoring.MEASURE_JOB.units_per_chunk(scoring.MeasureRun(classifier="", nli_path="x")) == scoring.BATCH


def _plain_rows(run):
    """rows_for as it read the rows before (one dict per row from .values(), JSON decoded by the ORM)."""
    values = OutputMeasure.objects.filter(run=run, success_reason="").values(
        *"pk output_id gender gender_source word_count sentence_count category_counts label_shares mean_score".split(),
        *"doc_label language hallucination_share output__model_name output__item__number output__item_id".split(),
        *"output__item__counterfactual_of_id output__item__dimension__name output__run_id output__run__name".split(),
        *"output__endpoint_id output__endpoint__name output__trial output__slot_values output__variant_key".split(),
        "output__context_key",
    )
    return [
        {
            "pk": v["pk"],
            "output_id": v["output_id"],
            "gender": v["gender"],
            "gender_source": v["gender_source"],
            "words": v["word_count"],
            "sentences": v["sentence_count"],
            "counts": v["category_counts"] or {},
            "shares": v["label_shares"] or {},
            "score": v["mean_score"],
            "hallucination": v["hallucination_share"],
            "doc_label": v["doc_label"],
            "language": v["language"],
            "model": v["output__model_name"],
            "item": v["output__item__number"],
            "item_id": v["output__item_id"],
            "twin_of": v["output__item__counterfactual_of_id"],
            "dimension": v["output__item__dimension__name"] or "",
            "run": v["output__run__name"],
            "run_id": v["output__run_id"],
            "endpoint_id": v["output__endpoint_id"],
            "trial": v["output__trial"],
            "slots": v["output__slot_values"] or {},
            "variant_key": v["output__variant_key"],
            "context": v["output__context_key"] or "",
            "endpoint": v["output__endpoint__name"] or v["output__model_name"],
        }
        for v in values
    ]


def test_contrast_rows_read_their_json_columns_at_once_as_the_orm_reads_them(study, make_outputs, library_lexicons):
    """rows_for decodes the JSON columns of all rows at once: the same rows as decoding them row by row (floats,
    unicode, nested slot values, empty dicts, items and dimensions included)."""
    from generation.models import Dimension, PromptItem, Toolkit

    toolkit = Toolkit.objects.create(study=study, name="Deutsch", language="de")
    item = PromptItem.objects.create(
        toolkit=toolkit, number=2, text="Schreibe.", dimension=Dimension.objects.create(toolkit=toolkit, name="Fü")
    )
    specs = [
        {"text": text, "slot_values": slots, "model_name": f"m{i % 2}", **({"item": item} if lang == "de" else {})}
        for i, (text, slots, _, lang) in enumerate(corpus(n=30))
    ]
    specs += [{"text": "Ein Text ohne Namen.", "slot_values": {}}, {"text": "x", "slot_values": {"a": [1, 2.5, "ü"]}}]
    make_outputs(study, specs)
    run = scoring.create_run(study, name="rows", lexicons=list(library_lexicons.values()), classifier="vader")
    scoring.start(run)
    run.refresh_from_db()
    rows = contrasts.rows_for(run)
    assert len(rows) == 32 and rows == _plain_rows(run)
    assert [list(r) for r in rows] == [list(r) for r in _plain_rows(run)]
    assert contrasts.rows_for(scoring.create_run(study, name="none", lexicons=list(library_lexicons.values()))) == []


def _plain_label_counts(rows):
    counts = {"F": Counter(), "M": Counter()}
    for r in rows:
        if r["gender"] in counts:
            for label, share in r["shares"].items():
                counts[r["gender"]][label] += round(share * r["sentences"])
    return counts


def _plain_classifier_tests(rows, labels):
    female = [r for r in rows if r["gender"] == "F"]
    male = [r for r in rows if r["gender"] == "M"]
    samples = [
        (contrasts._floats(r["shares"].get(lb) for r in female), contrasts._floats(r["shares"].get(lb) for r in male))
        for lb in labels
    ]
    samples.append((contrasts._floats(r["score"] for r in female), contrasts._floats(r["score"] for r in male)))
    return contrasts._tests_by_column(samples)


def test_label_counts_and_classifier_tests_by_arrays_equal_the_row_loops():
    """The sentence label counts (round(share × sentences), halves to even) and the share and score tests computed
    over a RowTable equal the loops over the rows: labels first met in different orders per gender, rows without
    some labels, unknown genders, missing scores, groups of the rows."""
    rng = random.Random(36)
    rows = []
    for i in range(400):
        n = rng.choice([0, 1, 2, 4, 8, 27])
        labels = rng.sample(["positive", "neutral", "negative", "Frau ≠ Mann"], rng.randint(0, 4))
        shares = {lb: rng.choice([0.0, 0.125, 0.5, 0.375, 1.0, rng.random()]) for lb in labels}
        score = rng.choice([None, rng.uniform(-1, 1), 0.5])
        gender = rng.choice(["F", "M", "", None])
        rows.append({"pk": i, "words": 10, "gender": gender, "shares": shares, "sentences": n, "score": score})
    table = contrasts.RowTable(rows, [])
    for members in (rows, rows[::3], [r for r in rows if r["sentences"] == 27], []):
        got = contrasts.label_counts(members, "sentence", table)
        want = _plain_label_counts(members)
        assert got == want and [list(c) for c in got.values()] == [list(c) for c in want.values()]
        assert contrasts.label_counts(members, "sentence") == want
        labels = ["positive", "negative", "missing"]
        tests, _ = contrasts.classifier_results(members, labels, "sentence", table)
        plain = _plain_classifier_tests(members, labels)
        assert contrasts.json_clean([t["tests"] for t in tests]) == contrasts.json_clean(plain)
    bad = [{"pk": 0, "words": 1, "gender": "F", "shares": {"x": None}, "sentences": 2, "score": None}]
    with pytest.raises(TypeError):
        contrasts.label_counts(bad, "sentence")
