"""Fang 2025 Phase 1 tests (no Django imports): one-sample t against the scale midpoint, one-way ANOVA across
models with Bonferroni pairwise tests, repeated-measures ANOVA across dimensions, model × dimension interaction
(mixed ANOVA), all with η². Uses scipy and pingouin. Input: a long DataFrame with columns model, subject,
dimension, score (one score per subject × dimension).
"""
import functools
import warnings

import pandas as pd
from scipy import stats

from .reliability import clean


def robust(empty):
    """Degenerate data (constant scores, one subject) make pingouin drop columns or divide by zero: return the
    empty result with a note instead of failing."""
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


def one_sample_t(values, mu):
    s = pd.Series(values, dtype=float).dropna()
    out = {"n": int(len(s)), "mean": clean(s.mean()) if len(s) else None, "sd": clean(s.std(ddof=1)) if len(s) > 1 else None,
           "mu": mu, "t": None, "df": None, "p": None, "d": None}
    if len(s) < 2 or not s.std(ddof=1) > 0:
        return out
    t, p = stats.ttest_1samp(s, mu)
    out.update(t=clean(t), df=int(len(s) - 1), p=clean(p), d=clean((s.mean() - mu) / s.std(ddof=1)))
    return out


def _rows(frame):
    return [{k: (clean(v) if isinstance(v, float) else v) for k, v in row.items()} for row in frame.to_dict("records")]


@robust(lambda: {"F": None, "df1": None, "df2": None, "p": None, "eta2": None, "pairwise": [], "groups": None})
def anova_models(long, dv="score", between="model"):
    """One-way ANOVA of a score across models (η² = SS_between / SS_total) and Bonferroni pairwise t-tests."""
    import pingouin as pg

    data = long[[between, dv]].dropna()
    out = {"F": None, "df1": None, "df2": None, "p": None, "eta2": None, "pairwise": [], "groups": int(data[between].nunique())}
    if out["groups"] < 2 or len(data) <= out["groups"]:
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = pg.anova(data=data, dv=dv, between=between, detailed=True)
        ss_b, ss_w = table.loc[0, "SS"], table.loc[1, "SS"]
        out.update(F=clean(table.loc[0, "F"]), df1=int(table.loc[0, "DF"]), df2=int(table.loc[1, "DF"]),
                   p=clean(table.loc[0, "p_unc"]), eta2=clean(ss_b / (ss_b + ss_w)) if ss_b + ss_w > 0 else None)
        pairs = pg.pairwise_tests(data=data, dv=dv, between=between, padjust="bonf")
    for row in pairs.to_dict("records"):
        out["pairwise"].append({"a": row["A"], "b": row["B"], "t": clean(row["T"]), "df": clean(row["dof"]),
                                "p_unc": clean(row["p_unc"]), "p_bonf": clean(row.get("p_corr", row["p_unc"]))})
    return out


@robust(lambda: {"F": None, "df1": None, "df2": None, "p": None, "eta2_partial": None, "n": None, "pairwise": []})
def rm_anova_dimensions(long, dv="score", within="dimension", subject="subject"):
    """Repeated-measures ANOVA across dimensions (subjects with every dimension scored) with partial η² and
    Bonferroni pairwise tests."""
    import pingouin as pg

    data = long[[subject, within, dv]].dropna()
    k = data[within].nunique()
    complete = data.groupby(subject)[within].nunique()
    data = data[data[subject].isin(complete[complete == k].index)]
    out = {"F": None, "df1": None, "df2": None, "p": None, "eta2_partial": None, "n": int(data[subject].nunique()), "pairwise": []}
    if k < 2 or out["n"] < 2:
        return out
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = pg.rm_anova(data=data, dv=dv, within=within, subject=subject, detailed=True)
        out.update(F=clean(table.loc[0, "F"]), df1=int(table.loc[0, "DF"]), df2=int(table.loc[1, "DF"]),
                   p=clean(table.loc[0, "p_unc"]), eta2_partial=clean(table.loc[0, "SS"] / (table.loc[0, "SS"] + table.loc[1, "SS"])))
        pairs = pg.pairwise_tests(data=data, dv=dv, within=within, subject=subject, padjust="bonf")
    for row in pairs.to_dict("records"):
        out["pairwise"].append({"a": row["A"], "b": row["B"], "t": clean(row["T"]), "df": clean(row["dof"]),
                                "p_unc": clean(row["p_unc"]), "p_bonf": clean(row.get("p_corr", row["p_unc"]))})
    return out


@robust(lambda: {"rows": []})
def model_by_dimension(long, dv="score", within="dimension", between="model", subject="subject"):
    """Mixed ANOVA: dimension (within) × model (between); the interaction row answers Fang's model × dimension."""
    import pingouin as pg

    data = long[[subject, within, between, dv]].dropna()
    k = data[within].nunique()
    complete = data.groupby(subject)[within].nunique()
    data = data[data[subject].isin(complete[complete == k].index)]
    if k < 2 or data[between].nunique() < 2 or data[subject].nunique() < 3:
        return {"rows": []}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table = pg.mixed_anova(data=data, dv=dv, within=within, between=between, subject=subject)
    return {"rows": [{"source": r["Source"], "F": clean(r["F"]), "df1": clean(r["DF1"]), "df2": clean(r["DF2"]),
                      "p": clean(r["p_unc"]), "eta2_partial": clean(r["np2"])} for r in table.to_dict("records")]}
