"""Reads for pages, API and exports: report sections, per-output and per-sentence rows."""

import math
from collections import defaultdict
from collections.abc import Iterator, Mapping
from typing import Any, NotRequired, TypedDict

from django.db.models import Count, QuerySet

from stereoscope.models import Study

from .contrasts import DEFAULT_GROUPINGS, ContrastRecord, Result, compute, per_context_scores
from .models import Lexicon, LexiconCategory, MeasureRun, OutputMeasure, TrainedClassifier
from .sentence_pack import SentenceRow
from .success import REASONS

Row = dict[str, object]  # one flat table row (CSV, API, export)
# [(group, [(label, share, n, colour)])]: a χ² result's label shares per group
Distribution = list[tuple[str, list[tuple[str, float, int, str]]]]


class GroupReport(TypedDict):
    """One group's section of a measure run's report."""

    categories: list[Result]
    scores: list[Result]
    classifier: list[Result]
    chi2: Result | None
    totals: NotRequired[dict[str, Any] | None]


class ContextChi2(TypedDict):
    group: str
    chi2: Result
    distribution: Distribution


class MeasureReport(TypedDict):
    groups: dict[str, GroupReport]
    words: Result | None
    fairness: Result | None
    paired: list[Result]
    by_context: list[ContextChi2]


LABEL_COLORS = {"positive": "#2f9e44", "neutral": "#adb5bd", "negative": "#e03131", "other": "#845ef7"}


def grouping_choices(run: MeasureRun) -> list[tuple[str, str]]:
    choices = [
        ("overall", "Overall"),
        ("model", "Model"),
        ("item", "Prompt item"),
        ("dimension", "Dimension / context type"),
        ("run", "Generation run"),
        ("context", "Context (persona)"),
    ]
    slot_names: set[str] = set()
    for slots in OutputMeasure.objects.filter(run=run).values_list("output__slot_values", flat=True)[:2000]:
        slot_names.update((slots or {}).keys())
    choices += [(f"slot:{name}", f"Slot: {name}") for name in sorted(slot_names)]
    return choices


def context_scores(run: MeasureRun) -> list[Result]:
    """Jung's context score per (endpoint, context) of a measure run over texts generated in contexts."""
    return per_context_scores(run)


def contrast_records(run: MeasureRun, grouping: str = "overall") -> list[ContrastRecord]:
    """Stored records for the default groupings; computed on the fly for any other grouping."""
    if grouping in DEFAULT_GROUPINGS:
        return [
            {"kind": c.kind, "measure": c.measure, "grouping": c.grouping, "group": c.group, "result": c.result}
            for c in run.contrasts.filter(grouping=grouping).exclude(kind__in=["paired", "word_or", "fairness"])
        ]
    return compute(run, grouping)


def _bar(odds_ratio: float | None) -> dict[str, float] | None:
    """Left/width percentages for an OR bar on a log2 axis centred at OR = 1 (clamped at 1/8 and 8)."""
    if not odds_ratio:
        return None
    x = max(-3.0, min(3.0, math.log2(odds_ratio)))
    width = abs(x) / 3 * 50
    return {"left": 50 if x >= 0 else 50 - width, "width": max(width, 0.5)}


def report(run: MeasureRun, grouping: str = "overall") -> MeasureReport:
    records = contrast_records(run, grouping)
    groups: defaultdict[str, GroupReport] = defaultdict(
        lambda: {"categories": [], "scores": [], "classifier": [], "chi2": None}
    )
    for r in records:
        g = groups[r["group"]]
        res = r["result"]
        if r["kind"] == "category":
            res = {**res, "bar": _bar(res["odds_ratio"].get("or"))}
            g["categories"].append(res)
        elif r["kind"] == "context_score":
            g["scores"].append(res)
        elif r["kind"] == "classifier":
            g["classifier"].append(res)
        elif r["kind"] == "chi2":
            g["chi2"] = {**res, "distribution": label_distribution(res)}
        g["totals"] = (
            {k: res.get(k) for k in ("n_f", "n_m", "n_unknown", "total_f", "total_m")}
            if "n_unknown" in res
            else g.get("totals")
        )
    overall = {c.kind: c.result for c in run.contrasts.filter(kind__in=["word_or", "fairness"])}
    paired = [c.result for c in run.contrasts.filter(kind="paired")]
    names = {f"rate:{c.pk}": c.name for c in LexiconCategory.objects.filter(lexicon__in=run.lexicons.all())}
    for p in paired:
        p["label"] = names.get(p["measure"], p.get("name", p["measure"]))
    by_context: list[ContextChi2] = []
    if grouping == "overall":
        for c in run.contrasts.filter(kind="chi2", grouping="dimension").order_by("group"):
            by_context.append(
                {"group": c.group or "(no dimension)", "chi2": c.result, "distribution": label_distribution(c.result)}
            )
    return {
        "groups": dict(groups),
        "words": overall.get("word_or"),
        "fairness": overall.get("fairness"),
        "paired": paired,
        "by_context": by_context if len(by_context) > 1 else [],
    }


def label_distribution(chi2: Result) -> Distribution:
    """[(group, [(label, share, colour)])] from a χ² result's table."""
    if "table" not in chi2:
        return []
    out: Distribution = []
    for group, row in zip(chi2["groups"], chi2["table"], strict=True):
        total = sum(row) or 1
        out.append(
            (
                group,
                [
                    (label, n / total, n, LABEL_COLORS.get(label, LABEL_COLORS["other"]))
                    for label, n in zip(chi2["labels"], row, strict=True)
                ],
            )
        )
    return out


