"""Fang 2025 Phase 1 tests (no Django imports): one-sample t against the scale midpoint, one-way ANOVA across
models with Bonferroni pairwise tests, repeated-measures ANOVA across dimensions, model × dimension interaction
(mixed ANOVA), all with η². Uses scipy and pingouin. Input: a long DataFrame with columns model, subject,
dimension, score (one score per subject × dimension).

A statistic that is undefined for the data (zero variance, too few cases) is None with a `note` saying why; it is
never replaced by a number. Deterministic models (temperature 0, identical repetitions) are the usual cause.
"""

import functools
import warnings
from itertools import combinations

import numpy as np
import pandas as pd
from scipy import stats

from stereoscope.stats.defined import independent_t_problem, negligible, paired_t_problem, sum_squares

from .reliability import clean

PAIRWISE_FAMILY = (
    "Post hoc: Student t-tests for every pair of models within one score (independent samples) and "
    "for every pair of dimensions (paired, same subjects); p-values Bonferroni-corrected within each "
    "family (p × the number of planned pairs, capped at 1; an undefined pair still counts). Shown whenever the "
    "ANOVA is defined."
)


def robust(empty):
    """Data that pingouin cannot handle (it drops columns or divides by zero): return the empty result with a note
    instead of failing."""

    def wrap(fn):
        @functools.wraps(fn)
        def inner(*args, **kwargs):
            try:
                return fn(*args, **kwargs)
            except (KeyError, ValueError, ZeroDivisionError, IndexError, AssertionError) as exc:
                out = empty()
                out["note"] = f"Not computable for these data ({type(exc).__name__})."
                return out

        return inner

    return wrap


# THE "is it defined?" rule (stereoscope.stats.defined) for every statistic here: an error sum of squares that is noise
# next to its reference makes the statistic dividing by it undefined (None with a note), never a number.
_negligible = negligible
_sum_squares = sum_squares


def one_sample_t(values, mu):
    s = pd.Series(values, dtype=float).dropna()
    sd = s.std(ddof=1) if len(s) > 1 else None
    out = {
        "n": int(len(s)),
        "mean": clean(s.mean()) if len(s) else None,
        "sd": clean(sd),
        "mu": mu,
        "t": None,
        "df": None,
        "p": None,
        "d": None,
    }
    if len(s) < 2:
        out["note"] = "Needs at least two answers."
        return out
    if _negligible(_sum_squares(s), float((s**2).sum())):
        out["sd"] = 0.0
        out["note"] = "Zero variance: every answer is the same, so t is undefined."
        return out
    t, p = stats.ttest_1samp(s, mu)
    out.update(t=clean(t), df=int(len(s) - 1), p=clean(p), d=clean((s.mean() - mu) / sd))
    return out


def _pairwise(data, dv, factor, subject=None):
    """Student t for every planned pair of levels of `factor` (independent samples, or paired on `subject`), each
    through the same "is it defined?" rule as every other statistic here: a pair whose error variance is negligible
    (both groups constant, or every paired difference the same) has t, p and p_bonf None and a `note` saying why.
    The Bonferroni family is every planned pair, k(k-1)/2, whether or not some are undefined: p_bonf = min(1, p × m).
    Returns (rows, m)."""
    levels = list(dict.fromkeys(data[factor]))
    pairs = list(combinations(levels, 2))
    family = len(pairs)
    wide = data.pivot_table(index=subject, columns=factor, values=dv) if subject is not None else None
    rows = []
    for a, b in pairs:
        row = {"a": a, "b": b, "t": None, "df": None, "p_unc": None, "p_bonf": None, "note": None}
        if subject is not None:
            both = wide[[a, b]].dropna()
            diff = both[a] - both[b]
            row["df"] = int(len(diff) - 1) if len(diff) > 1 else None
            if len(diff) < 2:
                row["note"] = "Needs at least two subjects scored on both."
            elif paired_t_problem(diff):
                row["note"] = paired_t_problem(diff)
            else:
                result = stats.ttest_rel(both[a], both[b])
                row.update(t=clean(result.statistic), p_unc=clean(result.pvalue))
        else:
            x = data.loc[data[factor] == a, dv].to_numpy(dtype=float)
            y = data.loc[data[factor] == b, dv].to_numpy(dtype=float)
            row["df"] = int(len(x) + len(y) - 2) if len(x) and len(y) else None
            if len(x) < 2 or len(y) < 2:
                row["note"] = "Each group needs at least two scores."
            elif independent_t_problem(x, y):
                row["note"] = independent_t_problem(x, y)
            else:
                result = stats.ttest_ind(x, y)
                row.update(t=clean(result.statistic), p_unc=clean(result.pvalue))
        if row["t"] is None or row["p_unc"] is None:
            row.update(t=None, p_unc=None)
            row["note"] = row["note"] or "Not computable for these data."
        else:
            row["p_bonf"] = min(1.0, row["p_unc"] * family)
        rows.append(row)
    return rows, family


