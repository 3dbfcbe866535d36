"""Rating tables for agreement, built from the platform's data (reads only).

A table is a RatingMatrix (stereoscope.stats.agreement) over units = outputs (stories), for one *target*:

- ``code:<id>``      document level: 1 if the coder applied the code (after merges), 0 if the coder coded the story
                     (assignment done or any coding in the codebook) but not that code, missing otherwise;
- ``dimension:<id>`` the same for any code under a dimension (a top-level, non-codable code);
- ``stereotype``     the story's target stereotype (its prompt item): judge verdicts, human verification answers,
                     and coders (1 if they applied a code linked to the story's prompt item).

Rater keys: ``coder:<user id>``, ``judge:<model identity>``, ``check:<user id>`` and ``gold``.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model

from annotation import selectors
from annotation.selectors import codebook_assignments, codebook_codes, codebook_codings
from generation.selectors import outputs_by_id
from judging.selectors import rounds_with_ok_verdicts, study_human_checks, study_rounds, study_verdicts
from stereoscope.stats import agreement as ag
from stereoscope.untrusted import whole_number

from .models import GoldLabel

GOLD = "gold"
BINARY = [0, 1]


class AgreementRequestError(ValueError):
    """A table request names something that does not exist or does not fit (message says what)."""


@dataclass
class Table:
    target: str
    title: str
    matrix: ag.RatingMatrix
    rater_labels: dict
    unit_labels: dict = field(default_factory=dict)
    level: str = "nominal"
    notes: list = field(default_factory=list)

    def label(self, rater_key: str) -> str:
        return self.rater_labels.get(rater_key, rater_key)

    def long_rows(self) -> Iterator[tuple[Any, Any, ag.Category]]:
        """(unit, rater, value) for every cell with a rating; what the CLI reads back."""
        rm = self.matrix
        for u, unit in enumerate(rm.units):
            for r, rater in enumerate(rm.raters):
                code = rm.codes[r, u]
                if code >= 0:
                    yield unit, rater, rm.categories[code]


# ------------------------------------------------------------------------------------------- codebook index
class CodebookIndex:
    """Codes of one codebook: merges resolved to the surviving code, each code's dimension, item links."""

    def __init__(self, codebook: Any) -> None:

        self.codebook = codebook
        rows = list(
            codebook_codes(codebook).values(
                "id",
                "parent_id",
                "name",
                "codable",
                "active",
                "merged_into_id",
                "item_id",
                "stereotype",
                "order",
                "gender_tag",
                "variable_scope",
            )
        )
        self.codes = {row["id"]: row for row in rows}
        self.resolved = {cid: self._resolve(cid) for cid in self.codes}
        self.dimension_of = {cid: self._dimension(cid) for cid in self.codes}

    def _resolve(self, cid):
        seen = set()
        while self.codes[cid]["merged_into_id"] and cid not in seen and self.codes[cid]["merged_into_id"] in self.codes:
            seen.add(cid)
            cid = self.codes[cid]["merged_into_id"]
        return cid

    def _dimension(self, cid):
        seen, node = set(), cid
        while self.codes[node]["parent_id"] and node not in seen and self.codes[node]["parent_id"] in self.codes:
            seen.add(node)
            node = self.codes[node]["parent_id"]
        root = self.codes[node]
        return node if (not root["codable"] and root["parent_id"] is None) else None

    def path(self, cid: int) -> str:
        parts, seen, node = [], set(), cid
        while node and node not in seen and node in self.codes:
            seen.add(node)
            parts.append(self.codes[node]["name"])
            node = self.codes[node]["parent_id"]
        return "/".join(reversed(parts))

    def is_variable(self, cid: int) -> bool:
        """A categorical variable (a group with a scope) or one of its values: agreement on it is the variable's
        (agreement.variables), not a code's 1/0 table."""
        row = self.codes[cid]
        if row["variable_scope"] and not row["codable"]:
            return True
        parent = self.codes.get(row["parent_id"])
        return bool(parent and parent["variable_scope"] and not parent["codable"])

    def codable_codes(self) -> list[int]:
        """Active codable codes in tree order."""
        return [cid for cid in self._tree_order() if self.codes[cid]["codable"] and self.codes[cid]["active"]]

    def dimensions(self) -> list[int]:
        return [
            cid for cid in self._tree_order() if self.codes[cid]["parent_id"] is None and not self.codes[cid]["codable"]
        ]

    def _tree_order(self):
        children = defaultdict(list)
        for cid, row in self.codes.items():
            children[row["parent_id"]].append(cid)
        for kids in children.values():
            kids.sort(key=lambda c: (self.codes[c]["order"], c))
        out, stack = [], list(reversed(children[None]))
        while stack:
            cid = stack.pop()
            out.append(cid)
            stack.extend(reversed(children.get(cid, [])))
        return out


