"""Robust ML: the Satorra–Bentler scaled χ² with robust CFI/TLI/RMSEA.

No published lavaan MLM output for a dataset available here could be found and cited, so these tests check the
implementation's internal consistency only: the algebraic identities of the scaling (c = 1 exactly when Γ is the
normal-theory matrix), its behaviour on simulated normal and heavy-tailed data, scale invariance, and the formulas
of the robust indices recomputed by hand."""
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
    model.fit(hs(), obj="MLW")
    return model


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
    c_scaled = validity.satorra_bentler_scaling(validity.normal_theory_weight(np.outer(s, s) * sigma), t @ delta,
                                                validity.empirical_gamma(x * s), 24)
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
    assert out["tli_robust"] == pytest.approx((tb / 36 - t / 20) / (tb / 36 - 1))
    assert out["cfi_robust"] == pytest.approx(1 - (120 - 1.5 * 20) / (900 - 2.0 * 36))
    assert out["rmsea_robust"] == pytest.approx(np.sqrt((120 - 30) / (250 * 20)))
