"""Female vs male contrasts of a measure run: category odds ratios and context scores, per-output tests,
label distributions, per-word odds ratios, counterfactual twins, and the classifier fairness check.

Outputs whose subject gender is unknown are left out of every contrast (their number is reported).
Measures compared per output: "rate:<category id>" = category matches per 100 words, "share:<label>" = share of
sentences with that label, "score" = mean classifier score (per sentence or the document's).
"""

import json
import math
from collections import Counter, defaultdict
from itertools import chain
from typing import Any, TypedDict

import numpy as np
from django.db import transaction
from django.db.models import TextField
from django.db.models.functions import Cast

from generation.toolkits.counterfactual import swap_gender, swap_values
from generation.toolkits.expansion import variant_key

from . import lexical, stats
from .models import ClassifierUnit, ContrastResult, LexiconCategory, MeasureRun, OutputMeasure

DEFAULT_GROUPINGS = ("overall", "model", "item", "dimension")

Result = dict[str, Any]  # a contrast's result, as stored in ContrastResult.result (JSON)


class ContrastRecord(TypedDict):
    """One contrast, stored (a ContrastResult row) or computed on the fly."""

    kind: str
    measure: str
    grouping: str
    group: str
    result: Result


class FairnessError(ValueError):
    """The fairness check cannot run; the message says why."""


TOP_K = 15


_ROW_FIELDS = (  # (the row's key, the field read), in the order rows_for reads them
    ("pk", "pk"),
    ("output_id", "output_id"),
    ("gender", "gender"),
    ("gender_source", "gender_source"),
    ("words", "word_count"),
    ("sentences", "sentence_count"),
    ("counts", "category_counts"),
    ("shares", "label_shares"),
    ("score", "mean_score"),
    ("hallucination", "hallucination_share"),
    ("doc_label", "doc_label"),
    ("language", "language"),
    ("model", "output__model_name"),
    ("item", "output__item__number"),
    ("item_id", "output__item_id"),
    ("twin_of", "output__item__counterfactual_of_id"),
    ("dimension", "output__item__dimension__name"),
    ("run", "output__run__name"),
    ("run_id", "output__run_id"),
    ("endpoint_id", "output__endpoint_id"),
    ("trial", "output__trial"),
    ("slots", "output__slot_values"),
    ("variant_key", "output__variant_key"),
    ("context", "output__context_key"),
    ("endpoint", "output__endpoint__name"),
)
_ROW_KEYS = tuple(key for key, _ in _ROW_FIELDS)
_OR_EMPTY = {"counts": dict, "shares": dict, "dimension": str, "slots": dict, "context": str}  # None read as empty


_JSON_ROW_FIELDS = {"counts": "category_counts", "shares": "label_shares", "slots": "output__slot_values"}


def json_columns(texts):
    """The JSON texts of a column (None for SQL NULL) decoded by one json.loads (cheaper than one per row)."""
    return json.loads("[" + ",".join(["null" if t is None else t for t in texts]) + "]")


def rows_for(run):
    """One dict per scored output with what the contrasts need (outputs failed by the success filter left out).
    The JSON columns are read as text and each decoded at once (json_columns)."""
    as_text = {f"{key}_json": Cast(field, TextField()) for key, field in _JSON_ROW_FIELDS.items()}
    read = [f"{key}_json" if key in _JSON_ROW_FIELDS else field for key, field in _ROW_FIELDS]
    values = list(OutputMeasure.objects.filter(run=run, success_reason="").annotate(**as_text).values_list(*read))
    columns = list(zip(*values, strict=True)) if values else [()] * len(_ROW_FIELDS)
    for i, key in enumerate(_ROW_KEYS):
        if key in _JSON_ROW_FIELDS:
            columns[i] = json_columns(columns[i])
    rows = [dict(zip(_ROW_KEYS, v, strict=True)) for v in zip(*columns, strict=True)]
    for row in rows:
        for key, empty in _OR_EMPTY.items():
            if not row[key]:
                row[key] = empty()
        row["endpoint"] = row["endpoint"] or row["model"]
    return rows


def categories_for(run):
    return list(
        LexiconCategory.objects.filter(lexicon__in=run.lexicons.all())
        .select_related("lexicon")
        .order_by("lexicon__name", "lexicon_id", "order", "key")
    )


