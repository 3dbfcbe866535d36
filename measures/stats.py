"""Significance tests and effect sizes for female vs male contrasts. No Django imports.

Everything comes from scipy; the effect sizes follow the usual textbook definitions (checked against pingouin in
the tests). Every function returns a plain dict (JSON-serialisable) with the test's name, so results can be stored.
Stars follow Wan et al. 2023: * p < .1, ** p < .05, *** p < .01.
"""

import math

import numpy as np

from stereoscope.lazy_imports import LazyModule
from stereoscope.stats.defined import independent_t_problem, paired_t_problem

sps = LazyModule("scipy.stats")


class StatsError(ValueError):
    """Not enough or malformed data for a test; the message says what is missing."""


def stars(p):
    if p is None or (isinstance(p, float) and math.isnan(p)):
        return ""
    return "***" if p < 0.01 else "**" if p < 0.05 else "*" if p < 0.1 else ""


def _clean(values, name):
    arr = np.asarray([v for v in values if v is not None], dtype=float)
    arr = arr[~np.isnan(arr)]
    if arr.size < 2:
        raise StatsError(f"{name} needs at least two values (has {arr.size}).")
    return arr


def _num(x):
    x = float(x)
    return None if math.isnan(x) or math.isinf(x) else x


def describe(values):
    arr = np.asarray([v for v in values if v is not None], dtype=float)
    arr = arr[~np.isnan(arr)]
    return {
        "n": int(arr.size),
        "mean": _num(arr.mean()) if arr.size else None,
        "sd": _num(arr.std(ddof=1)) if arr.size > 1 else None,
    }


def _undefined_t(test, problem, x, y, labels, **extra):
    """A t-test the data leave undefined (the one rule in stereoscope.stats.defined): None with the reason."""
    return {
        "test": test,
        "t": None,
        "df": None,
        "p": None,
        "stars": "",
        "cohens_d": None,
        "note": problem,
        **extra,
        labels[0]: describe(x),
        labels[1]: describe(y),
    }


def cohens_d(x, y):
    """Cohen's d with the pooled standard deviation (x − y); None when neither group varies."""
    x, y = _clean(x, "group 1"), _clean(y, "group 2")
    if independent_t_problem(x, y):
        return None
    nx, ny = x.size, y.size
    pooled = math.sqrt(((nx - 1) * x.var(ddof=1) + (ny - 1) * y.var(ddof=1)) / (nx + ny - 2))
    return _num((x.mean() - y.mean()) / pooled) if pooled > 0 else None


def welch_t(x, y, labels=("F", "M")):
    """Welch's t-test (unequal variances) with Cohen's d (pooled SD); x − y."""
    x, y = _clean(x, labels[0]), _clean(y, labels[1])
    problem = independent_t_problem(x, y)
    if problem:
        return _undefined_t("welch_t", problem, x, y, labels)
    res = sps.ttest_ind(x, y, equal_var=False)
    vx, vy = x.var(ddof=1) / x.size, y.var(ddof=1) / y.size
    df = (vx + vy) ** 2 / (vx**2 / (x.size - 1) + vy**2 / (y.size - 1)) if vx + vy > 0 else None
    p = _num(res.pvalue)
    return {
        "test": "welch_t",
        "t": _num(res.statistic),
        "df": _num(df) if df else None,
        "p": p,
        "stars": stars(p),
        "cohens_d": cohens_d(x, y),
        labels[0]: describe(x),
        labels[1]: describe(y),
    }


def student_t(x, y, labels=("F", "M")):
    x, y = _clean(x, labels[0]), _clean(y, labels[1])
    problem = independent_t_problem(x, y)
    if problem:
        return _undefined_t("student_t", problem, x, y, labels)
    res = sps.ttest_ind(x, y, equal_var=True)
    p = _num(res.pvalue)
    return {
        "test": "student_t",
        "t": _num(res.statistic),
        "df": x.size + y.size - 2,
        "p": p,
        "stars": stars(p),
        "cohens_d": cohens_d(x, y),
        labels[0]: describe(x),
        labels[1]: describe(y),
    }


