"""The pure agreement module against published worked examples and reference libraries."""

import math

import krippendorff
import numpy as np
import pytest
from statsmodels.stats.inter_rater import aggregate_raters, cohens_kappa, fleiss_kappa

from stereoscope.stats import agreement as ag

nan = np.nan

# Krippendorff, K. (2011). Computing Krippendorff's alpha-reliability. Annenberg School for Communication,
# University of Pennsylvania, section C ("nominal data, any number of observers, missing data"):
# 4 observers × 12 units, values 1-5, 7 missing. Published: nominal .743, ordinal .815, interval .849, ratio .797.
KRIPPENDORFF_2011 = [
    [1, 2, 3, 3, 2, 1, 4, 1, 2, nan, nan, nan],
    [1, 2, 3, 3, 2, 2, 4, 1, 2, 5, nan, 3],
    [nan, 3, 3, 3, 2, 3, 4, 2, 2, 5, 1, nan],
    [1, 2, 3, 3, 2, 4, 4, 1, 2, 5, 1, nan],
]

# Fleiss, J. L. (1971). Measuring nominal scale agreement among many raters. Psychological Bulletin 76(5), 378-382,
# Table 1: 30 patients, 6 psychiatrists each, 5 diagnoses (1 depression, 2 personality disorder, 3 schizophrenia,
# 4 neurosis, 5 other). Published kappa = .430. Ratings per patient as in R irr::diagnoses.
FLEISS_1971 = [
    [4, 4, 4, 4, 4, 4],
    [2, 2, 2, 5, 5, 5],
    [2, 3, 3, 3, 3, 5],
    [5, 5, 5, 5, 5, 5],
    [2, 2, 2, 4, 4, 4],
    [1, 1, 3, 3, 3, 3],
    [3, 3, 3, 3, 5, 5],
    [1, 1, 3, 3, 3, 4],
    [1, 1, 4, 4, 4, 4],
    [5, 5, 5, 5, 5, 5],
    [1, 4, 4, 4, 4, 4],
    [1, 2, 4, 4, 4, 4],
    [2, 2, 2, 3, 3, 3],
    [1, 4, 4, 4, 4, 4],
    [2, 2, 4, 4, 4, 5],
    [3, 3, 3, 3, 3, 5],
    [1, 1, 1, 4, 5, 5],
    [1, 1, 1, 1, 1, 2],
    [2, 2, 4, 4, 4, 4],
    [1, 3, 3, 5, 5, 5],
    [5, 5, 5, 5, 5, 5],
    [2, 4, 4, 4, 4, 4],
    [2, 2, 4, 5, 5, 5],
    [1, 1, 4, 4, 4, 4],
    [1, 4, 4, 4, 4, 5],
    [2, 2, 2, 2, 2, 4],
    [1, 1, 1, 1, 5, 5],
    [2, 2, 4, 4, 4, 4],
    [1, 3, 3, 3, 3, 3],
    [5, 5, 5, 5, 5, 5],
]

# SAS/STAT User's Guide, PROC FREQ "AGREE" example output (also used in statsmodels' test suite): a 3 × 3 table,
# simple kappa .4842, weighted kappa (Cicchetti-Allison, i.e. linear weights) .4701.
SAS_TABLE = [[0, 4, 1], [0, 8, 0], [0, 1, 5]]


def expand_table(table):
    a, b = [], []
    for i, row in enumerate(table):
        for j, count in enumerate(row):
            a += [i] * count
            b += [j] * count
    return [a, b]


@pytest.mark.parametrize(
    "level,published", [("nominal", 0.743), ("ordinal", 0.815), ("interval", 0.849), ("ratio", 0.797)]
)
def test_krippendorff_2011_reliability_data(level, published):
    rm = ag.from_matrix(KRIPPENDORFF_2011)
    result = ag.agreement(rm, level=level, bootstrap=0)
    assert round(result.krippendorff_alpha, 3) == published
    assert result.n_ratings == 41
    # the bootstrap path computes alpha from its own coincidence features: it must agree with the package
    feats = ag._Features(rm)
    own = feats.krippendorff_alpha(feats.totals(), level).outcome().value
    assert own == pytest.approx(result.krippendorff_alpha, abs=1e-12)


def test_gwet_ac1_and_percent_agreement_on_gwet_example():
    # Gwet, K. L. (2014). Handbook of Inter-Rater Reliability, 4th ed., and the irrCAC package's `cac.raw4raters`
    # data (the same 4 raters × 12 units as Krippendorff 2011): AC1 = 0.7754, percent agreement = 0.8182.
    result = ag.agreement(ag.from_matrix(KRIPPENDORFF_2011), bootstrap=0)
    assert round(result.gwet_ac1, 4) == 0.7754
    assert round(result.percent_agreement, 4) == 0.8182


def test_fleiss_1971_worked_example():
    rm = ag.from_matrix(np.asarray(FLEISS_1971).T)
    result = ag.agreement(rm, bootstrap=0)
    assert round(result.fleiss_kappa, 3) == 0.430
    assert result.fleiss_kappa == pytest.approx(fleiss_kappa(aggregate_raters(np.asarray(FLEISS_1971))[0]), abs=1e-12)