def group_key(row, grouping):
    if grouping == "overall":
        return "all"
    if grouping == "model":
        return row["model"]
    if grouping == "item":
        return "" if row["item"] is None else str(row["item"])
    if grouping == "dimension":
        return row["dimension"]
    if grouping == "run":
        return row["run"]
    if grouping == "context":
        return row["context"]
    if grouping.startswith("slot:"):
        return str(row["slots"].get(grouping[5:], ""))
    raise ValueError(
        f"Unknown grouping {grouping!r}; use overall, model, item, dimension, run, context or slot:<name>."
    )


def groups(rows, grouping):
    out = defaultdict(list)
    for row in rows:
        out[group_key(row, grouping)].append(row)
    return dict(sorted(out.items(), key=lambda kv: (kv[0] is None, _sort_key(kv[0]))))


def _sort_key(value):
    try:
        return (0, float(value), "")
    except (TypeError, ValueError):
        return (1, 0, str(value))


def _rate(row, cat_key):
    return 100 * row["counts"].get(cat_key, 0) / row["words"] if row["words"] else None


def _tests(female, male):
    out = {}
    for name, fn in (("welch", stats.welch_t), ("mann_whitney", stats.mann_whitney)):
        try:
            out[name] = fn(female, male)
        except stats.StatsError as exc:
            out[name] = {"error": str(exc)}
        except ValueError as exc:  # e.g. identical values in Mann-Whitney
            out[name] = {"error": str(exc)}
    return out


def _floats(values):
    """An array of floats, NaN for None (the tests leave both out)."""
    return np.array([np.nan if v is None else v for v in values], dtype=float)


def _tests_by_column(samples):
    """_tests(female, male) of each (female array, male array) in `samples`, the samples of equal sizes tested
    together as columns (one scipy call for every lexicon category instead of one per category)."""
    by_size = defaultdict(list)
    for i, (female, male) in enumerate(samples):
        by_size[(len(female), len(male))].append(i)
    out = [None] * len(samples)
    for (n_f, n_m), positions in by_size.items():
        female = np.array([samples[i][0] for i in positions], dtype=float).reshape(len(positions), n_f).T
        male = np.array([samples[i][1] for i in positions], dtype=float).reshape(len(positions), n_m).T
        welch = stats.welch_t_columns(female, male)
        mann_whitney = stats.mann_whitney_columns(female, male)
        for j, i in enumerate(positions):
            out[i] = {"welch": welch[j], "mann_whitney": mann_whitney[j]}
    return out


class RowTable:
    """A run's rows as arrays: words, gender and one count column per category (-1 where the category does not apply
    to the text's language), so a group's sums and rates are array operations instead of loops over dicts."""

    def __init__(self, rows, categories):
        self.rows = rows
        self.position = {id(r): i for i, r in enumerate(rows)}
        self.sentences = np.array([r["sentences"] or 0 for r in rows], dtype=float)
        self._shares, self._has, self._scores = {}, {}, None
        self.words = np.array([r["words"] for r in rows], dtype=np.int64)
        gender = np.array([r["gender"] or "" for r in rows], dtype=object)
        self.female, self.male = gender == "F", gender == "M"
        self.counts = {}
        for cat in categories:
            key = str(cat.pk)
            if cat.words and key not in self.counts:
                self.counts[key] = np.array([r["counts"].get(key, -1) for r in rows], dtype=np.int64)

    def index(self, members):
        return np.fromiter((self.position[id(r)] for r in members), dtype=np.int64, count=len(members))

    def shares(self, label):
        """(each row's share of sentences with `label`, NaN where none; whether its shares hold the label)."""
        if label not in self._shares:
            self._shares[label] = _floats(r["shares"].get(label) for r in self.rows)
            self._has[label] = np.fromiter((label in r["shares"] for r in self.rows), dtype=bool, count=len(self.rows))
        return self._shares[label], self._has[label]

    def scores(self):
        if self._scores is None:
            self._scores = _floats(r["score"] for r in self.rows)
        return self._scores


