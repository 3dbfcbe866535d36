"""Pure helpers: exclusion, full agreement, majority with ties, χ² with Cramér's V (checked against scipy)."""

import numpy as np
import pytest
from scipy.stats import chi2_contingency
from scipy.stats.contingency import association

from stereoscope.stats import categorical as cs


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


def test_strict_majority_against_plurality_and_minimum_raters():
    """Issue 34: "majority" means more than half of the raters (default); plurality is an option; a unit needs a
    minimum number of raters (default 2). Each label carries n raters and the share agreeing."""
    ratings = [
        *[(1, r, v) for r, v in zip("abcd", ["pos", "pos", "neg", "neu"], strict=True)],  # 2 of 4: plurality only
        *[(2, r, v) for r, v in zip("abc", ["pos", "pos", "neg"], strict=True)],  # 2 of 3: strict majority
        (3, "a", "neg"),  # one rater
        *[(4, r, v) for r, v in zip("abcd", ["pos", "pos", "neg", "neg"], strict=True)],  # 2-2 tie
    ]
    strict = {m.unit: m for m in cs.majority_labels(ratings)}
    assert strict[1].label is None and not strict[1].tie and "majority" in strict[1].reason
    assert (strict[1].share, strict[1].n_ratings) == (0.5, 4)
    assert strict[2].label == "pos" and strict[2].share == pytest.approx(2 / 3) and strict[2].reason == ""
    assert strict[3].label is None and "2 raters" in strict[3].reason and strict[3].n_ratings == 1
    assert strict[4].label is None and strict[4].tie and strict[4].reason == "tie"
    plural = {m.unit: m for m in cs.majority_labels(ratings, rule="plurality")}
    assert plural[1].label == "pos" and plural[1].share == 0.5
    assert plural[3].label is None  # the minimum number of raters still holds
    assert plural[4].label is None and plural[4].tie
    one = {m.unit: m for m in cs.majority_labels(ratings, rule="plurality", min_raters=1)}
    assert one[3].label == "neg" and one[3].share == 1.0
    with pytest.raises(ValueError):
        cs.majority_labels(ratings, rule="most")
