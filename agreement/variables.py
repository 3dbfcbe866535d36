"""Agreement on categorical variables: coders and judges in one table, excluded units dropped and counted, majority
label as gold (ties flagged for adjudication, adjudicated gold wins), and the ratings behind every figure.

Units: a story-level variable's unit is the story (its id). A span-level variable's units are formed from the
coders' spans (see README, "Span-level units"):
- "sentence" (default): the story split by the product's sentence rule (stereoscope.stats.textproc); a span labels every
  sentence it overlaps by at least half of the shorter of the two; unit "<story>:s<n>" (n from 1).
- "segment": spans of different coders overlapping by at least `min_overlap` (intersection / union) are one unit,
  transitively; unit "<story>:<start>-<end>" (the segment's extent).
A coder's later span wins where two of theirs label the same unit. Judges answer per story, so they join sentence
units only on one-sentence stories (the story is then the sentence) and are left out of segment units."""

from __future__ import annotations

import re
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction

from annotation.selectors import study_variables, variable_codings, variable_span_codings, variable_values
from generation.selectors import output_texts, study_output
from judging.selectors import categorical_rounds, label_verdicts
from stereoscope.datasets import person
from stereoscope.services import record_activity
from stereoscope.stats import agreement as ag
from stereoscope.stats import categorical as cs
from stereoscope.stats.textproc import split_sentences
from stereoscope.untrusted import whole_number

from .models import GoldLabel
from .rating_tables import AgreementRequestError

LEVEL_COEFFICIENTS = ("krippendorff_alpha", "fleiss_kappa", "cohen_kappa_mean", "percent_agreement")
SPAN_UNITS = ("sentence", "segment")
DEFAULT_OVERLAP = 0.5
UNIT_NOUNS = {"story": ("story", "stories"), "sentence": ("sentence", "sentences"), "segment": ("segment", "segments")}
_SENTENCE_UNIT = re.compile(r"^s([1-9]\d*)$")
_SEGMENT_UNIT = re.compile(r"^(\d+)-(\d+)$")


def variable_target(variable: Any) -> str:
    return f"variable:{variable.pk}"


def get_variable(study, variable_id):

    for variable in study_variables(study):
        if str(variable.pk) == str(variable_id):
            return variable
    raise AgreementRequestError(f"No categorical variable {variable_id} in this study.")


def _judge_rounds(study, values, round_ids):
    """Categorical rounds whose labels are all values of the variable (case ignored), or the rounds asked for."""

    names = {v.lower() for v in values}
    chosen = []
    for rnd, labels in categorical_rounds(study):
        fits = {label.lower() for label in labels} <= names
        if round_ids:
            if rnd.pk in round_ids:
                if not fits:
                    raise AgreementRequestError(
                        f"The round “{rnd}” answers with labels that are not values of "
                        f"this variable: {', '.join(labels)}."
                    )
                chosen.append(rnd.pk)
        elif fits:
            chosen.append(rnd.pk)
    return chosen


def _judge_labels(study, values, round_ids):
    """(output id, judge:<model>, value name) from categorical rounds whose labels are values of the variable."""

    by_lower = {v.lower(): v for v in values}
    rounds = _judge_rounds(study, values, round_ids)
    found, seen = [], set()
    if rounds:
        for _round, out, model, label in label_verdicts(study, rounds):
            key = (out, f"judge:{model}")
            if key not in seen:  # a judge in two rounds: its first round's label counts
                seen.add(key)
                found.append((out, key[1], by_lower[label.lower()]))
    return found


def variable_ratings(study, variable, *, round_ids=None, include_judges=True):
    """(output id, rater key, value name) from coders (coder:<name>) and judges (judge:<model>), story-level."""

    values = [v.name for v in variable_values(variable)]
    ratings = [(out, f"coder:{coder}", value) for out, coder, value in variable_codings(variable)]
    if include_judges:
        ratings += _judge_labels(study, values, round_ids)
    return ratings, values