def category_results(rows, categories, zero_policy, convention="per_category", table=None):
    """Per category: pooled odds ratio (Jung) and Welch / Mann–Whitney on per-output rates per 100 words.
    `table`: a RowTable holding these rows (built here when not given)."""
    table = table or RowTable(rows, categories)
    idx = table.index(rows)
    words = table.words[idx]
    is_f, is_m = table.female[idx], table.male[idx]
    total_f, total_m = int(words[is_f].sum()), int(words[is_m].sum())
    results, pending = [], []
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
        counts = table.counts[key][idx]
        applies = counts >= 0
        sel_f, sel_m = applies & is_f, applies & is_m
        counts_f, counts_m = counts[sel_f], counts[sel_m]
        totals_f, totals_m = words[sel_f], words[sel_m]
        words_f, words_m = int(counts_f.sum()), int(counts_m.sum())
        tf, tm = int(totals_f.sum()), int(totals_m.sum())
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
        pending.append((len(results), _rates(counts_f, totals_f), _rates(counts_m, totals_m)))
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
                "rate_tests": None,  # filled in below, every category at once
                "n_f": int(sel_f.sum()),
                "n_m": int(sel_m.sum()),
            }
        )
    for position, tests in zip(pending, _tests_by_column([(f, m) for _, f, m in pending]), strict=True):
        results[position[0]]["rate_tests"] = tests
    return results, {
        "n_f": int(is_f.sum()),
        "n_m": int(is_m.sum()),
        "total_f": total_f,
        "total_m": total_m,
        "n_unknown": len(rows) - int(is_f.sum()) - int(is_m.sum()),
    }


def _rates(counts, words):
    """Matches per 100 words (NaN for a text without words, which the tests leave out, as _rate's None)."""
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(words > 0, 100 * counts / np.where(words > 0, words, 1), np.nan)


def _stereotyped_or(res):
    """The category OR in its stereotyped direction (Jung's context score needs it under either orientation)."""
    value = res["odds_ratio"].get("or")
    flipped = res["odds_ratio"].get("orientation") == "male" and res["direction"] == "female"
    return 1 / value if flipped and value else value


def context_scores(cat_results):
    """Jung's context score per lexicon: the mean of the ORs of its male- and female-typed categories."""
    by_lexicon = defaultdict(list)
    for res in cat_results:
        if res["direction"] in ("male", "female"):
            by_lexicon[(res["lexicon_id"], res["lexicon"])].append(res)
    out = []
    for (lexicon_id, name), results in by_lexicon.items():
        ors = [_stereotyped_or(r) for r in results]
        out.append(
            {
                "lexicon_id": lexicon_id,
                "lexicon": name,
                "score": lexical.context_score(ors),
                "n_categories": sum(1 for v in ors if v is not None),
                "of": len(ors),
                "ors": {r["category"]: v for r, v in zip(results, ors, strict=True)},
            }
        )
    return out


def per_context_scores(run: MeasureRun, rows=None, categories=None) -> list[Result]:
    """Jung's context score per (endpoint, context) of texts generated in contexts: for each lexicon the mean of
    its category ORs between the female- and male-subject texts of that context. Texts without a context are
    left out."""
    rows = rows_for(run) if rows is None else rows
    categories = categories_for(run) if categories is None else categories
    cells = defaultdict(list)
    for row in rows:
        if row["context"]:
            cells[(row["endpoint"], row["context"])].append(row)
    out = []
    for (endpoint, context), members in sorted(cells.items()):
        cat_res, totals = category_results(members, categories, run.zero_policy)
        for score in context_scores(cat_res):
            out.append(
                {
                    "endpoint": endpoint,
                    "model": members[0]["model"],
                    "context": context,
                    **score,
                    "n_f": totals["n_f"],
                    "n_m": totals["n_m"],
                }
            )
    return out


def label_counts(rows, unit, table=None):
    """{gender: Counter(label)} counting sentences (sentence unit) or documents. Sentences are counted by array
    operations over `table` (a RowTable holding the rows; built here when not given): a row adds round(share ×
    sentences) for each label of its shares, the labels in the order they first occur."""
    counts = {"F": Counter(), "M": Counter()}
    if unit == ClassifierUnit.DOCUMENT:
        for r in rows:
            if r["gender"] in counts and r["doc_label"]:
                counts[r["gender"]][r["doc_label"]] += 1
        return counts
    table = table or RowTable(rows, [])
    idx = table.index(rows)
    for gender, mask in (("F", table.female), ("M", table.male)):
        members = idx[mask[idx]]
        found = {}
        for label in dict.fromkeys(chain.from_iterable(table.rows[i]["shares"] for i in members.tolist())):
            share, has = table.shares(label)
            products = share[members][has[members]] * table.sentences[members][has[members]]
            if not np.isfinite(products).all():  # a share that is not a number: row by row, as it fails there
                return _label_counts_by_row(rows)
            found[label] = int(np.rint(products).sum())  # rint rounds half to even, as round() does
        counts[gender].update(found)
    return counts


