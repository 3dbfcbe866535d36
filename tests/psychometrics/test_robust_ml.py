"""Robust ML: the Satorra–Bentler scaled χ² with robust CFI/TLI/RMSEA.

Published reference: lavaan 0.6-17, `sem(HS.model, data, estimator = "MLM", meanstructure = TRUE)` on the
Holzinger & Swineford (1939) data (N = 301, the three-factor model visual x1–x3, textual x4–x6, speed x7–x9),
fitMeasures printed beside Mplus 8.2 (estimator = MLM) for the same data, by Luc De Wilde (lavaan developer) in
the lavaan/Mplus comparison suite, dated 2024-01-20:
  https://github.com/lucdw/lavaan-mplus/blob/4b92903691a1bd95d63bb6afaf3fec273f0fed6a/HS/HS.mean.MLM.out_mimlavaan.log
  (script HS/HS.mean.MLM.R, data HS/HS.raw, Mplus output HS/HS.mean.MLM.out in the same commit).
The data are semopy's bundled copy of lavaan's HolzingerSwineford1939 (x1–x9 identical to HS.raw there).
A saturated mean structure leaves the Satorra–Bentler scaling unchanged (the mean block of U is zero), so the
covariance-only model here reproduces the meanstructure = TRUE output.

Conventions (matched, not tuned): lavaan's ML χ² and Γ (the fourth-moment matrix) use N, not N − 1, and its
scaling evaluates the normal-theory weight W at the model-implied Σ̂ (h1.information = "structured"). Mplus
evaluates W at the sample covariance S, hence its different scaling factor (1.0415) — reproduced below too. lavaan's
"scaled" CFI/TLI/RMSEA plug the scaled χ² into the usual formulas; its "robust" ones are Brosseau-Liard & Savalei's
(2014) CFI/TLI and Brosseau-Liard, Savalei & Li's (2012) RMSEA."""

import numpy as np
import pandas as pd
import pytest

from psychometrics import validity

FACTORS = {"visual": ["x1", "x2", "x3"], "textual": ["x4", "x5", "x6"], "speed": ["x7", "x8", "x9"]}
ITEMS = [c for ids in FACTORS.values() for c in ids]


def hs():
    from semopy.examples import holzinger39

    return holzinger39.get_data()[ITEMS].astype(float)


def fitted_hs():
    import semopy
    from semopy.examples import holzinger39

    model = semopy.Model(holzinger39.get_model())
    model.fit(hs(), obj="MLW", options={"ftol": 1e-12})  # converged as tightly as lavaan
    return model


# lavaan 0.6-17 MLM fitMeasures (rounded to 3 decimals as printed), from the log cited above
LAVAAN_MLM = {
    "chi2": 85.306,
    "df": 24,
    "chi2_scaled": 80.872,
    "scaling_factor": 1.055,
    "chi2_baseline_scaled": 789.298,
    "scaling_factor_baseline": 1.164,
    "cfi": 0.931,
    "tli": 0.896,
    "cfi_scaled": 0.925,
    "tli_scaled": 0.887,
    "cfi_robust": 0.932,
    "tli_robust": 0.897,
    "rmsea": 0.092,
    "rmsea_robust": 0.091,
    # lavaan's "srmr" (0.060) there averages over the zero mean residuals too; without a mean structure, as here,
    # it is "srmr_bentler_nomean"
    "srmr": 0.065,
}
# unstandardised loadings from the same log (lavaan and Mplus agree on them)
LAVAAN_LOADINGS = {"x2": 0.554, "x3": 0.729, "x5": 1.113, "x6": 0.926, "x8": 1.180, "x9": 1.082}


def test_matches_published_lavaan_mlm_output():
    fit = validity.cfa(hs(), FACTORS)
    assert fit["n"] == 301 and not fit["improper"]
    got = {key: fit[key] for key in LAVAAN_MLM}
    # half a unit in the last printed decimal: the published value is what ours rounds to
    assert got == {key: pytest.approx(value, abs=5e-4) for key, value in LAVAAN_MLM.items()}
    loadings = {row["item"]: row["estimate"] for row in fit["loadings"] if row["item"] in LAVAAN_LOADINGS}
    assert loadings == {item: pytest.approx(value, abs=5e-4) for item, value in LAVAAN_LOADINGS.items()}
    # "scaled" and "robust" indices are different things and both are published: keep them apart
    assert fit["tli_robust"] != pytest.approx(fit["tli_scaled"], abs=1e-3)