def study_codebooks(study):

    return selectors.study_codebooks(study)


def default_codebook(study: Any, codebook_id: Any = None) -> Any:
    """The requested codebook of the study, or the one with the most codings."""

    if codebook_id:
        codebook = selectors.codebook_in_study(study, codebook_id)
        if codebook is None:
            raise AgreementRequestError(f"No codebook {codebook_id} in this study.")
        return codebook
    return selectors.most_coded_codebook(study)


# --------------------------------------------------------------------------------------------- coder data
class CodingData:
    """All codings and coded stories of one codebook, loaded once, as arrays."""

    def __init__(self, study: Any, codebook: Any, coder_ids: Iterable[int] | None = None) -> None:

        self.study, self.codebook = study, codebook
        self.index = CodebookIndex(codebook)
        codings = codebook_codings(codebook, coder_ids)
        done = codebook_assignments(codebook, status="done", coder_ids=coder_ids)
        rows = list(codings.order_by().values_list("output_id", "code_id", "coder_id", "start", "end"))
        done_rows = list(done.order_by().values_list("output_id", "coder_id"))
        n = len(rows)
        r_out = np.fromiter((r[0] for r in rows), dtype=np.int64, count=n)
        r_code = np.fromiter((r[1] for r in rows), dtype=np.int64, count=n)
        r_coder = np.fromiter((r[2] for r in rows), dtype=np.int64, count=n)
        d_out = np.fromiter((r[0] for r in done_rows), dtype=np.int64, count=len(done_rows))
        d_coder = np.fromiter((r[1] for r in done_rows), dtype=np.int64, count=len(done_rows))
        coder_set = set(np.unique(np.concatenate([r_coder, d_coder])).tolist())
        if coder_ids is not None:
            coder_set |= set(coder_ids)
        self.usernames = dict(get_user_model().objects.filter(pk__in=coder_set).values_list("pk", "username"))
        self.coders = sorted(coder_set, key=lambda pk: (self.usernames.get(pk, ""), pk))
        coder_arr = np.array(self.coders, dtype=np.int64)
        coder_order = np.argsort(coder_arr)
        outputs = np.unique(np.concatenate([r_out, d_out]))
        self.outputs = outputs.tolist()

        def coder_index(ids):
            return coder_order[np.searchsorted(coder_arr[coder_order], ids)] if len(ids) else ids

        self.c_out = np.searchsorted(outputs, r_out)
        self.c_coder = coder_index(r_coder)
        self.coded = np.zeros((len(self.coders), len(outputs)), dtype=bool)
        self.coded[self.c_coder, self.c_out] = True
        self.coded[coder_index(d_coder), np.searchsorted(outputs, d_out)] = True
        resolved, dim = self.index.resolved, self.index.dimension_of
        ids = np.array(sorted(self.index.codes), dtype=np.int64)
        surviving = np.array([resolved[c] for c in ids.tolist()], dtype=np.int64)
        dims = np.array([dim.get(c) or 0 for c in surviving.tolist()], dtype=np.int64)
        pos = np.searchsorted(ids, r_code) if len(ids) else np.zeros(n, dtype=np.int64)
        self.c_code = surviving[pos] if len(ids) else r_code
        self.c_dim = dims[pos] if len(ids) else np.zeros(n, dtype=np.int64)
        self.spans = rows

    def spans_by_code(self):
        """{code: {coder: [(output, start, end)]}} for span codings, merges resolved (built once)."""
        if not hasattr(self, "_spans_by_code"):
            grouped = defaultdict(lambda: defaultdict(list))
            resolved = self.index.resolved
            for out, code, coder, start, end in self.spans:
                if start is not None and end is not None:
                    grouped[resolved.get(code, code)][coder].append((out, start, end))
            self._spans_by_code = grouped
        return self._spans_by_code

    def rater_key(self, coder_pk):
        return f"coder:{coder_pk}"

    def rater_labels(self) -> dict[str, str]:
        return {self.rater_key(pk): self.usernames.get(pk, f"user {pk}") for pk in self.coders}

    def binary_matrix(self, applied_mask) -> ag.RatingMatrix:
        """Coders × coded outputs; 1 where a coding in `applied_mask` exists, 0 where coded, -1 otherwise."""
        codes = np.where(self.coded, 0, -1).astype(np.int64)
        codes[self.c_coder[applied_mask], self.c_out[applied_mask]] = 1
        rated = (codes >= 0).any(axis=0)
        keep = np.nonzero(rated)[0]
        return ag.RatingMatrix(
            units=[self.outputs[i] for i in keep],
            raters=[self.rater_key(pk) for pk in self.coders],
            codes=codes[:, keep],
            categories=list(BINARY),
            level="nominal",
        )

    def code_matrix(self, code_id: int) -> ag.RatingMatrix:
        return self.binary_matrix(self.c_code == code_id)

    def dimension_matrix(self, dimension_id: int) -> ag.RatingMatrix:
        return self.binary_matrix(self.c_dim == dimension_id)