def _anova_problem(data, dv, between):
    groups = data[between].nunique()
    if groups < 2:
        return "Needs at least two models."
    if len(data) <= groups:
        return f"Too few cases: {len(data)} scores for {groups} models (needs more scores than models)."
    total = _sum_squares(data[dv])
    if _negligible(total, float((data[dv] ** 2).sum())):
        return "Zero variance: every score is the same."
    within = float(data.groupby(between)[dv].apply(_sum_squares).sum())
    if _negligible(within, total):
        return "Zero variance within every model (each model gave the same score every time), so F is undefined."
    return None


@robust(
    lambda: {
        "F": None,
        "df1": None,
        "df2": None,
        "p": None,
        "eta2": None,
        "pairwise": [],
        "comparisons": None,
        "groups": None,
    }
)
def anova_models(long, dv="score", between="model"):
    """One-way ANOVA of a score across models (η² = SS_between / SS_total) and Bonferroni pairwise t-tests."""
    import pingouin as pg  # lazy: heavy library, loaded on first use

    data = long[[between, dv]].dropna()
    out = {
        "F": None,
        "df1": None,
        "df2": None,
        "p": None,
        "eta2": None,
        "pairwise": [],
        "comparisons": None,
        "groups": int(data[between].nunique()),
    }
    problem = _anova_problem(data, dv, between)
    if problem:
        out["note"] = problem
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = pg.anova(data=data, dv=dv, between=between, detailed=True)
        ss_b, ss_w = table.loc[0, "SS"], table.loc[1, "SS"]
        out.update(
            F=clean(table.loc[0, "F"]),
            df1=int(table.loc[0, "DF"]),
            df2=int(table.loc[1, "DF"]),
            p=clean(table.loc[0, "p_unc"]),
            eta2=clean(ss_b / (ss_b + ss_w)),
        )
    out["pairwise"], out["comparisons"] = _pairwise(data, dv, between)
    return out


def _complete_subjects(data, within, subject):
    k = data[within].nunique()
    complete = data.groupby(subject)[within].nunique()
    return data[data[subject].isin(complete[complete == k].index)], k


def _repeated_error(data, dv, within, subject, between=None):
    """(SS total, SS of subjects within groups, SS residual of the within-subject factor)."""
    total = _sum_squares(data[dv])
    subject_means = data.groupby(subject)[dv].transform("mean")
    cell_keys = [within] if between is None else [between, within]
    cell_means = data.groupby(cell_keys)[dv].transform("mean")
    group_means = data[dv].mean() if between is None else data.groupby(between)[dv].transform("mean")
    residual = float(((data[dv] - subject_means - cell_means + group_means) ** 2).sum())
    subjects = float(((subject_means - group_means) ** 2).sum())
    return total, subjects, residual


@robust(
    lambda: {
        "F": None,
        "df1": None,
        "df2": None,
        "p": None,
        "eta2_partial": None,
        "n": None,
        "pairwise": [],
        "comparisons": None,
    }
)
def rm_anova_dimensions(long, dv="score", within="dimension", subject="subject"):
    """Repeated-measures ANOVA across dimensions (subjects with every dimension scored) with partial η² and
    Bonferroni pairwise tests."""
    import pingouin as pg  # lazy: heavy library, loaded on first use

    data, k = _complete_subjects(long[[subject, within, dv]].dropna(), within, subject)
    out = {
        "F": None,
        "df1": None,
        "df2": None,
        "p": None,
        "eta2_partial": None,
        "n": int(data[subject].nunique()),
        "pairwise": [],
        "comparisons": None,
    }
    if k < 2:
        out["note"] = "Needs at least two dimensions."
        return out
    if out["n"] < 2:
        out["note"] = f"Too few subjects with every dimension scored (n = {out['n']}; needs at least two)."
        return out
    total, _, residual = _repeated_error(data, dv, within, subject)
    if _negligible(total, float((data[dv] ** 2).sum())):
        out["note"] = "Zero variance: every score is the same."
        return out
    if _negligible(residual, total):
        out["note"] = (
            "Zero error variance: every subject's scores differ across dimensions by exactly the same "
            "amounts (identical repetitions), so F is undefined."
        )
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = pg.rm_anova(data=data, dv=dv, within=within, subject=subject, detailed=True)
        out.update(
            F=clean(table.loc[0, "F"]),
            df1=int(table.loc[0, "DF"]),
            df2=int(table.loc[1, "DF"]),
            p=clean(table.loc[0, "p_unc"]),
            eta2_partial=clean(table.loc[0, "SS"] / (table.loc[0, "SS"] + table.loc[1, "SS"])),
        )
    out["pairwise"], out["comparisons"] = _pairwise(data, dv, within, subject=subject)
    return out


