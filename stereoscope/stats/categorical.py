"""Categorical variables: dropping excluded units, full agreement, majority labels, label × group contrasts.
No Django imports. Ratings are (unit, rater, label) triples; labels are strings."""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Collection, Hashable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import TypeVar, cast

import numpy as np

Rater = Hashable  # a coder's id or a judge's name
Label = str
U = TypeVar("U", bound=Hashable)  # a unit: an output's pk, a sentence index, a (start, end) segment
Span = tuple[Rater, int, int, Label]  # (rater, start, end, label)


def drop_excluded(
    ratings: Collection[tuple[U, Rater, Label]], exclude_labels: Iterable[Label] | None
) -> tuple[list[tuple[U, Rater, Label]], list[U]]:
    """(kept ratings, sorted excluded units): a unit is dropped when any rater chose an exclude label."""
    exclude_labels = set(exclude_labels or ())
    excluded = {unit for unit, _rater, label in ratings if label in exclude_labels}
    kept = [(u, r, v) for u, r, v in ratings if u not in excluded]
    try:
        return kept, sorted(excluded)  # type: ignore[type-var]  # one study's units compare; mixed ones: below
    except TypeError:  # mixed unit types
        return kept, sorted(excluded, key=str)


def by_unit(ratings: Iterable[tuple[U, Rater, Label]]) -> defaultdict[U, dict[Rater, Label]]:
    """{unit: {rater: label}} keeping the order units first appear."""
    out: defaultdict[U, dict[Rater, Label]] = defaultdict(dict)
    for unit, rater, label in ratings:
        out[unit][rater] = label
    return out


def full_agreement_share(ratings: Iterable[tuple[Hashable, Rater, Label]]) -> tuple[float | None, int]:
    """(share, n): among units with two or more ratings, the share on which every rater gave the same label."""
    units = [labels for labels in by_unit(ratings).values() if len(labels) >= 2]
    if not units:
        return None, 0
    full = sum(1 for labels in units if len(set(labels.values())) == 1)
    return full / len(units), len(units)


GOLD_RULES = {
    "majority": "strict majority: more than half of the unit's raters chose the label",
    "plurality": "plurality: the most frequent label, if no other label is as frequent",
}
DEFAULT_GOLD_RULE = "majority"
DEFAULT_MIN_RATERS = 2


@dataclass
class Majority:
    unit: object
    label: str | None
    tie: bool
    n_ratings: int
    counts: dict[Label, int] = field(default_factory=dict)
    share: float | None = None  # the share of the unit's raters who chose the most frequent label
    reason: str = ""  # why there is no label: "tie", no strict majority, too few raters


def majority_labels(
    ratings: Iterable[tuple[Hashable, Rater, Label]],
    order: Iterable[Label] | None = None,
    rule: str = DEFAULT_GOLD_RULE,
    min_raters: int = DEFAULT_MIN_RATERS,
) -> list[Majority]:
    """One Majority per unit. rule "majority" (default): the label more than half of the raters chose; "plurality":
    the most frequent label. A tie at the top gives label None and tie=True (flagged for adjudication); so does a
    unit without a strict majority (reason says so) or with fewer than `min_raters` raters. `order` sorts the
    counts shown."""
    if rule not in GOLD_RULES:
        raise ValueError(f"Unknown gold rule {rule!r}; choose {' or '.join(GOLD_RULES)}.")
    min_raters = max(1, int(min_raters))
    rank = {label: i for i, label in enumerate(order or [])}
    result: list[Majority] = []
    for unit, labels in by_unit(ratings).items():
        counts = Counter(labels.values())
        top = max(counts.values())
        n = len(labels)
        leaders = [label for label, k in counts.items() if k == top]
        shown = dict(sorted(counts.items(), key=lambda kv: (rank.get(kv[0], len(rank)), str(kv[0]))))
        label, reason = (leaders[0], "") if len(leaders) == 1 else (None, "tie")
        if label is not None and rule == "majority" and top * 2 <= n:
            label, reason = None, f"no strict majority ({top} of {n})"
        if n < min_raters:
            label, reason = None, f"fewer than {min_raters} raters ({n})"
        result.append(Majority(unit, label, len(leaders) > 1, n, shown, top / n, reason))
    return result


@dataclass
class Contrast:
    labels: list[Label]
    groups: list[str]
    table: list[list[int]]  # rows = groups, columns = labels
    n: int
    chi2: float | None = None
    df: int | None = None
    p_value: float | None = None
    cramers_v: float | None = None
    notes: list[str] = field(default_factory=list)