def output_labels(output_ids: Iterable[int]) -> dict[int, str]:

    labels = {}
    for pk, number, model, trial in outputs_by_id(output_ids).values_list("pk", "item__number", "model_name", "trial"):
        item = f"item {number}" if number is not None else "no item"
        labels[pk] = f"#{pk} · {item} · {model} · trial {trial}"
    return labels


# ----------------------------------------------------------------------------------------- gold and judges
def gold_values(study, target):

    return dict(GoldLabel.objects.filter(study=study, target=target).values_list("output_id", "value"))


def add_rater(rm: ag.RatingMatrix, key, values: dict) -> ag.RatingMatrix:
    """A new rater row from {unit: value}; units it rates that the table lacks are added."""
    units = list(rm.units)
    positions = {u: i for i, u in enumerate(units)}
    extra = [u for u in values if u not in positions]
    for u in extra:
        positions[u] = len(units)
        units.append(u)
    categories = sorted(set(rm.categories) | {v for v in values.values() if v is not None})
    remap = np.array([categories.index(c) for c in rm.categories], dtype=np.int64)
    codes = np.full((len(rm.raters) + 1, len(units)), -1, dtype=np.int64)
    old = rm.codes
    codes[:-1, : old.shape[1]] = np.where(old >= 0, remap[np.maximum(old, 0)] if len(remap) else -1, -1)
    cat_pos = {c: i for i, c in enumerate(categories)}
    for u, v in values.items():
        if v is not None:
            codes[-1, positions[u]] = cat_pos[v]
    return ag.RatingMatrix(
        units=units, raters=list(rm.raters) + [key], codes=codes, categories=categories, level=rm.level
    )


def default_rounds(study):
    """Rounds that share the scale of the newest round with verdicts; binary and Likert verdicts do not mix."""

    rounds = rounds_with_ok_verdicts(study)
    if not rounds:
        return None, ""
    scale = rounds[0][1:3]
    chosen = [r for r in rounds if r[1:3] == scale]
    if len(chosen) == len(rounds):
        return None, ""
    return [r[0] for r in chosen], (
        f"Judge rounds on the {scale[0]}-{scale[1]} scale of the newest round ({', '.join(r[3] for r in chosen)}); "
        "choose rounds to compare the others."
    )


def stereotype_table(
    study: Any,
    *,
    codebook: Any = None,
    round_ids: Any = None,
    include_coders: bool = True,
    include_gold: bool = True,
    data: CodingData | None = None,
) -> Table:
    """Per story and target stereotype: judges, human checks, coders (item-linked codes) and gold as raters."""

    notes = []
    if round_ids:
        found = {r.pk for r in study_rounds(study, round_ids)}
        missing = sorted(set(round_ids) - found)
        if missing:
            raise AgreementRequestError(f"No judge round {', '.join(map(str, missing))} in this study.")
    else:
        round_ids, note = default_rounds(study)
        if note:
            notes.append(note)
    verdicts = study_verdicts(study, round_ids)
    cells: dict = {}
    labels: dict = {}
    scale = set()
    for out, judge, value, _round in verdicts.order_by("round__created_at", "round_id").values_list(
        "output_id", "judge_model", "value", "round_id"
    ):
        key = f"judge:{judge}"
        labels[key] = judge
        cells[(key, out)] = value  # a later round overrides an earlier one for the same judge and story
        scale.add(value)
    checks = study_human_checks(study, round_ids)
    usernames = {}
    for out, user, username, value in checks.order_by("created_at", "id").values_list(
        "verdict__output_id", "user_id", "user__username", "value"
    ):
        key = f"check:{user}"
        labels[key] = f"{username} (check)"
        cells[(key, out)] = value
        usernames[user] = username
        scale.add(value)
    if include_coders and codebook is not None and scale - set(BINARY):
        notes.append("coders are not in this table: they code 0/1 while these judges rate on a wider scale")
    elif include_coders and codebook is not None:
        data = data if data is not None and data.codebook == codebook else CodingData(study, codebook)
        linked = {cid for cid, row in data.index.codes.items() if row["item_id"]}
        if linked:
            item_of = dict(outputs_by_id(data.outputs).values_list("pk", "item_id"))
            code_item = np.array(
                [data.index.codes.get(c, {}).get("item_id") or -1 for c in data.c_code], dtype=np.int64
            )
            out_item = (
                np.array([item_of.get(data.outputs[i]) or -2 for i in data.c_out], dtype=np.int64)
                if len(data.c_out)
                else np.zeros(0, dtype=np.int64)
            )
            mask = code_item == out_item
            rm = data.binary_matrix(mask)
            for r, key in enumerate(rm.raters):
                for u, out in enumerate(rm.units):
                    if rm.codes[r, u] >= 0 and item_of.get(out):
                        cells[(key, out)] = rm.categories[rm.codes[r, u]]
            labels.update(data.rater_labels())
            scale.update(BINARY)
        else:
            notes.append("coders are not in this table: no code of the codebook is linked to a prompt item")
    if include_gold:
        for out, value in gold_values(study, "stereotype").items():
            cells[(GOLD, out)] = value
            labels[GOLD] = "gold"
    raters = sorted({k for k, _ in cells}, key=lambda k: (k.split(":")[0] != "judge", k == GOLD, labels.get(k, k)))
    units = sorted({u for _, u in cells})
    rm = ag.from_long(((u, k, v) for (k, u), v in cells.items()), "nominal", units=units, raters=raters)
    level = "ordinal" if len(scale - set(BINARY)) else "nominal"
    rm.level = level
    return Table(
        target="stereotype",
        title="Judge verdicts per story and target stereotype",
        matrix=rm,
        rater_labels=labels,
        level=level,
        notes=notes,
    )


