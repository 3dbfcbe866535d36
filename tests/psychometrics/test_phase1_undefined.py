"""Fang Phase 1 statistics on constant, near-constant and tiny data: an undefined statistic is None with a note
saying why (rendered "—"), never a number; defined ones still match scipy."""
import re

import numpy as np
import pandas as pd
import pytest
from django.template.loader import render_to_string
from scipy import stats

from psychometrics.group_tests import (
    PAIRWISE_FAMILY,
    anova_models,
    model_by_dimension,
    one_sample_t,
    rm_anova_dimensions,
)

DIMS = ("HS", "BS", "DS")


def _long(score, models=3, subjects=2, dims=DIMS):
    return pd.DataFrame([{"model": f"m{m}", "subject": f"m{m}-s{s}", "dimension": dim, "score": score(m, s, d)}
                         for m in range(models) for s in range(subjects) for d, dim in enumerate(dims)])


def _deterministic():
    # Temperature 0, two repetitions: every model answers identically twice (no variance within a model).
    return _long(lambda m, s, d: 4.0 + 0.5 * m + 0.25 * d + 0.1 * m * d)


def _undefined(result, *keys):
    return all(result[k] is None for k in keys) and result.get("note")


def test_anova_with_zero_within_model_variance_is_undefined():
    a = anova_models(_deterministic().query("dimension == 'HS'"))
    assert _undefined(a, "F", "p", "eta2") and "within" in a["note"]
    assert a["pairwise"] == []


def test_rm_anova_and_interaction_with_deterministic_models_are_undefined():
    # Without a model × dimension pattern every subject's profile is parallel: no error variance at all.
    rm = rm_anova_dimensions(_long(lambda m, s, d: 4.0 + 0.5 * m + 0.25 * d))
    assert _undefined(rm, "F", "p", "eta2_partial") and "error variance" in rm["note"]
    # Profiles that differ between models give a defined RM ANOVA (the error comes from those differences) ...
    assert rm_anova_dimensions(_deterministic())["F"] is not None
    # ... but the mixed ANOVA's error terms (repetitions within a model) have no variance.
    inter = model_by_dimension(_deterministic())
    assert inter["rows"] and all(r["F"] is None and r["p"] is None and r["eta2_partial"] is None
                                 for r in inter["rows"])
    assert inter["note"]


def test_everything_constant():
    long = _long(lambda m, s, d: 4.0)
    assert _undefined(anova_models(long), "F", "p", "eta2")
    assert _undefined(rm_anova_dimensions(long), "F", "p", "eta2_partial")
    assert model_by_dimension(long)["note"]
    t = one_sample_t([4.0, 4.0, 4.0], 4)
    assert _undefined(t, "t", "p", "d", "df") and "variance" in t["note"]


def test_tiny_inputs():
    t = one_sample_t([5.0], 4)
    assert _undefined(t, "t", "p", "sd") and "two" in t["note"]
    one_per_model = _long(lambda m, s, d: 3.0 + m, subjects=1)
    assert _undefined(anova_models(one_per_model.query("dimension == 'HS'")), "F", "p")
    assert _undefined(rm_anova_dimensions(_long(lambda m, s, d: 3.0 + d, models=1, subjects=1)), "F", "p")
    assert model_by_dimension(_long(lambda m, s, d: 3.0 + d, models=1, subjects=1))["note"]


def test_near_constant_data_are_computed_and_match_scipy():
    # One answer differs: the statistics are defined and must equal scipy's.
    long = _deterministic()
    long.loc[0, "score"] += 1.0
    hs = long.query("dimension == 'HS'")
    a = anova_models(hs)
    ref = stats.f_oneway(*[g["score"] for _, g in hs.groupby("model")])
    assert a["F"] == pytest.approx(ref.statistic) and a["p"] == pytest.approx(ref.pvalue)
    assert a["eta2"] is not None and a["pairwise"], "post hoc table whenever the ANOVA is defined"
    assert "note" not in a


def test_rm_anova_defined_on_noisy_data_with_pairwise_family():
    rng = np.random.default_rng(3)
    long = _long(lambda m, s, d: 4 + d * 0.3 + rng.normal(), subjects=6)
    rm = rm_anova_dimensions(long)
    assert rm["F"] is not None and rm["eta2_partial"] is not None and len(rm["pairwise"]) == 3
    assert "Bonferroni" in PAIRWISE_FAMILY


def test_report_prints_no_number_where_undefined():
    long = _long(lambda m, s, d: 4.0 + 0.5 * m + 0.25 * d)
    g = {"midpoint": 4, "one_sample": [{"model": "m0", "score": "HS", **one_sample_t([4.0, 4.0], 4)}],
         "anova": {"HS": anova_models(long.query("dimension == 'HS'"))}, "rm_anova": rm_anova_dimensions(long),
         "interaction": model_by_dimension(long), "family": PAIRWISE_FAMILY}
    html = render_to_string("psychometrics/_group_tests.html", {"g": g})
    text = re.sub(r"<[^>]+>", " ", html)
    assert "None" not in text and "F( ," not in text and "= ," not in text
    assert not re.search(r"F\s*\(", text), "no F(df1, df2) line for an undefined ANOVA"
    assert "—" in text and "zero variance" in text
    assert not re.search(r"p\s*=\s*[01]\.0000", text)