def test_cohen_kappa_sas_textbook_table():
    result = ag.agreement(ag.from_matrix(expand_table(SAS_TABLE)), bootstrap=0)
    assert round(result.cohen_kappa_mean, 4) == 0.4842
    assert round(result.cohen_kappa_weighted_mean, 4) == 0.4701
    assert result.pairs[0]["n_units"] == 19


def test_cohen_pairs_match_statsmodels_and_quadratic_weights():
    rng = np.random.default_rng(3)
    truth = rng.integers(0, 4, 200)
    data = np.where(rng.random((3, 200)) < 0.7, truth, rng.integers(0, 4, (3, 200)))
    rm = ag.from_matrix(data)
    result = ag.agreement(rm, bootstrap=0)
    for pair in result.pairs:
        table = np.zeros((4, 4))
        for x, y in zip(data[pair["rater_a"]], data[pair["rater_b"]], strict=True):
            table[x, y] += 1
        assert pair["kappa"] == pytest.approx(cohens_kappa(table, return_results=False), abs=1e-12)
        assert pair["weighted_kappa"] == pytest.approx(
            cohens_kappa(table, wt="linear", return_results=False), abs=1e-12
        )
        quad = ag.cohen_kappa_table(table, categories=[0, 1, 2, 3], weights="quadratic").value
        assert quad == pytest.approx(cohens_kappa(table, wt="quadratic", return_results=False), abs=1e-12)
    assert result.cohen_kappa_mean == pytest.approx(np.mean([p["kappa"] for p in result.pairs]))


def test_random_data_alpha_matches_package_at_every_level_with_missing():
    rng = np.random.default_rng(7)
    data = rng.integers(1, 6, (5, 300)).astype(float)
    data[rng.random(data.shape) < 0.25] = nan
    rm = ag.from_matrix(data)
    for level in ag.LEVELS:
        expected = krippendorff.alpha(reliability_data=data, level_of_measurement=level)
        assert ag.agreement(rm, level=level, bootstrap=0).krippendorff_alpha == pytest.approx(expected, abs=1e-12)


def test_bootstrap_interval_contains_estimate_and_is_reproducible():
    rng = np.random.default_rng(11)
    truth = rng.integers(0, 2, 400)
    data = np.where(rng.random((4, 400)) < 0.85, truth, 1 - truth).astype(float)
    rm = ag.from_matrix(data)
    first = ag.agreement(rm, bootstrap=300, seed=5)
    second = ag.agreement(rm, bootstrap=300, seed=5)
    assert first.ci95 == second.ci95
    for name in ag.COEFFICIENTS:
        low, high = first.ci95[name]
        assert low < getattr(first, name) < high
        assert high - low < 0.2
    other = ag.agreement(rm, bootstrap=300, seed=6)
    assert other.ci95["krippendorff_alpha"] != first.ci95["krippendorff_alpha"]


def test_bootstrap_matches_naive_resampling():
    """A replicate's pattern-count totals equal the coefficients recomputed on an explicitly resampled matrix."""
    rng = np.random.default_rng(2)
    data = rng.integers(0, 3, (3, 50)).astype(float)
    data[rng.random(data.shape) < 0.1] = nan
    feats = ag._Features(ag.from_matrix(data))
    idx = rng.integers(0, 50, 50)
    pattern_counts = np.bincount(feats.inverse[idx], minlength=len(feats.freq)).astype(float)
    T = np.asarray(feats.matrix.T @ pattern_counts).reshape(1, -1)
    resampled = ag.agreement(ag.from_matrix(data[:, idx]), bootstrap=0)
    for level in ag.LEVELS:
        expected = krippendorff.alpha(reliability_data=data[:, idx], level_of_measurement=level)
        assert feats.krippendorff_alpha(T, level).outcome().value == pytest.approx(expected, abs=1e-12)
    assert feats.gwet_ac1(T).outcome().value == pytest.approx(resampled.gwet_ac1, abs=1e-12)
    assert feats.percent_agreement(T).outcome().value == pytest.approx(resampled.percent_agreement, abs=1e-12)
    assert feats.cohen_mean(T).outcome().value == pytest.approx(resampled.cohen_kappa_mean, abs=1e-12)


def _no_nan(obj):
    if isinstance(obj, float):
        return not math.isnan(obj)
    if isinstance(obj, dict):
        return all(_no_nan(v) for v in obj.values())
    if isinstance(obj, (list, tuple)):
        return all(_no_nan(v) for v in obj)
    return True


def test_all_raters_agree_on_one_value_is_null_with_notes():
    result = ag.agreement(ag.from_matrix([[1, 1, 1, 1], [1, 1, 1, 1], [1, 1, 1, 1]]), bootstrap=100)
    for name in ("krippendorff_alpha", "fleiss_kappa", "cohen_kappa_mean", "gwet_ac1"):
        assert getattr(result, name) is None
        assert any(note.startswith(name) for note in result.notes), name
    assert result.percent_agreement == 1.0
    assert _no_nan(result.as_dict())


