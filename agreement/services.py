"""Agreement reports, gold-label adjudication and export rows. Views, the API, the command and exports call these."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from typing import Any

import numpy as np
from django.contrib.auth import get_user_model
from django.core.cache import cache
from django.db import transaction
from django.db.models import Count, Max
from django.db.models.functions import Substr

from annotation.selectors import (
    codebook_assignments,
    codebook_codes,
    codebook_codings,
    study_codes,
    study_variables,
    variable_values,
)
from generation.selectors import outputs_by_id, study_output
from judging.selectors import study_human_checks, study_verdicts
from stereoscope.datasets import person
from stereoscope.models import Study
from stereoscope.services import record_activity
from stereoscope.stats import agreement as ag
from stereoscope.untrusted import whole_number

from . import variables
from .models import GoldLabel
from .rating_tables import (
    GOLD,
    AgreementRequestError,
    CodingData,
    Table,
    build_table,
    default_codebook,
    output_labels,
    parse_target,
    segment_report,
    stereotype_table,
)

__all__ = ["AgreementRequestError", "study_report", "table_result", "set_gold", "clear_gold"]

LOW_ALPHA = 0.667  # Krippendorff (2004): tentative conclusions only above .667, reliable from .800
REPORT_COEFFICIENTS = ("krippendorff_alpha", "gwet_ac1", "cohen_kappa_mean", "percent_agreement")


def _row(
    kind: str, ident: int, name: str, path: str, rm: ag.RatingMatrix, result: ag.AgreementResult, low: float
) -> dict[str, Any]:
    pairable = int(((rm.codes >= 0).sum(axis=0) >= 2).sum())
    ones = int((rm.codes == rm.categories.index(1)).sum()) if 1 in rm.categories else 0
    alpha = result.krippendorff_alpha
    return {
        "target": f"{kind}:{ident}",
        "kind": kind,
        "id": ident,
        "name": name,
        "path": path,
        "n_units": result.n_units,
        "n_double_coded": pairable,
        "n_raters": result.n_raters,
        "n_ratings": result.n_ratings,
        "prevalence": (ones / result.n_ratings) if result.n_ratings else None,
        **{name_: getattr(result, name_) for name_ in REPORT_COEFFICIENTS},
        "fleiss_kappa": result.fleiss_kappa,
        "ci95": result.ci95,
        "notes": result.notes,
        "low": alpha is not None and alpha < low,
    }


def study_report(
    study: Study,
    codebook: Any = None,
    *,
    bootstrap: int = 1000,
    seed: int = 0,
    low: float = LOW_ALPHA,
    min_overlap: float = 0.9,
) -> dict[str, Any]:
    """Agreement among coders per dimension and per code, a coder × coder kappa matrix (all story × code units),
    segment-level matching per code, and the judge × human matrix."""
    if not 0 < min_overlap <= 1:
        raise AgreementRequestError("The overlap share must be between 0 (exclusive) and 1.")
    if bootstrap < 0 or bootstrap > 20000:
        raise AgreementRequestError("Bootstrap resamples must be between 0 and 20000.")
    codebook = codebook or default_codebook(study)
    report: dict[str, Any] = {
        "codebook": codebook,
        "low_threshold": low,
        "bootstrap": bootstrap,
        "min_overlap": min_overlap,
        "dimensions": [],
        "codes": [],
        "coders": [],
        "coder_matrix": [],
        "judge_human": None,
        "variables": [],
    }
    data = None
    if codebook is not None:
        data = CodingData(study, codebook)
        index = data.index
        report["coders"] = [data.usernames.get(pk, pk) for pk in data.coders]
        for dim in index.dimensions():
            if index.is_variable(dim):
                continue
            rm = data.dimension_matrix(dim)
            res = ag.agreement(rm, bootstrap=bootstrap, seed=seed, include_pairs=False)
            report["dimensions"].append(_row("dimension", dim, index.codes[dim]["name"], index.path(dim), rm, res, low))
        pooled: list[Any] = []
        for code in index.codable_codes():
            if index.is_variable(code):
                continue
            rm = data.code_matrix(code)
            res = ag.agreement(rm, bootstrap=bootstrap, seed=seed, include_pairs=False)
            row = _row("code", code, index.codes[code]["name"], index.path(code), rm, res, low)
            row["gender"] = index.codes[code]["gender_tag"]
            code_dim = index.dimension_of.get(code)
            row["dimension"] = index.codes[code_dim]["name"] if code_dim else ""
            row["segments"] = segment_report(data, code, min_overlap)
            report["codes"].append(row)
            pooled.append(rm.codes)
        report["coder_matrix"] = coder_matrix(data, pooled)
        report["variables"] = variable_rows(study, codebook, bootstrap=bootstrap, seed=seed, low=low)
    report["judge_human"] = judge_human_matrix(study, codebook, data=data)
    report["n_low"] = sum(1 for row in report["codes"] + report["dimensions"] + report["variables"] if row["low"])
    return report


def variable_rows(
    study: Study, codebook: Any, *, bootstrap: int = 1000, seed: int = 0, low: float = LOW_ALPHA
) -> list[dict[str, Any]]:
    """One row per categorical variable of the codebook: Krippendorff's α at its level (ordinal for an ordered
    variable, else nominal) with the nominal α beside it, their 95% intervals, units, raters, open ties."""

    rows: list[dict[str, Any]] = []
    for variable in study_variables(study):  # type: ignore[no-untyped-call]  # annotation.selectors is not typed yet
        if variable.codebook_id != codebook.pk:
            continue
        report = variables.variable_report(study, variable, bootstrap=bootstrap, seed=seed)
        level = "ordinal" if "ordinal" in report["levels"] else "nominal"
        result = report["levels"].get(level)
        nominal = report["levels"].get("nominal")
        alpha = result.krippendorff_alpha if result else None
        rows.append(
            {
                "target": variables.variable_target(variable),
                "kind": "variable",
                "id": variable.pk,
                "name": variable.name,
                "scope": variable.variable_scope,
                "level": level,
                "values": report["values"],
                "n_units": report["n_units"],
                "n_excluded": report["n_excluded"],
                "n_raters": len(report["raters"]),
                "krippendorff_alpha": alpha,
                "alpha_ci95": (result.ci95 or {}).get("krippendorff_alpha") if result else None,
                "alpha_nominal": nominal.krippendorff_alpha if nominal else None,
                "alpha_nominal_ci95": (nominal.ci95 or {}).get("krippendorff_alpha") if nominal else None,
                "cohen_kappa_mean": nominal.cohen_kappa_mean if nominal else None,
                "kappa_ci95": (nominal.ci95 or {}).get("cohen_kappa_mean") if nominal else None,
                "full_agreement": report["full_agreement"],
                "n_ties": report["n_ties"],
                "notes": (result.notes if result else []) + report["notes"],
                "low": alpha is not None and alpha < low,
            }
        )
    return rows


def report_fingerprint(study: Study, codebook: Any) -> str:
    """Changes whenever anything the report reads changes (codings, assignments, codes, verdicts, checks, gold)."""

    parts: list[Any] = [study.pk, codebook.pk if codebook else None]
    if codebook is not None:
        parts.append(
            codebook_codings(codebook)  # type: ignore[no-untyped-call]  # annotation.selectors is not typed yet
            .order_by()
            .aggregate(n=Count("id"), m=Max("id"), u=Max("updated_at"))
        )
        parts.append(
            codebook_assignments(codebook)  # type: ignore[no-untyped-call]  # annotation.selectors is not typed yet
            .order_by()
            .values_list("status")
            .annotate(n=Count("id"), m=Max("id"), c=Max("completed_at"))
            .order_by("status")
        )
        parts.append(
            list(
                codebook_codes(codebook)  # type: ignore[no-untyped-call]  # annotation.selectors is not typed yet
                .order_by("id")
                .values_list(
                    "id",
                    "name",
                    "parent_id",
                    "active",
                    "merged_into_id",
                    "codable",
                    "item_id",
                    "gender_tag",
                    "order",
                    "variable_scope",
                    "variable_ordered",
                    "exclude_value",
                    "gold_rule",
                    "gold_min_raters",
                )
            )
        )
    parts.append(study_verdicts(study, ok_only=False).order_by().aggregate(n=Count("id"), u=Max("updated_at")))
    parts.append(study_human_checks(study).order_by().aggregate(n=Count("id"), m=Max("id")))
    parts.append(GoldLabel.objects.filter(study=study).order_by().aggregate(n=Count("id"), u=Max("updated_at")))
    return hashlib.sha1(
        repr([list(p) if not isinstance(p, (dict, int, type(None))) else p for p in parts]).encode()
    ).hexdigest()


def cached_study_report(study: Study, codebook: Any = None, **params: Any) -> dict[str, Any]:
    """study_report, kept in the cache until any of its inputs changes (see report_fingerprint)."""

    codebook = codebook or default_codebook(study)

    params_hash = hashlib.sha1(repr(sorted(params.items())).encode()).hexdigest()
    key = f"agreement-report:{report_fingerprint(study, codebook)}:{params_hash}"
    report: dict[str, Any] | None = cache.get(key)
    if report is None:
        report = study_report(study, codebook, **params)
        cache.set(key, report, 600)
    return report


def coder_matrix(data: CodingData, pooled_codes: list[Any]) -> list[list[Any]]:
    """Cohen's kappa for every coder pair over all story × code units both coded; rows [name, [cells]]."""
    names = [data.usernames.get(pk, pk) for pk in data.coders]
    if not pooled_codes or len(names) < 2:
        return []
    codes = np.hstack(pooled_codes)
    rm = ag.RatingMatrix(units=list(range(codes.shape[1])), raters=names, codes=codes, categories=[0, 1])
    result = ag.agreement(rm, bootstrap=0)
    by_pair = {(p["rater_a"], p["rater_b"]): p for p in result.pairs}
    by_pair.update({(b, a): p for (a, b), p in list(by_pair.items())})
    return [[a, [None if a == b else by_pair.get((a, b)) for b in names]] for a in names]