def mann_whitney(x, y, labels=("F", "M")):
    """Two-sided Mann–Whitney U with the rank-biserial correlation r = 2U₁/(n₁n₂) − 1.

    The sign follows pingouin: r > 0 when x tends to be larger.
    """
    x, y = _clean(x, labels[0]), _clean(y, labels[1])
    res = sps.mannwhitneyu(x, y, alternative="two-sided")
    u = float(res.statistic)
    p = _num(res.pvalue)
    return {
        "test": "mann_whitney",
        "u": u,
        "p": p,
        "stars": stars(p),
        "rank_biserial": _num(2 * u / (x.size * y.size) - 1),
        labels[0]: describe(x),
        labels[1]: describe(y),
    }


def _each_column(test, x, y, columns, labels):
    """test(x[:, j], y[:, j]) for each column j, an error dict where it refuses the data."""
    out = {}
    for j in columns:
        try:
            out[j] = test(x[:, j], y[:, j], labels)
        except ValueError as exc:  # StatsError, or scipy refusing the data
            out[j] = {"error": str(exc)}
    return out


def _describe_columns(arr):
    """describe() of each column of a 2-D array without NaN."""
    n = arr.shape[0]
    means = arr.mean(axis=0) if n else [None] * arr.shape[1]
    sds = arr.std(axis=0, ddof=1) if n > 1 else [None] * arr.shape[1]
    return [
        {"n": n, "mean": _num(m) if m is not None else None, "sd": _num(s) if s is not None else None}
        for m, s in zip(means, sds, strict=True)
    ]


def _columns(test, x, y, labels, whole):
    """Run `test` on each column pair of x (n_x × k) and y (n_y × k): columns without NaN together, by `whole`
    (x, y, labels) -> [result per column], the others one at a time as `test` would. The results equal
    [test(x[:, j], y[:, j]) for j] (tests/measures/test_stats.py)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    k = x.shape[1]
    clean = ~(np.isnan(x).any(axis=0) | np.isnan(y).any(axis=0))
    out = _each_column(test, x, y, np.flatnonzero(~clean), labels)
    cols = np.flatnonzero(clean)
    if cols.size:
        for j, result in zip(cols, whole(x[:, cols], y[:, cols], labels), strict=True):
            out[j] = result
    return [out[j] for j in range(k)]


def _welch_whole(x, y, labels):
    nx, ny = x.shape[0], y.shape[0]
    for name, n in ((labels[0], nx), (labels[1], ny)):
        if n < 2:
            return [{"error": f"{name} needs at least two values (has {n})."}] * x.shape[1]
    res = sps.ttest_ind(x, y, equal_var=False, axis=0)
    var_x, var_y = x.var(axis=0, ddof=1), y.var(axis=0, ddof=1)
    vx, vy = var_x / nx, var_y / ny
    pooled = np.sqrt(((nx - 1) * var_x + (ny - 1) * var_y) / (nx + ny - 2))
    diff = x.mean(axis=0) - y.mean(axis=0)
    dx, dy = _describe_columns(x), _describe_columns(y)
    out = []
    for j in range(x.shape[1]):
        problem = independent_t_problem(x[:, j], y[:, j])
        if problem:
            out.append(
                _undefined_t("welch_t", problem, x[:, j], y[:, j], labels) | {labels[0]: dx[j], labels[1]: dy[j]}
            )
            continue
        df = (vx[j] + vy[j]) ** 2 / (vx[j] ** 2 / (nx - 1) + vy[j] ** 2 / (ny - 1)) if vx[j] + vy[j] > 0 else None
        p = _num(res.pvalue[j])
        out.append(
            {
                "test": "welch_t",
                "t": _num(res.statistic[j]),
                "df": _num(df) if df else None,
                "p": p,
                "stars": stars(p),
                "cohens_d": _num(diff[j] / pooled[j]) if pooled[j] > 0 else None,
                labels[0]: dx[j],
                labels[1]: dy[j],
            }
        )
    return out


def welch_t_columns(x, y, labels=("F", "M")):
    """welch_t of each column of x (n_x × k) against the same column of y (n_y × k), in one pass."""
    return _columns(welch_t, x, y, labels, _welch_whole)


def _mann_whitney_whole(x, y, labels):
    nx, ny = x.shape[0], y.shape[0]
    if nx <= 8 or ny <= 8:  # scipy may choose the exact test per column (no ties): keep its choice
        return [_each_column(mann_whitney, x, y, [j], labels)[j] for j in range(x.shape[1])]
    res = sps.mannwhitneyu(x, y, alternative="two-sided", axis=0)
    dx, dy = _describe_columns(x), _describe_columns(y)
    out = []
    for j in range(x.shape[1]):
        u, p = float(res.statistic[j]), _num(res.pvalue[j])
        out.append(
            {
                "test": "mann_whitney",
                "u": u,
                "p": p,
                "stars": stars(p),
                "rank_biserial": _num(2 * u / (nx * ny) - 1),
                labels[0]: dx[j],
                labels[1]: dy[j],
            }
        )
    return out


def mann_whitney_columns(x, y, labels=("F", "M")):
    """mann_whitney of each column of x (n_x × k) against the same column of y (n_y × k), in one pass."""
    return _columns(mann_whitney, x, y, labels, _mann_whitney_whole)


def paired_t(x, y, labels=("F", "M")):
    """Paired t-test on twin differences (x − y) with Cohen's d_z = mean(diff) / sd(diff), plus Wilcoxon."""
    if len(x) != len(y):
        raise StatsError(f"Paired samples need equal lengths ({len(x)} vs {len(y)}).")
    pairs = [
        (a, b)
        for a, b in zip(x, y, strict=True)
        if a is not None and b is not None and not (math.isnan(a) or math.isnan(b))
    ]
    if len(pairs) < 2:
        raise StatsError(f"A paired test needs at least two complete pairs (has {len(pairs)}).")
    xa = np.array([a for a, _ in pairs], dtype=float)
    ya = np.array([b for _, b in pairs], dtype=float)
    diff = xa - ya
    problem = paired_t_problem(diff)
    if problem:
        out_undefined = {
            "test": "paired_t",
            "t": None,
            "df": len(pairs) - 1,
            "p": None,
            "stars": "",
            "note": problem,
            "n_pairs": len(pairs),
            "mean_diff": _num(diff.mean()),
            "sd_diff": 0.0,
            "cohens_dz": None,
            labels[0]: describe(xa),
            labels[1]: describe(ya),
            "wilcoxon_w": None,
            "wilcoxon_p": None,
        }
        if np.any(diff != 0):
            w = sps.wilcoxon(xa, ya)
            out_undefined["wilcoxon_w"], out_undefined["wilcoxon_p"] = _num(w.statistic), _num(w.pvalue)
        return out_undefined
    res = sps.ttest_rel(xa, ya)
    sd = diff.std(ddof=1)
    p = _num(res.pvalue)
    out = {
        "test": "paired_t",
        "t": _num(res.statistic),
        "df": len(pairs) - 1,
        "p": p,
        "stars": stars(p),
        "n_pairs": len(pairs),
        "mean_diff": _num(diff.mean()),
        "sd_diff": _num(sd) if len(pairs) > 1 else None,
        "cohens_dz": _num(diff.mean() / sd) if sd > 0 else None,
        labels[0]: describe(xa),
        labels[1]: describe(ya),
    }
    if np.any(diff != 0):
        w = sps.wilcoxon(xa, ya)
        out["wilcoxon_w"], out["wilcoxon_p"] = _num(w.statistic), _num(w.pvalue)
    else:
        out["wilcoxon_w"], out["wilcoxon_p"] = None, None
    return out


