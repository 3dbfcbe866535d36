"""Issue 34, items 1-2: pairwise t-tests go through the same "is it defined?" rule as one_sample_t and the ANOVA
(an undefined t is None with a reason, never a float-noise number or 0/0), and the Bonferroni family is every
planned comparison (k(k-1)/2 pairs), whether or not some of them are undefined."""

import itertools
import json
import re

import numpy as np
import pandas as pd
import pytest
from django.template.loader import render_to_string
from scipy import stats

from psychometrics.group_tests import (
    PAIRWISE_FAMILY,
    anova_models,
    between_groups,
    rm_anova_dimensions,
)


def _fang_like():
    """Four models, ten answers each on one score: 'const' always answers 4 but its recoded mean carries
    float noise, fake-a and fake-b always answer 5, 'real' varies."""
    rng = np.random.default_rng(11)
    const = [4.0, float(np.nextafter(4.0, 5.0))] * 5  # a recoded mean's float noise: SD about 5e-16
    rows = [{"model": "const", "score": v} for v in const]
    rows += [{"model": "fake-a", "score": 5.0} for _ in range(10)]
    rows += [{"model": "fake-b", "score": 5.0} for _ in range(10)]
    rows += [{"model": "real", "score": float(v)} for v in 4.6 + rng.normal(0, 0.5, 10)]
    return pd.DataFrame(rows)


def test_undefined_pairs_are_none_with_a_reason_and_defined_ones_match_scipy():
    data = _fang_like()
    assert data.query("model == 'const'")["score"].std() > 0, "the fixture must carry float noise"
    a = anova_models(data)
    assert a["F"] is not None
    pairs = {(p["a"], p["b"]): p for p in a["pairwise"]}
    assert len(pairs) == 6
    groups = {m: g["score"].to_numpy() for m, g in data.groupby("model")}
    for x, y in itertools.combinations(sorted(groups), 2):
        p = pairs.get((x, y)) or pairs[(y, x)]
        if "real" in (x, y):
            ref = stats.ttest_ind(groups[p["a"]], groups[p["b"]])
            assert p["t"] == pytest.approx(ref.statistic) and p["p_unc"] == pytest.approx(ref.pvalue)
            assert p["p_bonf"] == pytest.approx(min(1.0, ref.pvalue * 6))
            assert p["note"] is None
        else:
            # const vs fake-*: float noise only; fake-a vs fake-b: 0/0. Neither is a number.
            assert p["t"] is None and p["p_unc"] is None and p["p_bonf"] is None, p
            assert "variance" in p["note"]
    json.dumps(a, allow_nan=False)


def test_bonferroni_family_keeps_every_planned_pair():
    data = _fang_like()
    a = anova_models(data)
    assert a["comparisons"] == 6
    defined = [p for p in a["pairwise"] if p["t"] is not None]
    assert len(defined) == 3
    for p in defined:
        assert p["p_bonf"] == pytest.approx(min(1.0, 6 * p["p_unc"]))


def test_paired_dimension_pairs_with_constant_differences_are_undefined():
    # Every subject's BS is exactly HS + 0.5 (deterministic), DS varies: HS vs BS undefined, the others defined.
    rng = np.random.default_rng(2)
    rows = []
    for s in range(8):
        hs = 4 + rng.normal()
        for dim, v in (("HS", hs), ("BS", hs + 0.5), ("DS", 4 + rng.normal())):
            rows.append({"model": f"m{s % 2}", "subject": f"s{s}", "dimension": dim, "score": v})
    long = pd.DataFrame(rows)
    rm = rm_anova_dimensions(long)
    assert rm["F"] is not None and rm["comparisons"] == 3
    pairs = {frozenset((p["a"], p["b"])): p for p in rm["pairwise"]}
    hs_bs = pairs[frozenset(("HS", "BS"))]
    assert hs_bs["t"] is None and hs_bs["p_bonf"] is None and "variance" in hs_bs["note"]
    wide = long.pivot(index="subject", columns="dimension", values="score")
    p = pairs[frozenset(("HS", "DS"))]
    ref = stats.ttest_rel(wide[p["a"]], wide[p["b"]])
    assert p["t"] == pytest.approx(ref.statistic) and p["p_bonf"] == pytest.approx(min(1.0, 3 * ref.pvalue))


def test_between_groups_gives_the_same_pairwise_table():
    data = _fang_like()
    bg = between_groups({m: g["score"] for m, g in data.groupby("model")})
    a = anova_models(data)
    assert bg["comparisons"] == 6
    assert bg["pairwise"] == a["pairwise"]


def test_page_states_the_family_and_shows_dash_with_reason():
    a = anova_models(_fang_like())
    g = {"midpoint": 4, "one_sample": [], "anova": {"total": a}, "rm_anova": None, "interaction": None}
    g["family"] = PAIRWISE_FAMILY
    html = render_to_string("psychometrics/_group_tests.html", {"g": g})
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))
    assert "6 comparisons" in text
    assert "2251799813685" not in text and "e+" not in text
    row = re.search(r"fake-a vs fake-b(.*?)(const|real|$)", text).group(1)
    assert "—" in row and "variance" in row and "1.0000" not in row