def judge_human_matrix(
    study: Study, codebook: Any = None, round_ids: Any = None, data: CodingData | None = None
) -> dict[str, Any]:
    """Kappa for every judge × human (checker, coder, gold) pair on the stereotype table."""

    if not study_verdicts(study, ok_only=False).filter(status="ok").exists():
        return {"judges": [], "humans": [], "rows": [], "notes": ["no judge verdicts yet"]}
    table = stereotype_table(study, codebook=codebook, round_ids=round_ids, data=data)
    rm = table.matrix
    judges = [k for k in rm.raters if k.startswith("judge:")]
    humans = [k for k in rm.raters if not k.startswith("judge:")]
    if not judges:
        return {"judges": [], "humans": [], "rows": [], "notes": ["no judge verdicts yet"]}
    result = ag.agreement(rm, level=table.level, bootstrap=0)
    by_pair: dict[tuple[str, str], dict[str, Any]] = {}
    for p in result.pairs:
        by_pair[(p["rater_a"], p["rater_b"])] = p
        by_pair[(p["rater_b"], p["rater_a"])] = p
    rows = [[table.label(j), [by_pair.get((j, h)) for h in humans]] for j in judges]
    judge_rows = [[table.label(a), [None if a == b else by_pair.get((a, b)) for b in judges]] for a in judges]
    return {
        "judges": [table.label(j) for j in judges],
        "humans": [table.label(h) for h in humans],
        "rows": rows,
        "judge_rows": judge_rows,
        "level": table.level,
        "notes": table.notes,
        "overall": result,
    }


