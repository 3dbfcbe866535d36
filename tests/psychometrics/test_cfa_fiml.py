"""Full-information ML for the CFA (semopy's ModelMeans: the likelihood of each respondent's observed items).
On complete data FIML is ML, so it must reproduce the published lavaan ML results; with gaps it keeps every
respondent and maximises the observed-data likelihood (checked against the listwise estimates)."""

import numpy as np
import pytest

from psychometrics import validity
from psychometrics.spec import parse_instrument

FACTORS = {"visual": ["x1", "x2", "x3"], "textual": ["x4", "x5", "x6"], "speed": ["x7", "x8", "x9"]}


def hs():
    from semopy.examples import holzinger39

    return holzinger39.get_data()[[c for ids in FACTORS.values() for c in ids]].astype(float)


def with_gaps(data, per_item=20, seed=0):
    rng = np.random.default_rng(seed)
    data = data.copy()
    for col in data.columns:
        data.loc[data.index[rng.choice(len(data), per_item, replace=False)], col] = np.nan
    return data


def test_fiml_on_complete_data_is_ml_and_matches_lavaan():
    """lavaan tutorial, `cfa(HS.model, data = HolzingerSwineford1939)`: χ² = 85.306, df = 24, CFI = .931,
    TLI = .896, RMSEA = .092, SRMR = .065 (the same published values as the ML test in test_pure)."""
    fit = validity.cfa(hs(), FACTORS, missing="fiml")
    published = {"chi2": 85.306, "df": 24, "cfi": 0.931, "tli": 0.896, "rmsea": 0.092, "srmr": 0.065}
    for key, value in published.items():
        assert fit[key] == pytest.approx(value, rel=0.01), key
    assert fit["n"] == 301 and "full-information" in fit["estimator"]
    ml = validity.cfa(hs(), FACTORS)
    assert fit["chi2"] == pytest.approx(ml["chi2"], rel=1e-3)
    for a, b in zip(fit["loadings"], ml["loadings"], strict=True):
        assert a["estimate"] == pytest.approx(b["estimate"], abs=2e-3)


def test_saturated_em_on_complete_data_is_the_sample_moments():
    data = hs()
    mean, cov = validity.saturated_moments(data.to_numpy())
    assert np.allclose(mean, data.mean().to_numpy()) and np.allclose(cov, np.cov(data.to_numpy(), rowvar=False, ddof=0))


def test_fiml_keeps_every_respondent_and_maximises_the_observed_likelihood():
    data = with_gaps(hs())
    listwise = validity.cfa(data, FACTORS)
    fiml = validity.cfa(data, FACTORS, missing="fiml")
    assert listwise["n"] < 200 and fiml["n"] == 301
    assert any("listwise" in n for n in listwise["notes"])
    assert any("full-information" in n.lower() for n in fiml["notes"])
    assert fiml["chi2"] > 0 and fiml["df"] == 24 and 0 < fiml["cfi"] <= 1 and fiml["rmsea"] is not None
    # the FIML estimates give the observed data a higher likelihood than the listwise estimates do
    x = data.to_numpy()
    assert (
        validity.observed_loglik(x, fiml["implied_mean"], fiml["implied_cov"])
        >= validity.observed_loglik(x, listwise["implied_mean"], listwise["implied_cov"]) - 1e-6
    )


def test_instrument_file_chooses_fiml_for_the_cfa():
    spec = parse_instrument(
        {
            "name": "S",
            "scale": {"min": 0, "max": 5},
            "items": [{"id": "a", "text": "x"}],
            "missing": {"method": "prorate", "min_fraction": 0.5, "cfa": "fiml"},
        }
    )
    assert spec.missing["cfa"] == "fiml" and "full-information" in spec.missing_policy_text()
    with pytest.raises(ValueError, match="missing.cfa"):
        parse_instrument(
            {
                "name": "S",
                "scale": {"min": 0, "max": 5},
                "items": [{"id": "a", "text": "x"}],
                "missing": {"cfa": "pairwise"},
            }
        )


@pytest.mark.parametrize("shift", [50.0, 1000.0])
def test_fiml_does_not_depend_on_where_the_scale_starts(shift):
    """A 0–100 scale is the same data as a 0–10 one moved along: χ², fit indices, loadings and the improper-solution
    check must not change, and the implied means move by the shift."""
    data = with_gaps(hs())
    base = validity.cfa(data, FACTORS, missing="fiml")
    moved = validity.cfa(data + shift, FACTORS, missing="fiml")
    for key in ("chi2", "df", "cfi", "tli", "rmsea", "srmr"):
        assert moved[key] == pytest.approx(base[key], rel=1e-3), key
    assert moved["improper"] == base["improper"]
    for a, b in zip(moved["loadings"], base["loadings"], strict=True):
        assert a["estimate"] == pytest.approx(b["estimate"], abs=2e-3)
    assert np.allclose(np.array(moved["implied_mean"]) - shift, base["implied_mean"], atol=1e-2)


@pytest.mark.parametrize("shift", [50.0, 1000.0])
def test_em_moments_move_with_the_scale_and_converge_as_fast(shift):
    """The saturated model's EM works on centred data: far from 0 (a 0–100 or 1000–1010 scale) the covariance is
    the same to 1e-9 and it converges in as few iterations as near 0 (before, 1000 + x ran all 5,000 iterations and
    stopped on rounding noise)."""
    x = with_gaps(hs()).to_numpy(dtype=float)
    mean, cov = validity.saturated_moments(x, max_iter=200)
    moved_mean, moved_cov = validity.saturated_moments(x + shift, max_iter=200)
    assert np.allclose(moved_cov, cov, rtol=1e-9, atol=1e-12)
    assert np.allclose(moved_mean - shift, mean, rtol=1e-9, atol=1e-9)