# ------------------------------------------------------------------------------------------------ tables
def parse_target(target: str) -> tuple[str, int | None]:
    target = (target or "").strip()
    if target == "stereotype":
        return "stereotype", None
    kind, _, ident = target.partition(":")
    number = whole_number(ident)
    if kind in ("code", "dimension") and number is not None:
        return kind, number
    raise AgreementRequestError(f"Unknown target {target!r}: use code:<id>, dimension:<id> or stereotype.")


def select_raters(table: Table, rater_keys) -> Table:
    if not rater_keys:
        return table
    rm = table.matrix
    unknown = [k for k in rater_keys if k not in rm.raters]
    if unknown:
        available = ", ".join(rm.raters) or "none"
        raise AgreementRequestError(f"Unknown rater(s) {', '.join(unknown)} for this table; available: {available}.")
    idx = [rm.raters.index(k) for k in dict.fromkeys(rater_keys)]
    sub = rm.subset(rater_indices=idx)
    keep = np.nonzero((sub.codes >= 0).any(axis=0))[0]
    table.matrix = sub.subset(unit_indices=keep)
    return table


def build_table(
    study: Any,
    target: str,
    *,
    codebook: Any = None,
    raters: list[str] | None = None,
    round_ids: Any = None,
    include_gold: bool = True,
    data: CodingData | None = None,
) -> Table:
    kind, ident = parse_target(target)
    if kind == "stereotype":
        table = stereotype_table(study, codebook=codebook, round_ids=round_ids, include_gold=include_gold)
        return select_raters(table, raters)
    if codebook is None:
        raise AgreementRequestError("This study has no codebook yet.")
    data = data or CodingData(study, codebook)
    row = data.index.codes.get(ident)
    if row is None:
        raise AgreementRequestError(f"No {kind} {ident} in codebook {codebook}.")
    if kind == "code":
        if not row["codable"]:
            raise AgreementRequestError(
                f"“{row['name']}” is a group or dimension, not a codable code; use dimension:{ident}."
            )
        ident = data.index.resolved[ident]
        rm = data.code_matrix(ident)
        title = f"Code {data.index.path(ident)}"
    else:
        if data.index.dimension_of.get(ident) != ident:
            raise AgreementRequestError(f"“{row['name']}” is not a dimension (a top-level group code).")
        rm = data.dimension_matrix(ident)
        title = f"Dimension {row['name']}"
    labels = data.rater_labels()
    table = Table(target=f"{kind}:{ident}", title=title, matrix=rm, rater_labels=labels)
    if include_gold:
        gold = gold_values(study, table.target)
        if gold:
            table.matrix = add_rater(rm, GOLD, gold)
            table.rater_labels[GOLD] = "gold"
    return select_raters(table, raters)


def segment_report(data: CodingData, code_id: int, min_overlap: float = 0.9) -> dict[str, Any]:
    """Span codings of one code: pairwise MAXQDA-style matching between coders; the share of matched segments."""
    spans_by_coder = data.spans_by_code().get(code_id, {})
    pairs, matched, total = [], 0, 0
    coders = [c for c in data.coders if c in spans_by_coder]
    for i, a in enumerate(coders):
        for b in coders[i + 1 :]:
            res = ag.segment_agreement(spans_by_coder[a], spans_by_coder[b], min_overlap)
            res.update(rater_a=data.usernames.get(a, a), rater_b=data.usernames.get(b, b))
            pairs.append(res)
            matched += res["matched_a"] + res["matched_b"]
            total += res["n_a"] + res["n_b"]
    return {
        "segments": sum(len(v) for v in spans_by_coder.values()),
        "pairs": pairs,
        "share_matched": (matched / total) if total else None,
    }