def table_for(
    study: Study,
    target: str,
    *,
    codebook_id: Any = None,
    raters: list[str] | None = None,
    round_ids: Any = None,
    include_gold: bool = True,
) -> Table:
    codebook = default_codebook(study, codebook_id)
    return build_table(study, target, codebook=codebook, raters=raters, round_ids=round_ids, include_gold=include_gold)


def table_result(table: Table, *, level: str | None = None, bootstrap: int = 1000, seed: int = 0) -> ag.AgreementResult:
    return ag.agreement(table.matrix, level=level or table.level, bootstrap=bootstrap, seed=seed)


def rater_comparisons(table: Table, *, level: str | None = None, bootstrap: int = 0) -> list[dict[str, Any]]:
    """Each rater against the majority of the others."""
    rows: list[dict[str, Any]] = []
    for key in table.matrix.raters:
        res = ag.versus_majority(table.matrix, key, level=level or table.level, bootstrap=bootstrap)
        rows.append(
            {
                "rater": key,
                "label": table.label(key),
                "n_units": res.pairs[0]["n_units"] if res.pairs else 0,
                "kappa": res.cohen_kappa_mean,
                "percent_agreement": res.percent_agreement,
                "alpha": res.krippendorff_alpha,
            }
        )
    return rows


def disagreement_rows(table: Table, *, limit: int | None = None) -> tuple[list[dict[str, Any]], int]:
    """Stories where raters differ: each rater's value, and the gold value if set."""
    rm = table.matrix
    idx = ag.disagreements(
        rm.subset(rater_indices=[i for i, k in enumerate(rm.raters) if k != GOLD]) if GOLD in rm.raters else rm
    )
    shown = [rm.units[i] for i in (idx[:limit] if limit else idx)]
    labels = output_labels(shown)

    excerpts = dict(outputs_by_id(shown).annotate(head=Substr("text", 1, 240)).values_list("pk", "head"))
    gold_pos = rm.raters.index(GOLD) if GOLD in rm.raters else None
    rows: list[dict[str, Any]] = []
    for i in idx[:limit] if limit else idx:
        values: list[dict[str, Any]] = []
        for r, key in enumerate(rm.raters):
            if key == GOLD:
                continue
            code = rm.codes[r, i]
            values.append(
                {"rater": key, "label": table.label(key), "value": rm.categories[code] if code >= 0 else None}
            )
        gold = rm.categories[rm.codes[gold_pos, i]] if gold_pos is not None and rm.codes[gold_pos, i] >= 0 else None
        rows.append(
            {
                "output_id": rm.units[i],
                "label": labels.get(rm.units[i], rm.units[i]),
                "values": values,
                "gold": gold,
                "excerpt": excerpts.get(rm.units[i], ""),
            }
        )
    return rows, len(idx)


