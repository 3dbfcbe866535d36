"""Contrasts on a categorical variable's labels: counts by subject gender (or context type, or model) with χ², df
and Cramér's V, from human gold labels or from one judge. (Classifier labels: measures.classifiers.)"""

from __future__ import annotations

from annotation.selectors import gender_answers
from generation.selectors import outputs_by_id
from generation.subject_gender import resolve
from stereoscope.stats import categorical as cs

from . import variables
from .rating_tables import AgreementRequestError

GROUPINGS = ("gender", "context", "model")


def output_groups(output_ids, by):
    """{output id: group}: the subject's gender (slots, then coders, then pronouns), the context type (a 'context'
    slot, else the prompt's dimension) or the writing model."""

    outputs = outputs_by_id(output_ids).select_related("item__dimension")
    if by == "gender":
        answers = gender_answers(output_ids)
        return {o.pk: resolve(o.slot_values, answers.get(o.pk, ()), o.text)[0] for o in outputs}
    if by == "context":

        def context(o):
            slots = {str(k).lower(): v for k, v in (o.slot_values or {}).items()}
            if slots.get("context"):
                return str(slots["context"])
            return o.item.dimension.name if o.item_id and o.item.dimension_id else ""

        return {o.pk: context(o) for o in outputs}
    if by == "model":
        return {o.pk: o.model_name for o in outputs}
    raise AgreementRequestError(f"Group by one of {', '.join(GROUPINGS)}.")


def _unit_groups(labels, by):
    """{unit: group}: a span unit takes its story's group."""
    stories = output_groups({variables.unit_output(u) for u in labels}, by)
    return {u: stories.get(variables.unit_output(u)) for u in labels}


def label_contrast(study, variable, *, source="gold", by="gender", round_ids=None, report=None, **unit_options) -> dict:
    """source: "gold" (coders' majority, adjudication winning) or "judge:<model>". One count per unit: a story, or
    a sentence / segment of a span-level variable (grouped by its story); unit_options as variable_report's.
    `report`: the variable's report when the caller has it already (round_ids and unit_options are then its own)."""
    if by not in GROUPINGS:
        raise AgreementRequestError(f"Group by one of {', '.join(GROUPINGS)}.")
    report = report or variables.variable_report(study, variable, round_ids=round_ids, **unit_options)
    if source == "gold":
        labels = {variables.gold_key(g): g["gold"] for g in report["gold"] if g["gold"]}
    elif source.startswith("judge:"):
        labels = {u: v for u, r, v in report["ratings"] if r == source}
        if not labels:
            raise AgreementRequestError(f"No labels from {source} on this variable.")
    else:
        raise AgreementRequestError("source must be gold or judge:<model>.")
    groups = _unit_groups(labels, by)
    order = ["F", "M"] if by == "gender" else None
    result = cs.contrast([(groups.get(u), v) for u, v in labels.items()], labels=report["values"], groups=order)
    unknown = sum(1 for u in labels if not groups.get(u))
    if unknown:
        result.notes.append(f"{unknown} unit(s) without a {by} left out")
    return {
        "variable": variable,
        "source": source,
        "by": by,
        "contrast": result,
        "n_excluded": report["n_excluded"],
        "n_unknown": unknown,
    }


def counts_by_model(study, variable, *, source="gold", round_ids=None, report=None, **unit_options) -> dict:
    """Fang's layout: one row per value, one column per model (in order of the first story), and a total column;
    from the gold labels (the variable's gold rule; one coder's labels only with gold_min_raters 1) or from one
    judge. Counts units: stories, or sentences / segments of a span-level variable. `report` as label_contrast's."""
    report = report or variables.variable_report(study, variable, round_ids=round_ids, **unit_options)
    if source == "gold":
        labels = {variables.gold_key(g): g["gold"] for g in report["gold"] if g["gold"]}
    else:
        labels = {u: v for u, r, v in report["ratings"] if r == source}
    models = _unit_groups(labels, "model")
    order = list(dict.fromkeys(models[u] for u in sorted(labels, key=variables.unit_sort_key)))
    rows = []
    for value in report["values"]:
        counts = [sum(1 for u, v in labels.items() if v == value and models[u] == m) for m in order]
        rows.append({"value": value, "counts": counts, "total": sum(counts)})
    totals = [sum(row["counts"][i] for row in rows) for i in range(len(order))]
    return {
        "variable": variable,
        "source": source,
        "models": order,
        "rows": rows,
        "totals": totals,
        "n": sum(totals),
        "n_ties": report["n_ties"],
        "n_excluded": report["n_excluded"],
        "unit_noun": report["unit_noun"],
    }
