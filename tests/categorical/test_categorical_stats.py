"""Pure helpers: exclusion, full agreement, majority with ties, χ² with Cramér's V (checked against scipy)."""

import numpy as np
import pytest
from scipy.stats import chi2_contingency
from scipy.stats.contingency import association

from stereoscope import categorical_stats as cs


def test_exclusion_full_agreement_and_majority():
    ratings = [
        (1, "a", "pos"),
        (1, "b", "pos"),
        (2, "a", "neg"),
        (2, "b", "pos"),
        (3, "a", "unc"),
        (3, "b", "pos"),
        (4, "a", "neg"),
    ]
    kept, dropped = cs.drop_excluded(ratings, ["unc"])
    assert dropped == [3] and all(u != 3 for u, _, _ in kept)
    assert cs.full_agreement_share(kept) == (0.5, 2)  # unit 4 has one rating: not pairable
    majority = {m.unit: m for m in cs.majority_labels(kept, order=["neg", "pos"])}
    assert (majority[1].label, majority[1].tie) == ("pos", False)
    assert (majority[2].label, majority[2].tie, majority[2].counts) == (None, True, {"neg": 1, "pos": 1})


def test_contrast_matches_scipy_and_says_when_undefined():
    pairs = (
        [("F", "pos")] * 12
        + [("F", "neu")] * 5
        + [("F", "neg")] * 3
        + [("M", "pos")] * 4
        + [("M", "neu")] * 6
        + [("M", "neg")] * 10
    )
    result = cs.contrast(pairs, labels=["neg", "neu", "pos"], groups=["F", "M"])
    table = np.array([[3, 5, 12], [10, 6, 4]])
    stat, p, df, _ = chi2_contingency(table, correction=False)
    assert result.table == table.tolist() and result.df == df == 2
    assert result.chi2 == pytest.approx(stat) and result.p_value == pytest.approx(p)
    assert result.cramers_v == pytest.approx(association(table, method="cramer"))
    flat = cs.contrast([("F", "pos"), ("M", "pos")], labels=["neg", "pos"], groups=["F", "M"])
    assert flat.chi2 is None and any("undefined" in n for n in flat.notes) and any("neg" in n for n in flat.notes)