def _label_counts_by_row(rows):
    counts = {"F": Counter(), "M": Counter()}
    for r in rows:
        if r["gender"] in counts:
            for label, share in r["shares"].items():
                counts[r["gender"]][label] += round(share * r["sentences"])
    return counts


def hallucination_result(rows):
    """Female vs male share of letter sentences not entailed by the context (Wan et al. 2023, 4.4)."""
    shares_f = [r["hallucination"] for r in rows if r["gender"] == "F" and r["hallucination"] is not None]
    shares_m = [r["hallucination"] for r in rows if r["gender"] == "M" and r["hallucination"] is not None]
    return {
        "measure": "hallucination",
        "label": "hallucinated",
        "tests": _tests(shares_f, shares_m),
        "rule": "share of a letter's sentences not entailed by its context (NLI)",
    }


def classifier_results(rows, labels, unit, table=None):
    """Welch and Mann-Whitney tests of each label's share and of the score, female vs male, and the χ² of the
    label counts. `table`: a RowTable holding these rows (built here when not given)."""
    table = table or RowTable(rows, [])
    idx = table.index(rows)
    female, male = idx[table.female[idx]], idx[table.male[idx]]
    measures = [(f"share:{label}", label) for label in labels] if unit == ClassifierUnit.SENTENCE else []
    samples = [(table.shares(label)[0][female], table.shares(label)[0][male]) for _, label in measures]
    measures.append(("score", "score"))
    samples.append((table.scores()[female], table.scores()[male]))
    out = [
        {"measure": measure, "label": label, "tests": tests}
        for (measure, label), tests in zip(measures, _tests_by_column(samples), strict=True)
    ]
    counts = label_counts(rows, unit, table)
    try:
        chi2 = stats.chi2_labels({g: dict(c) for g, c in counts.items()})
    except stats.StatsError as exc:
        chi2 = {"error": str(exc), "counts": {g: dict(c) for g, c in counts.items()}}
    return out, chi2


def twin_pairs(rows):
    """(female row, male row) pairs of counterfactual twins: same generation run, endpoint and trial; either the
    same item or an item and its gender-swapped twin; slot values that are each other's swap (or none)."""
    index = {}
    for r in rows:
        family = r["twin_of"] or r["item_id"]
        index.setdefault((r["run_id"], r["endpoint_id"], r["trial"], family), []).append(r)
    pairs, seen = [], set()
    for members in index.values():
        if len(members) < 2:  # no twin to pair with (most rows of imported stories)
            continue
        by_variant = defaultdict(list)
        for r in members:
            by_variant[(r["item_id"], r["variant_key"])].append(r)
        for r in members:
            if r["pk"] in seen or r["gender"] != "F":
                continue
            swapped = variant_key(swap_values(r["slots"])) if r["slots"] else ""
            for other in members:
                if other["pk"] in seen or other["pk"] == r["pk"] or other["gender"] != "M":
                    continue
                same_item = other["item_id"] == r["item_id"]
                if (other["variant_key"] == swapped and (not same_item or r["slots"])) or (
                    not r["slots"] and not other["slots"] and not same_item
                ):
                    pairs.append((r, other))
                    seen.update((r["pk"], other["pk"]))
                    break
    return pairs


def paired_results(pairs, categories, labels, unit):
    out = []
    measures = [(f"rate:{c.pk}", c.name, lambda r, k=str(c.pk): _rate(r, k)) for c in categories]
    if unit == ClassifierUnit.SENTENCE:
        measures += [(f"share:{label}", f"share {label}", lambda r, lb=label: r["shares"].get(lb)) for label in labels]
    if labels:
        measures.append(("score", "classifier score", lambda r: r["score"]))
    for key, name, get in measures:
        f_vals = [get(f) for f, _ in pairs]
        m_vals = [get(m) for _, m in pairs]
        try:
            res = stats.paired_t(f_vals, m_vals)
        except stats.StatsError as exc:
            res = {"error": str(exc)}
        out.append({"measure": key, "name": name, "result": res})
    return out