def check_span_options(span_units, min_overlap):
    """The unit options of a span-level variable, checked: (span_units, min_overlap as a float)."""
    span_units = span_units or "sentence"
    if span_units not in SPAN_UNITS:
        raise AgreementRequestError("Span units are sentence or segment.")
    try:
        min_overlap = float(DEFAULT_OVERLAP if min_overlap in (None, "") else min_overlap)
    except (TypeError, ValueError):
        raise AgreementRequestError("The overlap share must be a number between 0 (exclusive) and 1.") from None
    if not 0 < min_overlap <= 1:
        raise AgreementRequestError("The overlap share must be between 0 (exclusive) and 1.")
    return span_units, min_overlap


def unit_options(variable, span_units=None, min_overlap=None) -> dict:
    """Checked unit options for variable_report from request parameters ({} for story-level variables)."""
    if variable.variable_scope != "span":
        return {}
    span_units, min_overlap = check_span_options(span_units, min_overlap)
    return {"span_units": span_units, "min_overlap": min_overlap}


def unit_output(unit):
    """The story (output id) a unit belongs to: the unit itself for story-level variables."""
    return unit if isinstance(unit, int) else int(str(unit).split(":", 1)[0])


def span_ratings(
    study, variable, *, span_units="sentence", min_overlap=DEFAULT_OVERLAP, round_ids=None, include_judges=True
):
    """(ratings, values, unit info, notes) of a span-level variable: ratings are (unit name, rater, value) in unit
    order; unit info gives each unit's story, offsets, sentence number and text."""

    span_units, min_overlap = check_span_options(span_units, min_overlap)
    values = [v.name for v in variable_values(variable)]
    spans = {}
    for out, coder, start, end, value in variable_span_codings(variable):
        spans.setdefault(out, []).append((f"coder:{coder}", start, end, value))
    judged = {}
    if include_judges and span_units == "sentence":
        for out, judge, value in _judge_labels(study, values, round_ids):
            judged.setdefault(out, []).append((judge, value))
    outputs = sorted(set(spans) | set(judged))
    texts = output_texts(outputs, study=study)
    ratings, info, replaced, long_judged = [], {}, 0, 0
    for out in outputs:
        text = texts.get(out)
        if text is None:
            continue
        if span_units == "sentence":
            sentences = split_sentences(text)
            got, n = cs.sentence_ratings([(x.start, x.end) for x in sentences], spans.get(out, []))
            replaced += n
            for index, rater, value in got:
                name = f"{out}:s{index + 1}"
                ratings.append((name, rater, value))
                x = sentences[index]
                info.setdefault(
                    name, {"output_id": out, "sentence": index + 1, "start": x.start, "end": x.end, "text": x.text}
                )
            if out in judged:
                if len(sentences) == 1:
                    name = f"{out}:s1"
                    ratings += [(name, judge, value) for judge, value in judged[out]]
                    x = sentences[0]
                    info.setdefault(
                        name, {"output_id": out, "sentence": 1, "start": x.start, "end": x.end, "text": x.text}
                    )
                else:
                    long_judged += 1
        else:
            got, n = cs.segment_ratings(spans[out], min_overlap)
            replaced += n
            for (start, end), rater, value in got:
                name = f"{out}:{start}-{end}"
                ratings.append((name, rater, value))
                info.setdefault(
                    name, {"output_id": out, "sentence": None, "start": start, "end": end, "text": text[start:end]}
                )
    notes = []
    if replaced:
        notes.append(f"{replaced} unit label(s) replaced by the same coder's later span")
    if long_judged:
        notes.append(
            f"judges label whole stories: {long_judged} judged stor{'y' if long_judged == 1 else 'ies'} with more "
            "than one sentence left out of the sentence units"
        )
    if include_judges and span_units == "segment" and _judge_rounds(study, values, round_ids):
        notes.append("judges label whole stories and are left out of segment units")
    return ratings, values, info, notes


def _adjudications(study, variable, values):
    """{unit: {"value": value name, "decided_by": (pk, username) or None, "note", "updated_at"}} of the
    researchers' gold values (adjudications) for the variable."""

    target = variable_target(variable)
    fields = ("target", "output_id", "value", "decided_by_id", "decided_by__username", "note", "updated_at")
    found = {}
    if variable.variable_scope == "span":  # one row per unit: target variable:<id>:<unit within the story>
        rows = GoldLabel.objects.filter(study=study, target__startswith=f"{target}:").values_list(*fields)
    else:
        rows = GoldLabel.objects.filter(study=study, target=target).values_list(*fields)
    for t, out, v, user_pk, username, note, updated_at in rows:
        if not 0 <= v < len(values):
            continue
        unit = f"{out}:{t[len(target) + 1 :]}" if variable.variable_scope == "span" else out
        found[unit] = {
            "value": values[v],
            "decided_by": (user_pk, username) if user_pk else None,
            "note": note,
            "updated_at": updated_at,
        }
    return found