# ---------------------------------------------------------------------------------------------- adjudication
def allowed_gold_values(target: str) -> list[int]:
    kind, _ = parse_target(target)
    return [0, 1] if kind in ("code", "dimension") else [0, 1, 2, 3, 4]


@transaction.atomic
def set_gold(study: Study, *, target: str, output_id: Any, value: Any, user: Any, note: str = "") -> GoldLabel:
    """Set (or change) the gold value of one story for one target."""

    kind, ident = parse_target(target)
    try:
        value = int(value)
    except (TypeError, ValueError):
        raise AgreementRequestError(f"The gold value must be a whole number, got {value!r}.") from None
    allowed = allowed_gold_values(target)
    if value not in allowed:
        raise AgreementRequestError(f"The gold value for {target} must be one of {', '.join(map(str, allowed))}.")
    output = study_output(study, output_id)
    if output is None:
        raise AgreementRequestError(f"No story {output_id} in this study.")
    code = None
    if ident is not None:
        code = study_codes(study, [ident]).first()  # type: ignore[no-untyped-call]  # annotation.selectors is not typed yet
        if code is None:
            raise AgreementRequestError(f"No {kind} {ident} in this study.")
    gold, created = GoldLabel.objects.update_or_create(
        study=study,
        target=f"{kind}:{ident}" if ident is not None else kind,
        output=output,
        defaults={"value": value, "code": code, "decided_by": user, "note": note[:2000]},
    )
    record_activity(
        study, user, "set gold label" if created else "changed gold label", f"{gold.target} story {output.pk} = {value}"
    )
    return gold


@transaction.atomic
def clear_gold(study: Study, *, target: str, output_id: Any, user: Any) -> None:

    parse_target(target)
    story = whole_number(output_id)
    if story is None:
        raise AgreementRequestError(f"No story {output_id!r} in this study.")
    deleted, _ = GoldLabel.objects.filter(study=study, target=target, output_id=story).delete()
    if not deleted:
        raise AgreementRequestError(f"No gold label for story {output_id} on {target}.")
    record_activity(study, user, "cleared gold label", f"{target} story {output_id}")


