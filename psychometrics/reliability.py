"""Reliability: Cronbach's alpha, stratified alpha, item statistics, descriptives (no Django imports).

All functions take DataFrames of recoded item values (rows = respondents, columns = items) and use listwise
deletion; they return plain floats or None where a value is undefined (never NaN).
"""
import math

import numpy as np
import pandas as pd
from scipy import stats


def clean(value, digits=None):
    """A float, or None for NaN/inf/None."""
    if value is None:
        return None
    try:
        value = float(value)
    except (TypeError, ValueError):
        return None
    if math.isnan(value) or math.isinf(value):
        return None
    return round(value, digits) if digits is not None else value


def _alpha(arr):
    """Alpha of a complete (no NaN) n × k array, or None."""
    n, k = arr.shape
    if k < 2 or n < 2:
        return None
    total_var = arr.sum(axis=1).var(ddof=1)
    if not total_var > 0:
        return None
    return k / (k - 1) * (1 - arr.var(axis=0, ddof=1).sum() / total_var)


def _complete(arr):
    return arr[~np.isnan(arr).any(axis=1)]


def cronbach_alpha(items, ci=0.95):
    """Cronbach's alpha with its Feldt confidence interval (as pingouin computes them). Listwise deletion.

    Returns {"alpha", "ci_low", "ci_high", "n", "k"}; alpha is None with fewer than 2 items, 2 complete rows,
    or zero total variance.
    """
    data = _complete(np.asarray(items, dtype=float).reshape(len(items), -1))
    n, k = data.shape
    out = {"alpha": None, "ci_low": None, "ci_high": None, "n": int(n), "k": int(k)}
    alpha = _alpha(data)
    if alpha is None:
        return out
    out["alpha"] = clean(alpha)
    df1, df2 = n - 1, (n - 1) * (k - 1)
    out["ci_low"] = clean(1 - (1 - alpha) * stats.f.isf((1 - ci) / 2, df1, df2))
    out["ci_high"] = clean(1 - (1 - alpha) * stats.f.isf((1 + ci) / 2, df1, df2))
    return out


def stratified_alpha(items, groups):
    """Stratified alpha (Jung 2025, eq. 4.2; Cronbach, Schönemann & McKie 1965):

        1 − Σ_s σ²(X_s)·(1 − α_s) / σ²(X)

    with X_s the item SUM of stratum s and X = Σ_s X_s the composite. `groups` maps stratum → item columns.
    Listwise deletion over all items of all strata. None when a stratum has < 2 items or a variance is zero.
    """
    cols = [c for ids in groups.values() for c in ids]
    data = items[cols].dropna(axis=0, how="any").astype(float)
    if len(data) < 2:
        return None
    composite_var = data[cols].sum(axis=1).var(ddof=1)
    if not composite_var > 0:
        return None
    error = 0.0
    for ids in groups.values():
        alpha = _alpha(data[ids].to_numpy())
        if alpha is None:
            return None
        error += data[ids].sum(axis=1).var(ddof=1) * (1 - alpha)
    return clean(1 - error / composite_var)


def item_statistics(items, groups):
    """Per item: mean, variance and n over all its answers; the corrected item–subscale correlation (the item vs
    the sum of the OTHER items of its subscale) and the subscale's alpha without the item, both on the cases the
    subscale's alpha uses (respondents with every item of the subscale answered; their number is n_alpha), so
    they explain that alpha; and a zero-variance flag."""
    rows = []
    for subscale, ids in groups.items():
        arr = items[ids].to_numpy(dtype=float)
        present = ~np.isnan(arr)
        complete = arr[present.all(axis=1)]
        for j, item in enumerate(ids):
            col = arr[:, j]
            ok = present[:, j]
            n = int(ok.sum())
            values = col[ok]
            var = values.var(ddof=1) if n > 1 else float("nan")
            others = [i for i in range(len(ids)) if i != j]
            r = None
            if others and len(complete) > 2:
                own, rest = complete[:, j], complete[:, others].sum(axis=1)
                if own.std() > 0 and rest.std() > 0:
                    r = clean(np.corrcoef(own, rest)[0, 1])
            without = _alpha(complete[:, others]) if len(others) >= 2 else None
            rows.append({
                "item": item, "subscale": subscale, "n": n, "mean": clean(values.mean()) if n else None,
                "variance": clean(var), "sd": clean(np.sqrt(var)) if n > 1 else None, "corrected_item_total_r": r,
                "alpha_if_deleted": clean(without), "n_alpha": int(len(complete)),
                "zero_variance": bool(n > 0 and not var > 0),
            })
    return rows


def descriptives(series):
    """M, SD, skewness and excess kurtosis (bias-corrected G1 and G2, as SPSS reports), min, max, n."""
    s = pd.Series(series, dtype=float).dropna()
    n = len(s)
    return {
        "n": int(n), "mean": clean(s.mean()) if n else None, "sd": clean(s.std(ddof=1)) if n > 1 else None,
        "skewness": clean(s.skew()) if n > 2 else None, "excess_kurtosis": clean(s.kurt()) if n > 3 else None,
        "min": clean(s.min()) if n else None, "max": clean(s.max()) if n else None,
    }


def histogram(series, lo=None, hi=None, bins=None):
    """Counts for an SVG histogram: [{"lo", "hi", "count"}]. Bins of equal width over [lo, hi]."""
    s = pd.Series(series, dtype=float).dropna()
    if s.empty:
        return []
    lo = float(s.min()) if lo is None else float(lo)
    hi = float(s.max()) if hi is None else float(hi)
    if hi <= lo:
        hi = lo + 1
    bins = bins or min(20, max(5, int(math.sqrt(len(s)))))
    counts, edges = np.histogram(s.clip(lo, hi), bins=bins, range=(lo, hi))
    return [{"lo": float(edges[i]), "hi": float(edges[i + 1]), "count": int(c)} for i, c in enumerate(counts)]


def rate_internal_consistency(alpha):
    """Jung 2025, Table 4.2 (also alternate-form reliability): ≥ .8 ++, .7–.8 +, .5–.7 –, < .5 --."""
    if alpha is None:
        return None
    return "++" if alpha >= 0.8 else "+" if alpha >= 0.7 else "–" if alpha >= 0.5 else "--"


def rate_option_order(r):
    """Jung 2025, Table 4.2 (Cohen): ≥ .5 ++, .3–.5 +, .1–.3 –, < .1 --."""
    if r is None:
        return None
    return "++" if r >= 0.5 else "+" if r >= 0.3 else "–" if r >= 0.1 else "--"


def rate_convergent(r):
    """Jung 2025, Table 4.2: ≥ .6 ++, .3–.6 +, .1–.3 –, < .1 --."""
    if r is None:
        return None
    return "++" if r >= 0.6 else "+" if r >= 0.3 else "–" if r >= 0.1 else "--"


def rate_concurrent(r):
    """Jung 2025, Table 4.2: ≥ .3 ++, .1–.3 +, < .1 –."""
    if r is None:
        return None
    return "++" if r >= 0.3 else "+" if r >= 0.1 else "–"


def rate_factorial(rmsea, cfi, improper=False):
    """Jung 2025, Table 4.2: + iff RMSEA ≤ .05 and CFI ≥ .90; never + for an improper solution."""
    if improper:
        return "improper"
    if rmsea is None or cfi is None:
        return None
    return "+" if rmsea <= 0.05 and cfi >= 0.90 else "–"


def reliability_gate(ratings):
    """Jung: validity is assessed only when all reliability ratings are "+" or better."""
    return bool(ratings) and all(r in ("+", "++") for r in ratings)