def unit_sort_key(unit):
    """Sort units naturally: story id, then sentence number or start offset."""
    if isinstance(unit, int):
        return (unit, 0, 0)
    out, _, rest = str(unit).partition(":")
    numbers = [int(n) for n in re.findall(r"\d+", rest)] + [0, 0]
    return (int(out), numbers[0], numbers[1])


def variable_report(
    study: Any,
    variable: Any,
    *,
    round_ids: Any = None,
    include_judges: bool = True,
    bootstrap: int = 0,
    seed: int = 0,
    span_units: str = "sentence",
    min_overlap: float = DEFAULT_OVERLAP,
) -> dict[str, Any]:
    """Everything the variable page, the API and the export show. span_units / min_overlap: how a span-level
    variable's units are formed (ignored for story-level variables)."""

    value_codes = variable_values(variable)
    if variable.variable_scope == "span":
        span_units, min_overlap = check_span_options(span_units, min_overlap)
        ratings, values, unit_info, notes = span_ratings(
            study,
            variable,
            span_units=span_units,
            min_overlap=min_overlap,
            round_ids=round_ids,
            include_judges=include_judges,
        )
        unit_kind = span_units
    else:
        ratings, values = variable_ratings(study, variable, round_ids=round_ids, include_judges=include_judges)
        unit_info, notes, unit_kind = None, [], "story"
    excluded_values = [v.name for v in value_codes if v.exclude_value]
    kept, excluded_units = cs.drop_excluded(ratings, excluded_values)
    excluded_units = sorted(excluded_units, key=unit_sort_key)
    kept_values = [v for v in values if v not in excluded_values]
    report = {
        "variable": variable,
        "unit_kind": unit_kind,
        "unit_singular": UNIT_NOUNS[unit_kind][0],
        "unit_noun": UNIT_NOUNS[unit_kind][1],
        "min_overlap": min_overlap if unit_kind == "segment" else None,
        "unit_info": unit_info,
        "values": kept_values,
        "exclude_values": excluded_values,
        "ordered": variable.variable_ordered,
        "n_units_rated": len({u for u, _, _ in ratings}),
        "n_excluded": len(excluded_units),
        "excluded_units": excluded_units,
        "n_units": len({u for u, _, _ in kept}),
        "raters": sorted({r for _, r, _ in kept}, key=lambda k: (not k.startswith("coder:"), k)),
        "ratings": kept,
        "levels": {},
        "bootstrap": bootstrap,
        "notes": list(notes),
    }
    share, n_pairable = cs.full_agreement_share(kept)
    report["full_agreement"], report["n_pairable"] = share, n_pairable
    report["matrix"] = None
    if kept:
        rm = ag.from_long(kept, level="nominal")
        report["matrix"] = rm
        report["levels"]["nominal"] = ag.agreement(rm, level="nominal", bootstrap=bootstrap, seed=seed)
        if variable.variable_ordered:
            position = {v: i + 1 for i, v in enumerate(kept_values)}
            ordinal = ag.from_long([(u, r, position[v]) for u, r, v in kept], level="ordinal")
            report["levels"]["ordinal"] = ag.agreement(ordinal, level="ordinal", bootstrap=bootstrap, seed=seed)
    else:
        report["notes"].append("no ratings yet (after dropping excluded units)")
    human = [row for row in kept if row[1].startswith("coder:")]
    report["adjudications"] = _adjudications(study, variable, values)
    adjudicated = {unit: a["value"] for unit, a in report["adjudications"].items()}
    gold = []
    rule = getattr(variable, "gold_rule", cs.DEFAULT_GOLD_RULE) or cs.DEFAULT_GOLD_RULE
    min_raters = getattr(variable, "gold_min_raters", cs.DEFAULT_MIN_RATERS) or cs.DEFAULT_MIN_RATERS
    report["gold_rule"] = {"rule": rule, "min_raters": min_raters, "text": cs.GOLD_RULES[rule]}
    for m in cs.majority_labels(human, order=kept_values, rule=rule, min_raters=min_raters):
        final = adjudicated.get(m.unit, m.label)
        row = {
            "output_id": unit_output(m.unit),
            "majority": m.label,
            "tie": m.tie,
            "undecided": m.label is None,
            "reason": m.reason,
            "n_ratings": m.n_ratings,
            "share": m.share,
            "counts": m.counts,
            "adjudicated": adjudicated.get(m.unit),
            "gold": final,
        }
        if unit_info is not None:
            where = unit_info[m.unit]
            row = {"unit": m.unit, **row, **{k: where[k] for k in ("sentence", "start", "end", "text")}}
        gold.append(row)
    report["gold"] = gold
    report["n_ties"] = sum(1 for g in gold if g["tie"] and g["adjudicated"] is None)
    report["n_undecided"] = sum(1 for g in gold if g["undecided"] and g["adjudicated"] is None)
    report["judge_vs_gold"] = judge_vs_gold(kept, gold, kept_values, variable.variable_ordered)
    return report