def output_rows(run: MeasureRun) -> Iterator[Row]:
    """Per-output measures, one flat dict each (CSV, API, analysis-ready export)."""
    categories = list(
        LexiconCategory.objects.filter(lexicon__in=run.lexicons.all())
        .select_related("lexicon")
        .order_by("lexicon__name", "order", "key")
    )
    labels = (run.classifier_info or {}).get("labels", [])
    qs = OutputMeasure.objects.filter(run=run).select_related("output__item__dimension").order_by("output_id")
    for m in qs.iterator(chunk_size=1000):
        out = m.output
        row: Row = {
            "measure_run": run.pk,
            "output_id": out.pk,
            "generation_run_id": out.run_id,
            "model": out.model_name,
            # an item_id (dimension_id) says the item (its dimension) is there
            "item_number": out.item.number if out.item_id else "",  # type: ignore[union-attr]
            "dimension": out.item.dimension.name if out.item_id and out.item.dimension_id else "",  # type: ignore[union-attr]
            "trial": out.trial,
            "variant_key": out.variant_key,
            "language": m.language,
            "gender": m.gender,
            "gender_source": m.gender_source,
            "words": m.word_count,
            "sentences": m.sentence_count,
            "success": (m.success_reason or "passed") if run.success_filter else "not filtered",
            "or_orientation": run.or_orientation,
        }
        if run.nli_path:
            row["hallucination_share"] = "" if m.hallucination_share is None else m.hallucination_share
        for c in categories:
            n = m.category_counts.get(str(c.pk))
            row[f"{c.lexicon.name} v{c.lexicon.version}: {c.key}"] = "" if n is None else n
        if run.classifier:
            for label in labels:
                row[f"share_{label}"] = m.label_shares.get(label, "")
            row["doc_label"], row["doc_score"], row["mean_score"] = m.doc_label, m.doc_score, m.mean_score
        yield row


def success_counts(run: MeasureRun) -> list[Row]:
    """The success filter's counts per model and subject gender: passed, failed and failed by reason."""

    table: dict[tuple[str, str], dict[str, int]] = {}
    qs = (
        OutputMeasure.objects.filter(run=run)
        .values("output__model_name", "gender", "success_reason")
        .annotate(n=Count("id"))
        .order_by()
    )
    for row in qs:
        entry = table.setdefault(
            (row["output__model_name"] or "", row["gender"] or ""),
            {"passed": 0, "failed": 0, **dict.fromkeys(REASONS, 0)},
        )
        reason = row["success_reason"]
        entry["passed" if not reason else "failed"] += row["n"]
        if reason:
            entry[reason] = entry.get(reason, 0) + row["n"]
    return [{"model": m, "gender": g, **entry} for (m, g), entry in sorted(table.items())]


def packed_sentences(measures: QuerySet[OutputMeasure]) -> Iterator[tuple[OutputMeasure, str, SentenceRow]]:
    """(output measure, its output's text, SentenceRow) for each stored sentence of these output measures, in the
    queryset's order (measures without sentence rows are skipped)."""
    measures = measures.exclude(sentences_packed=b"").select_related("output")
    for om in measures.iterator(chunk_size=500):
        text = om.output.text
        for s in om.sentence_rows():
            yield om, text, s


def sentence_record(om: OutputMeasure, text: str, s: SentenceRow, classifier_info: Mapping[str, Any]) -> Row:
    """One sentence row of packed_sentences() as the sentence tables show it (the run's column is the caller's)."""
    return {
        "output_id": om.output_id,
        "gender": om.gender,
        "sentence": s.index,
        "start": s.start,
        "end": s.end,
        "text": text[s.start : s.end],
        "label": s.label,
        "score": s.score,
        "classifier": classifier_info.get("model_id", ""),
        "revision": classifier_info.get("revision", ""),
    }


def sentence_rows(run: MeasureRun) -> Iterator[Row]:
    info = run.classifier_info or {}
    for om, text, s in packed_sentences(OutputMeasure.objects.filter(run=run).order_by("output_id")):
        yield {"measure_run": run.pk, **sentence_record(om, text, s, info)}


def study_measure_runs(study: Study | int) -> QuerySet[MeasureRun]:
    """The study's measure runs, newest first (a queryset to narrow)."""
    return MeasureRun.objects.filter(study=study).order_by("-pk")


def study_trained_classifiers(study: Study) -> QuerySet[TrainedClassifier]:
    """The study's trained classifiers by name and version (a queryset to narrow)."""
    return TrainedClassifier.objects.filter(study=study).order_by("name", "version")


def measure_run_in_study(study: Study | int, run_id: int) -> MeasureRun | None:
    """The study's measure run `run_id`, or None."""
    return MeasureRun.objects.filter(study=study, pk=run_id).first()


def measure_run_named(study: Study | int, name: str) -> MeasureRun | None:
    """The study's first measure run called `name`, or None."""
    return MeasureRun.objects.filter(study=study, name=name).order_by("pk").first()


def latest_lexicon(study: Study | int, name: str) -> Lexicon | None:
    """The newest version of the study's lexicon `name`, or None."""
    return Lexicon.objects.filter(study=study, name=name).order_by("-version").first()


def library_lexicons() -> QuerySet[Lexicon]:
    """Lexicons of the built-in library."""
    return Lexicon.objects.filter(study__is_library=True)