def test_mplus_convention_weight_at_the_sample_covariance():
    """Mplus 8.2 on the same data (HS/HS.mean.MLM.out in the cited commit): "Scaling Correction Factor 1.0415 for
    MLM", χ² 81.908. Same Γ and Δ, W evaluated at S instead of Σ̂."""
    fit = validity.cfa(hs(), FACTORS)
    model = fitted_hs()
    order = model.vars["observed"]
    x = hs()[order].to_numpy()
    sample = np.cov(x, rowvar=False, ddof=0)
    weight = validity.normal_theory_weight(sample)
    c = validity.satorra_bentler_scaling(
        weight, validity.implied_jacobian(model, order), validity.empirical_gamma(x), 24
    )
    assert c == pytest.approx(1.0415, abs=5e-5)
    assert fit["chi2"] / c == pytest.approx(81.908, abs=5e-4)


def test_scaling_is_exactly_one_under_the_normal_theory_gamma():
    model = fitted_hs()
    order = model.vars["observed"]
    weight = validity.normal_theory_weight(np.asarray(model.calc_sigma()[0]))
    delta = validity.implied_jacobian(model, order)
    assert validity.satorra_bentler_scaling(weight, delta, np.linalg.inv(weight), 24) == pytest.approx(1.0, abs=1e-6)
    # U has rank df: tr(U W⁻¹) = p* − q
    assert delta.shape == (45, 21)


def simulated(kind, n=4000, seed=5):
    rng = np.random.default_rng(seed)
    sigma = np.asarray(fitted_hs().calc_sigma()[0])
    z = rng.multivariate_normal(np.zeros(9), sigma, size=n)
    if kind == "t5":  # multivariate t with 5 df: same covariance shape, heavy tails
        z = z / np.sqrt(rng.chisquare(5, size=n) / 5)[:, None]
    return pd.DataFrame(z, columns=ITEMS)


def test_normal_data_need_no_correction_and_heavy_tails_do():
    normal = validity.cfa(simulated("normal"), FACTORS)
    heavy = validity.cfa(simulated("t5"), FACTORS)
    assert normal["scaling_factor"] == pytest.approx(1.0, abs=0.08)
    assert heavy["scaling_factor"] > 1.5 and heavy["chi2_scaled"] < heavy["chi2"]
    assert heavy["scaling_factor_baseline"] > 1.5


def test_scaling_is_scale_invariant_and_indices_follow_their_formulas():
    data = hs()
    fit = validity.cfa(data, FACTORS)
    # rescaling the items (x → x·s) changes Σ, Δ and Γ but not c; refitting would add optimiser noise, so the
    # fitted quantities are transformed: vech(DΣD) = T vech(Σ) with T = diag(s_i s_j)
    model = fitted_hs()
    order = model.vars["observed"]
    sigma, delta = np.asarray(model.calc_sigma()[0]), validity.implied_jacobian(model, order)
    x = data[order].to_numpy()
    s = np.linspace(0.5, 5, 9)
    t = np.diag([s[i] * s[j] for i, j in validity._vech_index(9)])
    c = validity.satorra_bentler_scaling(validity.normal_theory_weight(sigma), delta, validity.empirical_gamma(x), 24)
    c_scaled = validity.satorra_bentler_scaling(
        validity.normal_theory_weight(np.outer(s, s) * sigma), t @ delta, validity.empirical_gamma(x * s), 24
    )
    assert c_scaled == pytest.approx(c, rel=1e-9) and c == pytest.approx(fit["scaling_factor"], rel=1e-6)
    c, t, df, n = fit["scaling_factor"], fit["chi2"], fit["df"], fit["n"]
    assert fit["chi2_scaled"] == pytest.approx(t / c)
    assert fit["rmsea_robust"] == pytest.approx(np.sqrt(max(t - c * df, 0) / (n * df)))
    assert 1 < c < 1.2 and fit["cfi_robust"] is not None and fit["tli_robust"] is not None
    assert "Satorra–Bentler" in fit["estimator"]


def test_robust_indices_by_hand():
    out = validity.robust_fit(chi2=120.0, dof=20, chi2_b=(900.0, 36), n=250, c=1.5, c_b=2.0)
    t, tb = 120 / 1.5, 900 / 2.0
    assert out["chi2_scaled"] == pytest.approx(80.0)
    assert out["cfi_scaled"] == pytest.approx(1 - (t - 20) / (tb - 36))
    assert out["tli_scaled"] == pytest.approx((tb / 36 - t / 20) / (tb / 36 - 1))
    assert out["tli_robust"] == pytest.approx(1 - ((120 - 1.5 * 20) * 36) / ((900 - 2.0 * 36) * 20))
    assert out["cfi_robust"] == pytest.approx(1 - (120 - 1.5 * 20) / (900 - 2.0 * 36))
    assert out["rmsea_robust"] == pytest.approx(np.sqrt((120 - 30) / (250 * 20)))