def judge_vs_gold(kept, gold, values, ordered):
    """Each LLM judge against the coders' gold label on the units both have: Krippendorff's α (nominal, and ordinal
    for an ordered variable), Cohen's κ and the share agreeing. [{judge, n, alpha_nominal, alpha_ordinal, kappa,
    agreement, note}]."""
    labels = {gold_key(g): g["gold"] for g in gold if g["gold"]}
    position = {v: i + 1 for i, v in enumerate(values)}
    judges = sorted({r for _, r, _ in kept if r.startswith("judge:")})
    rows = []
    for judge in judges:
        pairs = [(u, v) for u, r, v in kept if r == judge and u in labels]
        row = {"judge": judge.partition(":")[2], "n": len(pairs), "alpha_nominal": None, "alpha_ordinal": None}
        row.update(kappa=None, agreement=None, note="")
        if len(pairs) < 2:
            row["note"] = "Fewer than two units with both a judge label and a gold label."
            rows.append(row)
            continue
        long = [(u, "judge", v) for u, v in pairs] + [(u, "gold", labels[u]) for u, _ in pairs]
        nominal = ag.agreement(ag.from_long(long, level="nominal"), level="nominal", bootstrap=0, include_pairs=False)
        row.update(
            alpha_nominal=nominal.krippendorff_alpha,
            kappa=nominal.cohen_kappa_mean,
            agreement=nominal.percent_agreement,
            note="; ".join(nominal.notes),
        )
        if ordered:
            ranks = [(u, r, position[v]) for u, r, v in long]
            ordinal = ag.agreement(ag.from_long(ranks, level="ordinal"), level="ordinal", bootstrap=0)
            row["alpha_ordinal"] = ordinal.krippendorff_alpha
        rows.append(row)
    return rows


def gold_key(row):
    """The unit of a gold row: the story id (story-level) or the unit name (span-level)."""
    return row.get("unit", row["output_id"])


def gold_labels(study, variable, **kwargs) -> dict:
    """{unit: gold value} (majority of coders, adjudication winning; open ties left out). Units are story ids for
    story-level variables and unit names ("<story>:s<n>", "<story>:<start>-<end>") for span-level ones."""
    return {gold_key(g): g["gold"] for g in variable_report(study, variable, **kwargs)["gold"] if g["gold"]}


def gold_examples(study, variable, **kwargs):
    """[(unit, gold label, text)] in unit order: the story's text, or the sentence's / segment's for span units."""

    report = variable_report(study, variable, **kwargs)
    labels = {gold_key(g): g for g in report["gold"] if g["gold"]}
    if report["unit_info"] is not None:
        return [(u, labels[u]["gold"], labels[u]["text"]) for u in sorted(labels, key=unit_sort_key)]
    texts = output_texts(labels, study=study)
    return [(pk, labels[pk]["gold"], texts[pk]) for pk in sorted(labels) if pk in texts]