@robust(lambda: {"rows": []})
def model_by_dimension(long, dv="score", within="dimension", between="model", subject="subject"):
    """Mixed ANOVA: dimension (within) × model (between); the interaction row answers Fang's model × dimension.
    A row whose error term has no variance is kept with F, p and partial η² None and a note."""
    import pingouin as pg  # lazy: heavy library, loaded on first use

    data, k = _complete_subjects(long[[subject, within, between, dv]].dropna(), within, subject)
    if k < 2 or data[between].nunique() < 2:
        return {"rows": [], "note": "Needs at least two dimensions and two models."}
    if data[subject].nunique() <= data[between].nunique():
        return {"rows": [], "note": "Too few subjects: needs more subjects (repetitions) than models."}
    total, subjects, residual = _repeated_error(data, dv, within, subject, between)
    if _negligible(total, float((data[dv] ** 2).sum())):
        return {"rows": [], "note": "Zero variance: every score is the same."}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = pg.mixed_anova(data=data, dv=dv, within=within, between=between, subject=subject)
    rows, notes = [], []
    for r in table.to_dict("records"):
        error = subjects if r["Source"] == between else residual
        row = {
            "source": r["Source"],
            "F": clean(r["F"]),
            "df1": clean(r["DF1"]),
            "df2": clean(r["DF2"]),
            "p": clean(r["p_unc"]),
            "eta2_partial": clean(r["np2"]),
        }
        if _negligible(error, total) or row["F"] is None:
            row.update(F=None, p=None, eta2_partial=None)
            notes.append(r["Source"])
        rows.append(row)
    out = {"rows": rows}
    if notes:
        out["note"] = (
            f"Undefined for {', '.join(notes)}: zero variance in the error term (repetitions of a model "
            "gave identical scores)."
        )
    return out


def between_groups(values_by_group):
    """A score compared across groups: Welch t with Cohen's d (pooled SD) for two groups, one-way ANOVA with η²
    for more. values_by_group: {group: values}. Undefined statistics are None with a note."""
    groups = {name: pd.Series(values, dtype=float).dropna() for name, values in values_by_group.items()}
    groups = {name: s for name, s in groups.items() if len(s)}
    sizes = {name: int(len(s)) for name, s in groups.items()}
    means = {name: clean(s.mean()) for name, s in groups.items()}
    if len(groups) < 2:
        return {"test": None, "n": sizes, "means": means, "note": "Needs at least two groups with scores."}
    if len(groups) == 2:
        (name_a, a), (name_b, b) = groups.items()
        out = {
            "test": "Welch t",
            "groups": [name_a, name_b],
            "n": sizes,
            "means": means,
            "t": None,
            "df": None,
            "p": None,
            "d": None,
        }
        if len(a) < 2 or len(b) < 2:
            out["note"] = "Each group needs at least two scores."
            return out
        if _negligible(_sum_squares(a) + _sum_squares(b), _sum_squares(pd.concat([a, b]))):
            out["note"] = "Zero variance within both groups: t is undefined."
            return out
        result = stats.ttest_ind(a, b, equal_var=False)
        va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
        df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
        pooled = np.sqrt(((len(a) - 1) * a.var(ddof=1) + (len(b) - 1) * b.var(ddof=1)) / (len(a) + len(b) - 2))
        out.update(
            t=clean(result.statistic),
            df=clean(df),
            p=clean(result.pvalue),
            d=clean((a.mean() - b.mean()) / pooled) if pooled > 0 else None,
        )
        return out
    data = pd.DataFrame([{"group": name, "score": v} for name, s in groups.items() for v in s])
    out = {
        "test": "one-way ANOVA",
        "groups": list(groups),
        "n": sizes,
        "means": means,
        "F": None,
        "df1": None,
        "df2": None,
        "p": None,
        "eta2": None,
        "pairwise": [],
        "comparisons": None,
    }
    problem = _anova_problem(data, "score", "group")
    if problem:
        out["note"] = problem.replace("models", "groups").replace("model", "group")
        return out
    result = stats.f_oneway(*groups.values())
    total = _sum_squares(data["score"])
    within = float(sum(_sum_squares(s) for s in groups.values()))
    out.update(
        F=clean(result.statistic),
        df1=len(groups) - 1,
        df2=int(len(data) - len(groups)),
        p=clean(result.pvalue),
        eta2=clean((total - within) / total),
    )
    out["pairwise"], out["comparisons"] = _pairwise(data, "score", "group")
    return out
