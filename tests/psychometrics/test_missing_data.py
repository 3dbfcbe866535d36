"""Missing data: item–total r and α-if-item-deleted use the same cases as the subscale α they explain; every
statistic reports its n. Reference values from pingouin (an independent implementation)."""
import numpy as np
import pandas as pd
import pingouin as pg
import pytest

from psychometrics import reliability
from psychometrics.analysis import analyze

from .test_pure import small_spec


def data_with_gaps(seed=1, n=60):
    rng = np.random.default_rng(seed)
    trait = rng.normal(size=n)
    frame = pd.DataFrame({f"i{j}": np.clip(np.round(2.5 + trait + rng.normal(scale=1.0, size=n)), 0, 5)
                          for j in range(1, 5)})
    for col, rows in (("i1", [0, 1, 2, 3]), ("i2", [4, 5, 6]), ("i3", [7, 8]), ("i4", [9, 10, 11, 12, 13])):
        frame.loc[rows, col] = np.nan
    return frame


def test_item_statistics_use_the_cases_of_the_alpha_they_explain():
    frame = data_with_gaps()
    ids = list(frame.columns)
    rows = reliability.item_statistics(frame, {"A": ids})
    complete = frame.dropna()
    alpha = reliability.cronbach_alpha(frame[ids])
    assert alpha["n"] == len(complete) == 46
    assert alpha["alpha"] == pytest.approx(pg.cronbach_alpha(complete)[0])
    for row in rows:
        others = [c for c in ids if c != row["item"]]
        assert row["n_alpha"] == len(complete)
        assert row["alpha_if_deleted"] == pytest.approx(pg.cronbach_alpha(complete[others])[0])
        expected_r = np.corrcoef(complete[row["item"]], complete[others].sum(axis=1))[0, 1]
        assert row["corrected_item_total_r"] == pytest.approx(expected_r)
        assert row["n"] == frame[row["item"]].notna().sum()  # the item's own mean and variance: all its answers


def test_analysis_reports_n_per_statistic():
    spec = small_spec()
    rng = np.random.default_rng(3)
    wide = pd.DataFrame(rng.integers(0, 6, size=(40, 4)).astype(float), columns=["a1", "a2", "b1", "b2"])
    wide.iloc[:3, 0] = np.nan
    wide.iloc[5:7, 2] = np.nan
    report = analyze(wide, spec, histograms=False)
    assert report["n_per_statistic"]["alpha"] == {"A": 37, "B": 38, "total": 35}
    assert report["n_per_statistic"]["stratified_alpha"] == 35
    assert report["n_per_statistic"]["cfa"] == report["cfa"]["n"]
    assert report["n_per_statistic"]["scores"]["total"] == report["descriptives"]["total"]["n"]