def test_one_unit_only_is_null_with_note():
    result = ag.agreement(ag.from_matrix([[1], [2], [1]]), bootstrap=100)
    for name in ("krippendorff_alpha", "fleiss_kappa", "cohen_kappa_mean", "gwet_ac1"):
        assert getattr(result, name) is None
    assert any("only one unit" in note for note in result.notes)
    assert all(v is None for v in result.ci95.values())
    assert _no_nan(result.as_dict())


def test_one_rater_only_is_null_with_note():
    result = ag.agreement(ag.from_long([("u1", "ann", 1), ("u2", "ann", 0)]), bootstrap=100)
    assert all(getattr(result, name) is None for name in ag.COEFFICIENTS)
    assert result.notes == ["only one rater: agreement needs at least two raters"]


def test_no_ratings_and_no_overlap_do_not_crash():
    empty = ag.agreement(ag.from_long([("u1", "a", ""), ("u1", "b", "")]), bootstrap=50)
    assert empty.n_ratings == 0 and empty.krippendorff_alpha is None and empty.percent_agreement is None
    disjoint = ag.agreement(ag.from_long([("u1", "a", 1), ("u2", "b", 0)]), bootstrap=50)
    assert disjoint.krippendorff_alpha is None and disjoint.percent_agreement is None
    assert _no_nan(disjoint.as_dict()) and _no_nan(empty.as_dict())


def test_fleiss_null_when_units_have_different_numbers_of_ratings():
    result = ag.agreement(ag.from_matrix(KRIPPENDORFF_2011), bootstrap=0)
    assert result.fleiss_kappa is None
    assert any("different numbers of ratings" in note for note in result.notes)


def test_long_table_strings_at_nominal_and_errors():
    rows = [
        ("s1", "ann", "hero"),
        ("s1", "bob", "hero"),
        ("s2", "ann", "victim"),
        ("s2", "bob", "hero"),
        ("s3", "ann", "victim"),
        ("s3", "bob", "victim"),
        ("s4", "ann", ""),
        ("s4", "bob", "hero"),
    ]
    rm = ag.from_long(rows)
    assert rm.categories == ["hero", "victim"] and rm.n_ratings == 7 and len(rm.units) == 4
    result = ag.agreement(rm, bootstrap=0)
    assert result.krippendorff_alpha is not None and result.cohen_kappa_weighted_mean is None
    with pytest.raises(ag.AgreementInputError, match="needs numbers"):
        ag.from_long(rows, level="interval")
    with pytest.raises(ag.AgreementInputError, match="more than once"):
        ag.from_long([("s1", "ann", 1), ("s1", "ann", 0)])
    with pytest.raises(ag.AgreementInputError, match="Unknown level"):
        ag.from_long([], level="cardinal")
    with pytest.raises(ag.AgreementInputError, match="unit and rater"):
        ag.from_long([("", "ann", 1)])


def test_confusion_majority_and_disagreements():
    rm = ag.from_long(
        [
            ("s1", "a", 1),
            ("s1", "b", 1),
            ("s1", "c", 1),
            ("s2", "a", 0),
            ("s2", "b", 1),
            ("s2", "c", 1),
            ("s3", "a", 0),
            ("s3", "b", 0),
            ("s3", "c", 1),
            ("s4", "a", 0),
            ("s4", "b", 0),
            ("s4", "c", 0),
        ]
    )
    table = ag.confusion(rm, "a", "b")
    assert table["categories"] == [0, 1] and table["table"] == [[2, 1], [0, 1]]
    assert ag.disagreements(rm) == [1, 2]
    vs = ag.versus_majority(rm, "a", bootstrap=0)
    # majority of b, c: s1 1, s2 1, s3 tie → missing, s4 0; a agrees on s1 and s4 only
    assert vs.n_ratings == 7 and vs.pairs[0]["n_units"] == 3
    assert vs.percent_agreement == pytest.approx(2 / 3)


def test_segment_agreement_overlap_rule():
    a = [("d1", 0, 100), ("d1", 200, 300), ("d2", 0, 50)]
    b = [("d1", 5, 100), ("d1", 260, 300), ("d3", 0, 50)]
    strict = ag.segment_agreement(a, b, min_overlap=0.9)
    assert strict == {"n_a": 3, "n_b": 3, "matched_a": 1, "matched_b": 1, "share_matched": 2 / 6}
    loose = ag.segment_agreement(a, b, min_overlap=0.4)
    assert loose["matched_a"] == 2 and loose["matched_b"] == 2
    assert ag.span_overlap((0, 10), (10, 20)) == 0.0
    with pytest.raises(ag.AgreementInputError):
        ag.segment_agreement(a, b, min_overlap=0)


def test_bootstrap_notes_survive():
    # one pair of raters where resampling often hits all-identical draws: notes must say replicates were dropped
    data = [[0] * 19 + [1], [0] * 19 + [1]]
    result = ag.agreement(ag.from_matrix(data), bootstrap=200, seed=1)
    assert result.krippendorff_alpha == 1.0
    assert any(note.startswith("bootstrap:") for note in result.notes)
