"""Agreement on categorical variables: coders and judges in one table, excluded units dropped and counted, majority
label as gold (ties flagged for adjudication, adjudicated gold wins), and the ratings behind every figure."""

from __future__ import annotations

from django.db import transaction

from stereoscope import agreement_stats as ag
from stereoscope import categorical_stats as cs
from stereoscope.services import record_activity

from .rating_tables import AgreementRequestError

LEVEL_COEFFICIENTS = ("krippendorff_alpha", "fleiss_kappa", "cohen_kappa_mean", "percent_agreement")


def variable_target(variable):
    return f"variable:{variable.pk}"


def get_variable(study, variable_id):
    from annotation.selectors import study_variables

    for variable in study_variables(study):
        if str(variable.pk) == str(variable_id):
            return variable
    raise AgreementRequestError(f"No categorical variable {variable_id} in this study.")


def _judge_rounds(study, values, round_ids):
    """Categorical rounds whose labels are all values of the variable (case ignored), or the rounds asked for."""
    from judging.selectors import categorical_rounds

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


def variable_ratings(study, variable, *, round_ids=None, include_judges=True):
    """(output id, rater key, value name) from coders (coder:<name>) and judges (judge:<model>)."""
    from annotation.selectors import variable_codings, variable_values
    from judging.selectors import label_verdicts

    values = [v.name for v in variable_values(variable)]
    ratings = [(out, f"coder:{coder}", value) for out, coder, value in variable_codings(variable)]
    if include_judges:
        by_lower = {v.lower(): v for v in values}
        rounds = _judge_rounds(study, values, round_ids)
        if rounds:
            seen = set()
            for _round, out, model, label in label_verdicts(study, rounds):
                key = (out, f"judge:{model}")
                if key not in seen:  # a judge in two rounds: its first round's label counts
                    seen.add(key)
                    ratings.append((out, key[1], by_lower[label.lower()]))
    return ratings, values


def _gold(study, variable, values):
    from .models import GoldLabel

    rows = GoldLabel.objects.filter(study=study, target=variable_target(variable)).values_list("output_id", "value")
    return {out: values[value] for out, value in rows if 0 <= value < len(values)}


def variable_report(study, variable, *, round_ids=None, include_judges=True, bootstrap=0, seed=0) -> dict:
    """Everything the variable page, the API and the export show."""
    from annotation.selectors import variable_values

    value_codes = variable_values(variable)
    ratings, values = variable_ratings(study, variable, round_ids=round_ids, include_judges=include_judges)
    excluded_values = [v.name for v in value_codes if v.exclude_value]
    kept, excluded_units = cs.drop_excluded(ratings, excluded_values)
    kept_values = [v for v in values if v not in excluded_values]
    report = {
        "variable": variable,
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
        "notes": [],
    }
    share, n_pairable = cs.full_agreement_share(kept)
    report["full_agreement"], report["n_pairable"] = share, n_pairable
    if kept:
        rm = ag.from_long(kept, level="nominal")
        report["levels"]["nominal"] = ag.agreement(rm, level="nominal", bootstrap=bootstrap, seed=seed)
        if variable.variable_ordered:
            position = {v: i + 1 for i, v in enumerate(kept_values)}
            ordinal = ag.from_long([(u, r, position[v]) for u, r, v in kept], level="ordinal")
            report["levels"]["ordinal"] = ag.agreement(ordinal, level="ordinal", bootstrap=bootstrap, seed=seed)
    else:
        report["notes"].append("no ratings yet (after dropping excluded units)")
    human = [row for row in kept if row[1].startswith("coder:")]
    adjudicated = _gold(study, variable, values)
    gold = []
    for m in cs.majority_labels(human, order=kept_values):
        final = adjudicated.get(m.unit, m.label)
        gold.append(
            {
                "output_id": m.unit,
                "majority": m.label,
                "tie": m.tie,
                "n_ratings": m.n_ratings,
                "counts": m.counts,
                "adjudicated": adjudicated.get(m.unit),
                "gold": final,
            }
        )
    report["gold"] = gold
    report["n_ties"] = sum(1 for g in gold if g["tie"] and g["adjudicated"] is None)
    return report


def gold_labels(study, variable, **kwargs) -> dict:
    """{output id: gold value} (majority of coders, adjudication winning; open ties left out)."""
    return {g["output_id"]: g["gold"] for g in variable_report(study, variable, **kwargs)["gold"] if g["gold"]}


@transaction.atomic
def set_variable_gold(study, variable, *, output_id, value, user, note=""):
    """Adjudicate one story: the gold value of the variable (a value name)."""
    from annotation.selectors import variable_values
    from generation.selectors import study_output

    from .models import GoldLabel

    names = [v.name for v in variable_values(variable)]
    if value not in names:
        raise AgreementRequestError(f"The gold value must be one of {', '.join(names)}.")
    output = study_output(study, output_id)
    if output is None:
        raise AgreementRequestError(f"No story {output_id} in this study.")
    gold, _ = GoldLabel.objects.update_or_create(
        study=study,
        target=variable_target(variable),
        output=output,
        defaults={"value": names.index(value), "code": variable, "decided_by": user, "note": (note or "")[:2000]},
    )
    record_activity(study, user, "set gold label", f"{gold.target} story {output.pk} = {value}")
    return gold


def summary_rows(report):
    """One row per level: the coefficients, full agreement, units kept and excluded."""
    for level, result in report["levels"].items():
        yield {
            "variable": report["variable"].name,
            "level": level,
            "n_units": report["n_units"],
            "n_excluded": report["n_excluded"],
            "n_raters": len(report["raters"]),
            **{c: getattr(result, c) for c in LEVEL_COEFFICIENTS},
            "full_agreement": report["full_agreement"],
            "n_ties": report["n_ties"],
            "notes": "; ".join(result.notes + report["notes"]),
        }


def rating_rows(study, options=None):
    """The ratings behind each variable's figures (excluded units dropped): variable, unit, rater, value, position."""
    from django.contrib.auth import get_user_model

    from annotation.selectors import study_variables
    from stereoscope.datasets import person

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
        for unit, rater, value in sorted(report["ratings"], key=lambda r: (r[0], r[1])):
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
        },
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
        "n_ties": report["n_ties"],
        "notes": report["notes"],
    }