def stored_word_counts(run, ids):
    """{"F": Counter, "M": Counter} of words from the run's WordCounts (written while scoring), or None unless they
    cover exactly the outputs in `ids` ({output id: gender}), each once and under the same gender."""
    counters = {"F": Counter(), "M": Counter()}
    covered = {}
    for gender, output_ids, counts in run.word_counts.values_list("gender", "output_ids", "counts"):
        if gender not in counters:
            return None
        for pk in output_ids:
            if pk in covered:
                return None
            covered[pk] = gender
        counters[gender].update(counts)
    return counters if covered == ids else None


def word_results(run, rows, k=TOP_K, zero_policy=None, min_count=5):
    """Wan's per-word ORs over female vs male texts (English stop words left out); top-k each way."""
    from generation.selectors import outputs_by_id

    zero_policy = zero_policy or run.zero_policy
    ids = {r["output_id"]: r["gender"] for r in rows if r["gender"] in ("F", "M")}
    counters = {"F": Counter(), "M": Counter()}
    english = all((r["language"] or "en").startswith("en") for r in rows)
    stop = lexical.STOPWORDS_EN if english else frozenset()
    stored = stored_word_counts(run, ids)
    if stored is not None:  # counted while scoring
        counters = stored
    else:  # runs scored before word counts were stored, or whose outputs changed since
        for pk, text in outputs_by_id(ids).values_list("pk", "text").iterator(chunk_size=2000):
            counters[ids[pk]].update(lexical.lower_words(text))  # stop words dropped once below: same counts
    for counter in counters.values():
        for word in stop & counter.keys():
            del counter[word]
    word_rows = lexical.word_odds_ratios(counters["M"], counters["F"], zero_policy, min_count=min_count)
    male, female = lexical.top_salient(word_rows, k)
    return {
        "zero_policy": zero_policy,
        "min_count": min_count,
        "stopwords": "english" if stop else "none",
        "k": k,
        "male_salient": male,
        "female_salient": female,
        "n_words": len(word_rows),
    }


def group_results(run, members, categories, table, labels, memo=None):
    """(category results, totals, classifier tests, label χ², hallucination result) of one group's rows. `memo`
    (a dict kept over several groupings) reuses what was computed for the same rows under another grouping (e.g.
    "item" and "dimension" when every output belongs to one item)."""
    key = tuple(r["pk"] for r in members)
    if memo is not None and key in memo:
        return memo[key]
    cat_res, totals = category_results(members, categories, run.zero_policy, run.or_orientation, table)
    tests, chi2 = classifier_results(members, labels, run.classifier_unit, table) if run.classifier else ([], None)
    hallucination = hallucination_result(members) if run.nli_path else None
    found = (cat_res, totals, tests, chi2, hallucination)
    if memo is not None:
        memo[key] = found
    return found


def compute(
    run: MeasureRun, grouping: str = "overall", rows=None, categories=None, table=None, memo=None
) -> list[ContrastRecord]:
    """Contrast records (dicts with kind, measure, grouping, group, result) for one grouping, not stored."""
    rows = rows_for(run) if rows is None else rows
    categories = categories_for(run) if categories is None else categories
    table = table or RowTable(rows, categories)
    labels = (run.classifier_info or {}).get("labels", [])
    records = []

    def record(kind, measure, group, result):
        records.append({"kind": kind, "measure": measure, "grouping": grouping, "group": group, "result": result})

    for group, members in groups(rows, grouping).items():
        cat_res, totals, tests, chi2, hallucination = group_results(run, members, categories, table, labels, memo)
        for res in cat_res:
            record("category", f"cat:{res['category_id']}", group, {**res, **totals})
        for score in context_scores(cat_res):
            record("context_score", f"lexicon:{score['lexicon_id']}", group, {**score, **totals})
        if run.classifier:
            for t in tests:
                record("classifier", t["measure"], group, {**t, **totals})
            record("chi2", "labels", group, {**chi2, **totals})
        if run.nli_path:
            record("classifier", "hallucination", group, {**hallucination, **totals})
    return records