def contrast(
    pairs: Iterable[tuple[str | None, Label | None]],
    labels: Iterable[Label] | None = None,
    groups: Iterable[str] | None = None,
) -> Contrast:
    """Label counts by group with Pearson's χ² (no continuity correction), df and Cramér's V.
    pairs: (group, label) per unit. Labels or groups nobody has are left out of the test (and noted)."""
    # with None and "" dropped, both sides are strings
    pairs = cast("list[tuple[str, Label]]", [(g, v) for g, v in pairs if g not in (None, "") and v not in (None, "")])
    labels = list(labels) if labels else sorted({v for _, v in pairs})
    groups = list(groups) if groups else sorted({g for g, _ in pairs})
    li, gi = {v: i for i, v in enumerate(labels)}, {g: i for i, g in enumerate(groups)}
    table = np.zeros((len(groups), len(labels)), dtype=np.int64)
    for g, v in pairs:
        if g in gi and v in li:
            table[gi[g], li[v]] += 1
    result = Contrast(labels=labels, groups=groups, table=table.tolist(), n=int(table.sum()))
    rows, cols = table.sum(axis=1) > 0, table.sum(axis=0) > 0
    empty = [labels[i] for i in np.nonzero(~cols)[0]] + [groups[i] for i in np.nonzero(~rows)[0]]
    if empty:
        result.notes.append(f"left out of the test (no units): {', '.join(map(str, empty))}")
    used = table[rows][:, cols]
    if used.shape[0] < 2 or used.shape[1] < 2:
        result.notes.append("χ² is undefined: it needs at least two groups and two labels with units")
        return result
    from scipy.stats import chi2_contingency

    stat, p, df, expected = chi2_contingency(used, correction=False)
    result.chi2, result.p_value, result.df = float(stat), float(p), int(df)
    k = min(used.shape) - 1
    result.cramers_v = float(np.sqrt(stat / (used.sum() * k)))
    if (expected < 5).any():
        result.notes.append(f"{int((expected < 5).sum())} of {expected.size} expected counts are below 5")
    return result


# --- span-level variables: units from spans ------------------------------------------------------------------------

MIN_COVER = 0.5


def covers(span_start: float, span_end: float, start: float, end: float, min_cover: float = MIN_COVER) -> bool:
    """A span labels a sentence when they overlap by at least `min_cover` of the shorter of the two: a selected
    sentence, a sloppy selection of it, a phrase inside it and a run of sentences all count; a few characters
    spilling into the next sentence do not."""
    inter = min(span_end, end) - max(span_start, start)
    shorter = min(span_end - span_start, end - start)
    return inter > 0 and shorter > 0 and inter >= min_cover * shorter - 1e-12


def sentence_ratings(
    sentences: Sequence[tuple[int, int]], spans: Iterable[Span], min_cover: float = MIN_COVER
) -> tuple[list[tuple[int, Rater, Label]], int]:
    """Each rater's label per sentence. sentences: [(start, end)] in text order; spans: [(rater, start, end, label)]
    in the order they were made. Returns ([(sentence index, rater, label)] in sentence order, n_replaced): a rater's
    later span wins on a sentence they had already labelled (n_replaced counts those, when the label differs)."""
    labels: dict[tuple[int, Rater], Label] = {}
    replaced = 0
    for rater, s_start, s_end, label in spans:
        for index, (start, end) in enumerate(sentences):
            if start >= s_end:
                break
            if covers(s_start, s_end, start, end, min_cover):
                key = (index, rater)
                if key in labels and labels[key] != label:
                    replaced += 1
                labels[key] = label
    return [(i, r, v) for (i, r), v in sorted(labels.items(), key=lambda kv: kv[0][0])], replaced


def segment_ratings(
    spans: Sequence[Span], min_overlap: float = 0.5
) -> tuple[list[tuple[tuple[int, int], Rater, Label]], int]:
    """Overlap-matched segments of one text. spans: [(rater, start, end, label)] in the order they were made. Spans
    overlapping by at least `min_overlap` (intersection / union, as the per-code segment matching) belong to one
    segment, transitively; a segment runs from its first start to its last end. Returns
    ([((start, end), rater, label)] by segment position, n_replaced): a rater's later span in a segment wins."""
    if not 0 < min_overlap <= 1:
        raise ValueError("The overlap share must be in (0, 1].")
    n = len(spans)
    parent = list(range(n))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for i in range(n):
        _, a_start, a_end, _ = spans[i]
        for j in range(i + 1, n):
            _, b_start, b_end, _ = spans[j]
            inter = min(a_end, b_end) - max(a_start, b_start)
            union = max(a_end, b_end) - min(a_start, b_start)
            if inter > 0 and union > 0 and inter / union >= min_overlap - 1e-12:
                parent[root(j)] = root(i)
    groups: defaultdict[int, list[int]] = defaultdict(list)
    for i in range(n):
        groups[root(i)].append(i)
    out: dict[tuple[tuple[int, int], Rater], Label] = {}
    replaced = 0
    for members in groups.values():
        extent = (min(spans[i][1] for i in members), max(spans[i][2] for i in members))
        for i in members:  # in the order made: a later span of the same rater wins
            rater, _, _, label = spans[i]
            key = (extent, rater)
            if key in out and out[key] != label:
                replaced += 1
            out[key] = label
    return [(seg, r, v) for (seg, r), v in sorted(out.items(), key=lambda kv: kv[0][0])], replaced
