"""One instrument's analysis over a wide response table (no Django imports). Used by run reports and by
`manage.py analyze_responses`. Undefined values are None with a note; never NaN."""

import math

import pandas as pd

from . import reliability, scoring, validity


def analyze(wide, spec, *, cfa=True, histograms=True):
    """wide: rows = respondents, columns = item ids (original scale, NaN = missing).

    Returns n, missing_policy, descriptives, items, alpha, stratified_alpha, omega_total, cfa, ratings, histograms,
    missing, notes.
    """
    notes = [spec.missing_policy_text()]
    absent = [i for i in spec.item_ids() if i not in wide.columns]
    if absent:
        notes.append(f"Items with no column: {', '.join(absent)} (treated as missing).")
        wide = wide.copy()
        for i in absent:
            wide[i] = float("nan")
    wide = wide[spec.item_ids()].astype(float)
    recoded = scoring.recode(wide, spec)
    scores = scoring.score(recoded, spec, recoded=True)
    groups = spec.subscale_items()
    names = scoring.score_names(spec)
    report = {"n": int(len(wide)), "missing_policy": spec.missing_policy_text(), "estimator": validity.ESTIMATOR}
    lo, hi = spec.scale.min, spec.scale.max
    if spec.scoring == "sum" and lo is not None:
        ranges = {
            n: (lo * len(groups.get(n, spec.item_ids())), hi * len(groups.get(n, spec.item_ids()))) for n in names
        }
    else:
        ranges = {n: (lo, hi) for n in names}
    report["descriptives"] = {n: reliability.descriptives(scores[n]) for n in names if n in scores}
    if histograms:
        report["histograms"] = {n: reliability.histogram(scores[n], *ranges[n]) for n in names if n in scores}
    report["items"] = reliability.item_statistics(recoded, groups)
    zero = [r["item"] for r in report["items"] if r["zero_variance"]]
    if zero:
        notes.append(f"Zero-variance items: {', '.join(zero)}.")
    alpha = {s: reliability.cronbach_alpha(recoded[ids]) for s, ids in groups.items()}
    alpha["total"] = reliability.cronbach_alpha(recoded[spec.item_ids()])
    report["alpha"] = {k: v["alpha"] for k, v in alpha.items()}
    report["alpha_detail"] = alpha
    for k, v in alpha.items():
        if v["alpha"] is None:
            notes.append(
                f"Alpha for {k} is undefined (fewer than 2 items or 2 complete respondents, or zero variance)."
            )
    report["stratified_alpha"] = reliability.stratified_alpha(recoded, groups) if len(groups) > 1 else None
    if report["stratified_alpha"] is None:
        notes.append(
            "Stratified alpha is undefined (needs 2+ subscales of 2+ items each with variance)."
            if len(groups) > 1
            else "Stratified alpha needs two or more subscales."
        )
    report["missing"] = {
        "cells": int(wide.isna().sum().sum()),
        "per_item": {i: int(wide[i].isna().sum()) for i in spec.item_ids()},
        "complete_respondents": int(wide.dropna().shape[0]),
    }
    report["n_per_statistic"] = {
        "scores": {n: report["descriptives"][n]["n"] for n in report["descriptives"]},
        "alpha": {k: v["n"] for k, v in alpha.items()},
        "stratified_alpha": int(recoded[[c for ids in groups.values() for c in ids]].dropna().shape[0])
        if groups
        else 0,
        "items": {r["item"]: {"n": r["n"], "n_alpha": r["n_alpha"]} for r in report["items"]},
    }
    if cfa:
        fit = validity.cfa(recoded, groups, missing=spec.missing.get("cfa", "listwise"))
        report["cfa"] = fit
        report["estimator"] = fit["estimator"]
        report["omega_total"] = fit["omega"].get("total")
        report["omega"] = fit["omega"]
        notes.extend(f"CFA: {n}" for n in fit["notes"])
    else:
        report["cfa"], report["omega_total"], report["omega"] = None, None, {}
    report["n_per_statistic"]["cfa"] = (report["cfa"] or {}).get("n")
    if report["omega_total"] is None:
        notes.append("Omega total is undefined (no CFA solution).")
    internal = reliability.rate_internal_consistency(
        report["stratified_alpha"] if report["stratified_alpha"] is not None else report["alpha"].get("total")
    )
    basis = validity.rating_indices(report["cfa"])
    report["ratings"] = {
        "internal_consistency": internal,
        "factorial": reliability.rate_factorial(
            basis["rmsea"], basis["cfi"], bool((report["cfa"] or {}).get("improper"))
        ),
        "factorial_basis": basis,
    }
    report["notes"] = notes
    return sanitize(report)


def sanitize(value):
    """Replace NaN/inf anywhere in a nested structure with None (JSON-safe)."""
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, dict):
        return {str(k): sanitize(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [sanitize(v) for v in value]
    if hasattr(value, "item") and not isinstance(value, (str, bytes)):
        try:
            return sanitize(value.item())
        except (ValueError, AttributeError):
            return value
    return value


def read_wide_csv(path_or_buffer, spec):
    """Read the CLI's wide CSV: one column per item id, optional `group` and `id` columns. Raises ValueError with
    a clear message for unknown columns or non-numeric / out-of-range cells."""
    frame = pd.read_csv(path_or_buffer, dtype=str, keep_default_na=False)
    frame.columns = [str(c).strip() for c in frame.columns]
    known = set(spec.item_ids()) | {"group", "id"}
    unknown = [c for c in frame.columns if c not in known]
    if unknown:
        raise ValueError(
            f"Unknown column(s) {', '.join(unknown)}; expected item ids {', '.join(spec.item_ids())} "
            "and optionally group, id."
        )
    if not any(c in spec.item_ids() for c in frame.columns):
        raise ValueError("The CSV has no item columns.")
    problems = []
    out = pd.DataFrame(index=frame.index)
    for item in spec.item_ids():
        if item not in frame.columns:
            continue
        values = []
        for row, cell in enumerate(frame[item], start=2):
            cell = cell.strip()
            if cell == "" or cell.upper() in ("NA", "NAN", "NULL"):
                values.append(float("nan"))
                continue
            try:
                v = float(cell)
            except ValueError:
                problems.append(f"row {row}, item {item}: {cell!r} is not a number")
                values.append(float("nan"))
                continue
            if not spec.scale.continuous and (v not in spec.scale.points()):
                problems.append(
                    f"row {row}, item {item}: {cell} is not a point of the {spec.scale.min:g}–{spec.scale.max:g} scale"
                )
            values.append(v)
        out[item] = values
    if problems:
        more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
        raise ValueError("; ".join(problems[:10]) + more)
    group = frame["group"] if "group" in frame.columns else None
    return out, group