def _span_unit(study, unit):
    """(output, suffix) of a span unit name, checked against the story's text."""

    out, _, suffix = str(unit or "").partition(":")
    sentence, segment = _SENTENCE_UNIT.match(suffix), _SEGMENT_UNIT.match(suffix)
    if whole_number(out) is None or not (sentence or segment):
        raise AgreementRequestError(f"Give the unit as <story>:s<sentence> or <story>:<start>-<end>, not “{unit}”.")
    output = study_output(study, out)
    if output is None:
        raise AgreementRequestError(f"No story {out} in this study.")
    if sentence and int(sentence.group(1)) > len(split_sentences(output.text)):
        raise AgreementRequestError(f"No sentence {sentence.group(1)} in story {out}.")
    if segment and not int(segment.group(1)) < int(segment.group(2)) <= len(output.text):
        raise AgreementRequestError(f"The segment {suffix} is not inside story {out}.")
    return output, suffix


@transaction.atomic
def set_variable_gold(study, variable, *, value, user, output_id=None, unit=None, note=""):
    """Adjudicate one unit: the gold value of the variable (a value name) for a story (story-level variables,
    `output_id`) or a span unit (`unit`, e.g. "17:s3" or "17:120-188")."""

    names = [v.name for v in variable_values(variable)]
    if value not in names:
        raise AgreementRequestError(f"The gold value must be one of {', '.join(names)}.")
    target = variable_target(variable)
    if variable.variable_scope == "span":
        output, suffix = _span_unit(study, unit)
        target, where = f"{target}:{suffix}", f"unit {output.pk}:{suffix}"
    else:
        output = study_output(study, output_id)
        if output is None:
            raise AgreementRequestError(f"No story {output_id} in this study.")
        where = f"story {output.pk}"
    gold, _ = GoldLabel.objects.update_or_create(
        study=study,
        target=target,
        output=output,
        defaults={"value": names.index(value), "code": variable, "decided_by": user, "note": (note or "")[:2000]},
    )
    record_activity(study, user, "set gold label", f"{target} {where} = {value}")
    return gold


CI_COEFFICIENTS = ("krippendorff_alpha", "fleiss_kappa", "cohen_kappa_mean", "percent_agreement")
SUMMARY_COLUMNS = (
    "variable",
    "level",
    "n_units",
    "n_excluded",
    "n_raters",
    *LEVEL_COEFFICIENTS,
    *[f"{c}_ci_{end}" for c in CI_COEFFICIENTS for end in ("low", "high")],
    "bootstrap",
    "full_agreement",
    "n_ties",
    "notes",
)


def summary_rows(report):
    """One row per level: the coefficients with their bootstrap 95% intervals (the same resampling of units as the
    code-level report: stereoscope.stats.agreement.bootstrap_ci), full agreement, units kept and excluded."""
    for level, result in report["levels"].items():
        ci = result.ci95 or {}
        yield {
            "variable": report["variable"].name,
            "level": level,
            "n_units": report["n_units"],
            "n_excluded": report["n_excluded"],
            "n_raters": len(report["raters"]),
            **{c: getattr(result, c) for c in LEVEL_COEFFICIENTS},
            **{
                f"{c}_ci_{end}": (ci.get(c) or (None, None))[i]
                for c in CI_COEFFICIENTS
                for i, end in enumerate(("low", "high"))
            },
            "ci95": ci,
            "bootstrap": report.get("bootstrap", 0),
            "full_agreement": report["full_agreement"],
            "n_ties": report["n_ties"],
            "notes": "; ".join(result.notes + report["notes"]),
        }


GOLD_COLUMNS = (
    "variable",
    "variable_name",
    "unit",
    "output_id",
    "sentence",
    "start",
    "end",
    "gold",
    "gold_position",
    "majority",
    "n_raters",
    "agreement_share",
    "tie",
    "undecided",
    "reason",
    "adjudicated",
    "decided_by",
    "note",
    "counts",
)


