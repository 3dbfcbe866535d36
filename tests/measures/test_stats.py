"""Tests and effect sizes against scipy run directly and pingouin."""

import numpy as np
import pingouin as pg
import pytest
from scipy import stats as sps

from measures import stats

F = [0.61, 0.72, 0.55, 0.68, 0.80, 0.47, 0.66, 0.59, 0.73, 0.62]
M = [0.70, 0.81, 0.77, 0.66, 0.90, 0.74, 0.85, 0.79, 0.72, 0.88, 0.69]


def test_welch_and_student_against_scipy_and_pingouin():
    r = stats.welch_t(F, M)
    ref = sps.ttest_ind(F, M, equal_var=False)
    pg_ref = pg.ttest(F, M, correction=True)
    assert r["t"] == pytest.approx(ref.statistic) and r["p"] == pytest.approx(ref.pvalue)
    assert r["df"] == pytest.approx(float(pg_ref["dof"].iloc[0]))
    assert r["cohens_d"] == pytest.approx(float(pg_ref["cohen_d"].iloc[0]) * np.sign(r["t"]))
    assert r["F"]["n"] == 10 and r["M"]["mean"] == pytest.approx(np.mean(M))
    s = stats.student_t(F, M)
    assert s["t"] == pytest.approx(sps.ttest_ind(F, M).statistic) and s["df"] == 19


def test_mann_whitney_against_pingouin():
    r = stats.mann_whitney(F, M)
    ref = pg.mwu(F, M, alternative="two-sided")
    assert r["u"] == pytest.approx(float(ref["U_val"].iloc[0])) and r["p"] == pytest.approx(float(ref["p_val"].iloc[0]))
    assert r["rank_biserial"] == pytest.approx(float(ref["RBC"].iloc[0]))


def test_paired_against_scipy_and_pingouin():
    x, y = F, M[:10]
    r = stats.paired_t(x, y)
    ref = sps.ttest_rel(x, y)
    assert r["t"] == pytest.approx(ref.statistic) and r["p"] == pytest.approx(ref.pvalue) and r["df"] == 9
    d = np.subtract(x, y)
    assert r["cohens_dz"] == pytest.approx(d.mean() / d.std(ddof=1))
    assert r["wilcoxon_p"] == pytest.approx(sps.wilcoxon(x, y).pvalue)
    with pytest.raises(stats.StatsError, match="equal lengths"):
        stats.paired_t([1, 2], [1])


def test_chi2_and_cramers_v_against_pingouin():
    counts = {
        "F": {"positive": 40, "neutral": 35, "negative": 25},
        "M": {"positive": 30, "neutral": 30, "negative": 45},
    }
    r = stats.chi2_labels(counts)
    table = np.array([[25, 35, 40], [45, 30, 30]])
    chi2, p, dof, _ = sps.chi2_contingency(table, correction=False)
    assert r["chi2"] == pytest.approx(chi2) and r["p"] == pytest.approx(p) and r["df"] == dof == 2
    import pandas as pd

    rows = [(g, label) for g, c in counts.items() for label, n in c.items() for _ in range(n)]
    df = pd.DataFrame(rows, columns=["gender", "label"])
    _, _, st = pg.chi2_independence(df, x="gender", y="label", correction=False)
    assert r["cramers_v"] == pytest.approx(float(st.loc[st["test"] == "pearson", "cramer"].iloc[0]))
    assert r["labels"] == ["negative", "neutral", "positive"] and r["table"][0] == [25, 35, 40]
    with pytest.raises(stats.StatsError, match="two different labels"):
        stats.chi2_labels({"F": {"a": 3}, "M": {"a": 2}})


def test_stars_and_small_samples():
    assert [stats.stars(p) for p in (0.2, 0.09, 0.04, 0.009, None)] == ["", "*", "**", "***", ""]
    with pytest.raises(stats.StatsError, match="at least two values"):
        stats.welch_t([1.0], [1.0, 2.0])


def _columns_case(rng):
    """Rate-like columns: ordinary, with ties, constant in one group, constant in both, all zero."""
    xf = rng.poisson(3, size=(40, 6)).astype(float)
    xm = rng.poisson(4, size=(55, 6)).astype(float)
    xf[:, 1], xm[:, 1] = np.round(xf[:, 1] / 3), np.round(xm[:, 1] / 3)  # many ties
    xf[:, 2] = 2.0  # constant in one group
    xf[:, 3], xm[:, 3] = 1.0, 1.0  # constant and equal in both
    xf[:, 4], xm[:, 4] = 0.0, 0.0
    xf[3, 5] = np.nan  # a text without words: left out of its column only
    return xf, xm


def test_tests_over_columns_equal_one_test_per_column():
    """The contrasts test every lexicon category at once: each column's result equals the one-column test."""
    rng = np.random.default_rng(7)
    xf, xm = _columns_case(rng)
    for many, one in ((stats.welch_t_columns, stats.welch_t), (stats.mann_whitney_columns, stats.mann_whitney)):
        results = many(xf, xm)
        assert len(results) == xf.shape[1]
        for j, got in enumerate(results):
            try:
                want = one(xf[:, j], xm[:, j])
            except ValueError as exc:
                assert got == {"error": str(exc)}
                continue
            assert got.keys() == want.keys(), (many.__name__, j)
            for key, value in want.items():
                if isinstance(value, float):
                    assert got[key] == pytest.approx(value, rel=1e-12, abs=1e-15), (many.__name__, j, key)
                else:
                    assert got[key] == value, (many.__name__, j, key)


def test_tests_over_columns_with_too_few_values_say_so_for_each_column():
    one_f = np.ones((1, 3))
    assert stats.welch_t_columns(one_f, np.ones((5, 3))) == [{"error": "F needs at least two values (has 1)."}] * 3
    small = stats.mann_whitney_columns(np.arange(12.0).reshape(4, 3), np.arange(15.0).reshape(5, 3))
    assert small == [
        stats.mann_whitney(np.arange(12.0).reshape(4, 3)[:, j], np.arange(15.0).reshape(5, 3)[:, j]) for j in range(3)
    ]  # small samples: the exact test, column by column


def test_t_tests_without_error_variance_are_undefined_with_a_reason():
    """Issue 34: the one "is it defined?" rule holds for the contrast tests too: a float-noise SD or 0/0 gives
    None and a note, never a huge t or p = 1."""
    import numpy as np

    noisy = [4.0, float(np.nextafter(4.0, 5.0))] * 5
    const = [5.0] * 10
    for x, y in ((noisy, const), (const, const)):
        for test in (stats.welch_t, stats.student_t):
            r = test(x, y)
            assert r["t"] is None and r["p"] is None and r["cohens_d"] is None and r["stars"] == "", (test, r)
            assert "variance" in r["note"]
    whole = stats.welch_t_columns(np.array([noisy, noisy]).T, np.array([const, const]).T)
    assert all(r["t"] is None and "variance" in r["note"] for r in whole)
    paired = stats.paired_t([1.0, 2.0, 3.0], [0.5, 1.5, 2.5])  # every pair differs by exactly 0.5
    assert paired["t"] is None and paired["p"] is None and paired["cohens_dz"] is None and "variance" in paired["note"]
    # Defined data still match scipy.
    from scipy import stats as sps

    ok = stats.welch_t([1.0, 2.0, 4.0], [2.0, 3.0, 7.0])
    assert ok["t"] == pytest.approx(sps.ttest_ind([1, 2, 4], [2, 3, 7], equal_var=False).statistic)
    assert "note" not in ok