# ------------------------------------------------------------------------------------------------- exports
def agreement_rows(study: Study, options: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    """One row per code and dimension of the study's default codebook (CIs from 1,000 resamples)."""
    report = study_report(study, bootstrap=int((options or {}).get("bootstrap", 1000)))
    wanted = set((options or {}).get("code_ids") or [])
    for row in report["dimensions"] + report["codes"]:
        if wanted and row["id"] not in wanted:
            continue
        yield {
            "target": row["target"],
            "kind": row["kind"],
            "name": row["name"],
            "path": row["path"],
            "n_units": row["n_units"],
            "n_double_coded": row["n_double_coded"],
            "n_raters": row["n_raters"],
            "prevalence": row["prevalence"],
            **{f"{c}": row[c] for c in REPORT_COEFFICIENTS},
            **{f"{c}_ci_low": (row["ci95"].get(c) or [None, None])[0] for c in REPORT_COEFFICIENTS},
            **{f"{c}_ci_high": (row["ci95"].get(c) or [None, None])[1] for c in REPORT_COEFFICIENTS},
            "low_agreement": row["low"],
            "notes": "; ".join(row["notes"]),
        }


def rating_rows(study: Study, options: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    """The long tables (target, unit, rater, value) behind every agreement figure, gold included as a rater."""

    options = options or {}
    codebook = default_codebook(study)
    targets: list[str] = []
    data = None
    if codebook is not None:
        data = CodingData(study, codebook)
        targets = [f"dimension:{d}" for d in data.index.dimensions()] + [
            f"code:{c}" for c in data.index.codable_codes()
        ]
        wanted = set(options.get("code_ids") or [])
        if wanted:
            targets = [t for t in targets if int(t.split(":")[1]) in wanted]
    targets.append("stereotype")
    names: dict[str, str] = {}
    for target in targets:
        table = build_table(
            study,
            target,
            codebook=codebook,
            data=data if target != "stereotype" else None,
            round_ids=options.get("round_ids"),
        )
        for unit, rater, value in table.long_rows():
            kind, _, ident = rater.partition(":")
            if kind in ("coder", "check"):
                if rater not in names:
                    user = get_user_model().objects.filter(pk=int(ident)).values_list("pk", "username").first()
                    names[rater] = f"{kind}:{person(options, user)}" if user else rater
                shown = names[rater]
            else:
                shown = rater
            yield {"target": target, "unit": unit, "rater": shown, "value": value}


def gold_label_rows(study: Study, options: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    """The researchers' gold labels; a variable's value also by name (its position among the variable's values)."""

    options = options or {}
    names: dict[str, list[str]] = {}  # variable id -> value names
    for variable in study_variables(study):  # type: ignore[no-untyped-call]  # annotation.selectors is not typed yet
        names[str(variable.pk)] = [v.name for v in variable_values(variable)]  # type: ignore[no-untyped-call]  # annotation.selectors is not typed yet
    for gold in GoldLabel.objects.filter(study=study).select_related("decided_by").order_by("target", "output_id"):
        value_name: int | str | None = gold.value
        if gold.target.startswith("variable:"):
            values = names.get(gold.target.split(":")[1], [])
            value_name = values[gold.value] if 0 <= gold.value < len(values) else None
        yield {
            "target": gold.target,
            "output_id": gold.output_id,
            "value": gold.value,
            "value_name": value_name,
            "decided_by": person(options, gold.decided_by),
            "note": gold.note,
            "updated_at": gold.updated_at.isoformat(),
        }


def command_matrix(opts: dict[str, Any]) -> ag.RatingMatrix:

    study = Study.objects.filter(pk=opts["study"]).first()
    if study is None:
        raise AgreementRequestError(f"No study {opts['study']}.")
    if opts.get("code") and opts.get("dimension"):
        raise AgreementRequestError("Give --code or --dimension, not both.")
    target = (
        f"code:{opts['code']}"
        if opts.get("code")
        else f"dimension:{opts['dimension']}"
        if opts.get("dimension")
        else "stereotype"
    )
    raters = [r.strip() for r in opts["raters"].split(",") if r.strip()] if opts.get("raters") else None
    table = table_for(study, target, codebook_id=opts.get("codebook"), raters=raters)
    return table.matrix