def gold_rows(report, person=None):
    """Every unit's gold label with its evidence: the value name and its position, the majority label, how many
    coders rated the unit and the share agreeing with the most frequent label, the tie flag, and the adjudication
    (value, by whom, note). `person((pk, username))` names the adjudicator (the username by default)."""
    variable = report["variable"]
    position = {v: i + 1 for i, v in enumerate(report["values"])}
    adjudications = report.get("adjudications", {})
    for g in report["gold"]:
        unit = gold_key(g)
        adjudication = adjudications.get(unit) or {}
        who = adjudication.get("decided_by")
        yield {
            "variable": variable_target(variable),
            "variable_name": variable.name,
            "unit": unit,
            "output_id": g["output_id"],
            "sentence": g.get("sentence"),
            "start": g.get("start"),
            "end": g.get("end"),
            "gold": g["gold"],
            "gold_position": position.get(g["gold"]),
            "majority": g["majority"],
            "n_raters": g["n_ratings"],
            "agreement_share": g["share"],
            "tie": g["tie"],
            "undecided": g["undecided"],
            "reason": g["reason"],
            "adjudicated": g["adjudicated"],
            "decided_by": (person(who) if person else who[1]) if who else None,
            "note": adjudication.get("note", ""),
            "counts": g["counts"],
        }


def variable_gold_rows(study, options=None):
    """The variable_gold dataset: gold_rows for every variable of the study (or those in options["variable_ids"])."""

    options = options or {}
    wanted = set(options.get("variable_ids") or [])
    for variable in study_variables(study):
        if wanted and variable.pk not in wanted:
            continue
        report = variable_report(study, variable, round_ids=options.get("round_ids"))
        yield from gold_rows(report, lambda user: person(options, user))


def rater_rows(report):
    """Per annotator: units rated, how often each value was chosen, and agreement with the majority of the other
    raters (Cohen's κ, share agreeing, Krippendorff's α; nominal; units without a strict majority left out)."""
    rm = report.get("matrix")
    values = report["values"]
    counts = {}
    for _unit, rater, value in report["ratings"]:
        counts.setdefault(rater, dict.fromkeys(values, 0))[value] += 1
    for rater in report["raters"]:
        row = {"rater": rater, "n_units": sum(counts.get(rater, {}).values())}
        row.update({f"n_{v}": counts.get(rater, {}).get(v, 0) for v in values})
        row.update(kappa_vs_majority=None, agreement_vs_majority=None, alpha_vs_majority=None, n_compared=0)
        if rm is not None and len(rm.raters) > 2:
            res = ag.versus_majority(rm, rater, level="nominal", bootstrap=0)
            row.update(
                kappa_vs_majority=res.cohen_kappa_mean,
                agreement_vs_majority=res.percent_agreement,
                alpha_vs_majority=res.krippendorff_alpha,
                n_compared=res.pairs[0]["n_units"] if res.pairs else 0,
            )
        yield row


def rater_columns(report):
    return [
        "rater",
        "n_units",
        *[f"n_{v}" for v in report["values"]],
        "n_compared",
        "kappa_vs_majority",
        "agreement_vs_majority",
        "alpha_vs_majority",
    ]


def confusion(report, a=None, b=None):
    """The confusion table of two raters over the units both rated, rows and columns in the variable's value order
    ({rater_a, rater_b, values, table, n_units}); the first two raters by default; None with fewer than two."""
    rm = report.get("matrix")
    if rm is None or len(rm.raters) < 2:
        return None
    if a not in rm.raters or b not in rm.raters or a == b:
        a, b = rm.raters[0], rm.raters[1]
    found = ag.confusion(rm, a, b)
    values = report["values"]
    index = [found["categories"].index(v) if v in found["categories"] else None for v in values]
    table = [[found["table"][i][j] if i is not None and j is not None else 0 for j in index] for i in index]
    return {"rater_a": a, "rater_b": b, "values": values, "table": table, "n_units": found["n_units"]}


def confusion_rows(conf):
    for value, counts in zip(conf["values"], conf["table"], strict=True):
        yield {f"{conf['rater_a']} \\ {conf['rater_b']}": value, **dict(zip(conf["values"], counts, strict=True))}


def confusion_columns(conf):
    return [f"{conf['rater_a']} \\ {conf['rater_b']}", *conf["values"]]


def contrast_json(contrast):
    """A label × group contrast (stereoscope.stats.categorical.Contrast) as plain data."""
    return {
        "labels": contrast.labels,
        "groups": contrast.groups,
        "table": contrast.table,
        "n": contrast.n,
        "chi2": contrast.chi2,
        "df": contrast.df,
        "p_value": contrast.p_value,
        "cramers_v": contrast.cramers_v,
        "notes": contrast.notes,
    }