def store_contrasts(run, groupings=DEFAULT_GROUPINGS):
    """Compute and store the run's contrasts (replacing earlier ones): every grouping, the twins, the word ORs."""
    rows = rows_for(run)
    categories = categories_for(run)
    labels = (run.classifier_info or {}).get("labels", [])
    records = []
    table, memo = RowTable(rows, categories), {}
    for grouping in groupings:
        records.extend(compute(run, grouping, rows, categories, table, memo))
    pairs = twin_pairs(rows)
    for res in paired_results(pairs, categories, labels if run.classifier else [], run.classifier_unit):
        records.append(
            {
                "kind": "paired",
                "measure": res["measure"],
                "grouping": "overall",
                "group": "all",
                "result": {**res, "n_pairs": len(pairs)},
            }
        )
    records.append(
        {
            "kind": "word_or",
            "measure": "words",
            "grouping": "overall",
            "group": "all",
            "result": word_results(run, rows),
        }
    )
    with transaction.atomic():
        run.contrasts.exclude(kind="fairness").delete()
        ContrastResult.objects.bulk_create([ContrastResult(run=run, **_json_safe(r)) for r in records], batch_size=500)
    return records


def json_clean(value):
    """NaN and infinity become None (JSON has neither); tuples become lists; keys become strings."""
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, dict):
        return {str(k): json_clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_clean(v) for v in value]
    return value


def _json_safe(record):
    return {**record, "group": str(record["group"])[:300], "result": json_clean(record["result"])}


def fairness_check(run, limit=2000):
    """The regard study's counterfactual check: score gender-swapped copies of the run's texts (sentences or
    documents) with the same classifier; the label distribution should not change. Stores and returns the result."""
    from .scoring import classifier_for

    if not run.classifier:
        raise FairnessError("This measure run has no classifier to check.")
    clf = classifier_for(run)
    if run.classifier_unit == ClassifierUnit.SENTENCE:
        measures = (
            OutputMeasure.objects.filter(run=run).exclude(sentences_packed=b"").select_related("output").order_by("pk")
        )
        originals = []
        for om in measures.iterator(chunk_size=200):
            text = om.output.text
            originals += [(text[s.start : s.end], s.label, s.score) for s in om.sentence_rows()]
            if len(originals) >= limit:
                break
        originals = originals[:limit]
    else:
        items = OutputMeasure.objects.filter(run=run).select_related("output").order_by("pk")[:limit]
        originals = [(m.output.text, m.doc_label, m.doc_score) for m in items]
    changed = [(text, swap_gender(text), label, score) for text, label, score in originals]
    changed = [row for row in changed if row[1] != row[0]]
    if len(changed) < 2:
        raise FairnessError("Fewer than two texts change when their gender is swapped; nothing to compare.")
    preds = clf.predict([row[1] for row in changed])
    before = Counter(row[2] for row in changed)
    after = Counter(p.label for p in preds)
    try:
        chi2 = stats.chi2_labels({"original": dict(before), "swapped": dict(after)})
    except stats.StatsError as exc:
        chi2 = {"error": str(exc), "original": dict(before), "swapped": dict(after)}
    try:
        paired = stats.paired_t([row[3] for row in changed], [p.score for p in preds], labels=("original", "swapped"))
    except stats.StatsError as exc:
        paired = {"error": str(exc)}
    flips = sum(1 for row, p in zip(changed, preds, strict=True) if row[2] != p.label)
    result = {
        "n": len(changed),
        "unit": run.classifier_unit,
        "flipped": flips,
        "flip_rate": flips / len(changed),
        "chi2": chi2,
        "paired_scores": paired,
        "classifier": clf.info,
        "examples": [
            {"original": row[0][:300], "swapped": row[1][:300], "label_before": row[2], "label_after": p.label}
            for row, p in list(zip(changed, preds, strict=True))[:10]
        ],
    }
    store_fairness(run, result)
    return result


def store_fairness(run, result):
    """Replace the run's fairness-check record with `result` (a result or {"error": message})."""
    with transaction.atomic():
        run.contrasts.filter(kind="fairness").delete()
        ContrastResult.objects.create(
            run=run, kind="fairness", measure="labels", grouping="overall", group="all", result=json_clean(result)
        )