def chi2_labels(counts, correction=False):
    """χ² test of independence on a groups × labels table of counts, with Cramér's V.

    `counts`: {group: {label: n}}. Labels missing from a group count 0; labels never seen are dropped; the
    continuity correction is off unless asked (it only applies to 2×2 tables).
    """
    groups = [g for g in counts if sum(counts[g].values()) > 0]
    labels = sorted({label for g in groups for label, n in counts[g].items() if n > 0})
    if len(groups) < 2:
        raise StatsError("A χ² test needs label counts for at least two groups.")
    if len(labels) < 2:
        raise StatsError("A χ² test needs at least two different labels.")
    table = np.array([[counts[g].get(label, 0) for label in labels] for g in groups], dtype=float)
    chi2, p, dof, expected = sps.chi2_contingency(table, correction=correction)
    n = table.sum()
    k = min(table.shape) - 1
    v = math.sqrt(chi2 / (n * k)) if n and k else None
    p = _num(p)
    return {
        "test": "chi2",
        "chi2": _num(chi2),
        "df": int(dof),
        "p": p,
        "stars": stars(p),
        "cramers_v": _num(v) if v is not None else None,
        "n": int(n),
        "groups": groups,
        "labels": labels,
        "table": table.astype(int).tolist(),
        "expected": np.round(expected, 3).tolist(),
        "correction": bool(correction),
        "low_expected": bool((expected < 5).any()),
    }