def contrast_rows(contrast, by):
    for group, counts in zip(contrast.groups, contrast.table, strict=True):
        yield {by: group, **dict(zip(contrast.labels, counts, strict=True))}


def report_tables(report, *, confusion_pair=None, contrasts=None, by_model=None):
    """Every table the variable page shows, as (name, columns, rows) for the downloads (CSV one at a time, XLSX as
    one workbook)."""
    tables = [
        ("summary", list(SUMMARY_COLUMNS), [dict(r) for r in summary_rows(report)]),
        ("gold", list(GOLD_COLUMNS), list(gold_rows(report))),
        ("raters", rater_columns(report), list(rater_rows(report))),
    ]
    conf = confusion(report, *(confusion_pair or (None, None)))
    if conf:
        tables.append(("confusion", confusion_columns(conf), list(confusion_rows(conf))))
    for by, contrast in (contrasts or {}).items():
        tables.append((f"by_{by}", [by, *contrast.labels], list(contrast_rows(contrast, by))))
    if by_model:
        columns = ["value", *by_model["models"], "total"]
        rows = [
            {"value": r["value"], **dict(zip(by_model["models"], r["counts"], strict=True)), "total": r["total"]}
            for r in by_model["rows"]
        ]
        tables.append(("by_model", columns, rows))
    if report.get("judge_vs_gold"):
        columns = ["judge", "n", "alpha_nominal", "alpha_ordinal", "kappa", "agreement", "note"]
        tables.append(("judges_vs_gold", columns, list(report["judge_vs_gold"])))
    ratings = [
        {"unit": u, "rater": r, "value": v}
        for u, r, v in sorted(report["ratings"], key=lambda x: (unit_sort_key(x[0]), x[1]))
    ]
    tables.append(("ratings", ["unit", "rater", "value"], ratings))
    return tables


def rating_rows(study, options=None):
    """The ratings behind each variable's figures (excluded units dropped): variable, unit, rater, value, position."""

    options = options or {}
    wanted = set(options.get("variable_ids") or [])
    users = {}

    def shown(rater):
        kind, _, name = rater.partition(":")
        if kind != "coder":
            return rater
        if name not in users:
            user = get_user_model().objects.filter(username=name).values_list("pk", "username").first()
            users[name] = f"coder:{person(options, user)}" if user else rater
        return users[name]

    for variable in study_variables(study):
        if wanted and variable.pk not in wanted:
            continue
        report = variable_report(study, variable, round_ids=options.get("round_ids"))
        position = {v: i + 1 for i, v in enumerate(report["values"])}
        for unit, rater, value in sorted(report["ratings"], key=lambda r: (unit_sort_key(r[0]), r[1])):
            yield {
                "variable": variable_target(variable),
                "unit": unit,
                "rater": shown(rater),
                "value": value,
                "position": position[value],
            }


def report_json(report) -> dict:
    """The API shape of a variable report."""
    variable = report["variable"]
    return {
        "variable": {
            "id": variable.pk,
            "name": variable.name,
            "codebook": variable.codebook_id,
            "scope": variable.variable_scope,
            "ordered": variable.variable_ordered,
            "gold_rule": variable.gold_rule,
            "gold_min_raters": variable.gold_min_raters,
        },
        "unit_kind": report["unit_kind"],
        "min_overlap": report["min_overlap"],
        "values": report["values"],
        "exclude_values": report["exclude_values"],
        "raters": report["raters"],
        "n_units_rated": report["n_units_rated"],
        "n_units": report["n_units"],
        "n_excluded": report["n_excluded"],
        "excluded_units": report["excluded_units"],
        "full_agreement": report["full_agreement"],
        "n_pairable": report["n_pairable"],
        "levels": {k: v.as_dict() for k, v in report["levels"].items()},
        "gold": report["gold"],
        "gold_rule": report.get("gold_rule"),
        "judge_vs_gold": report.get("judge_vs_gold", []),
        "n_ties": report["n_ties"],
        "n_undecided": report.get("n_undecided", 0),
        "notes": report["notes"],
    }
