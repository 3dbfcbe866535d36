"""Jung's factorial rating (RMSEA ≤ .05 and CFI ≥ .90) uses the robust RMSEA and CFI when robust ML (Satorra–Bentler)
was computed, the ML ones otherwise; the report, the validation summary and the export say which."""

import html

import numpy as np
import pandas as pd
from django.template.loader import render_to_string

from psychometrics import datasets, reports
from psychometrics.analysis import analyze
from psychometrics.reliability import rate_factorial
from psychometrics.spec import parse_instrument

FACTORS = {"A": ["a1", "a2", "a3"], "B": ["b1", "b2", "b3"], "C": ["c1", "c2", "c3"]}
ITEMS = [i for ids in FACTORS.values() for i in ids]


def heavy_tailed(seed=4, n=300):
    """A correct three-factor model, multivariate t with 4 df: the ML χ² is inflated by the tails (no misfit), so the
    ML RMSEA exceeds .05 while the robust one does not."""
    rng = np.random.default_rng(seed)
    lam = np.zeros((9, 3))
    for k in range(3):
        lam[3 * k : 3 * k + 3, k] = [0.8, 0.7, 0.6]
    phi = np.full((3, 3), 0.3) + 0.7 * np.eye(3)
    sigma = lam @ phi @ lam.T
    sigma += np.diag(1 - np.diag(sigma))
    z = rng.multivariate_normal(np.zeros(9), sigma, size=n) / np.sqrt(rng.chisquare(4, size=n) / 4)[:, None]
    return pd.DataFrame(z + 5, columns=ITEMS)


def spec(missing=None):
    data = {
        "name": "Three factors",
        "version": "1",
        "scale": {"min": -50, "max": 50},
        "subscales": list(FACTORS),
        "items": [{"id": i, "text": "x", "subscale": f} for f, ids in FACTORS.items() for i in ids],
    }
    if missing:
        data["missing"] = missing
    return parse_instrument(data)


def test_rating_uses_the_robust_indices_under_robust_ml():
    a = analyze(heavy_tailed(), spec(), histograms=False)
    cfa = a["cfa"]
    assert cfa["scaling_factor"] > 1.5 and not cfa["improper"]
    # the two sets of indices disagree on these data ...
    assert rate_factorial(cfa["rmsea"], cfa["cfi"]) == "–"
    assert rate_factorial(cfa["rmsea_robust"], cfa["cfi_robust"]) == "+"
    # ... and the rating follows the robust ones, saying so
    assert a["ratings"]["factorial"] == "+"
    basis = a["ratings"]["factorial_basis"]
    assert basis["robust"] and basis["rmsea"] == cfa["rmsea_robust"] and basis["cfi"] == cfa["cfi_robust"]
    assert "Satorra–Bentler" in basis["text"] and "robust RMSEA" in basis["text"] and "robust CFI" in basis["text"]
    assert "ML indices" not in cfa["estimator"]


def test_rating_uses_the_ml_indices_without_robust_ml():
    data = heavy_tailed()
    data.iloc[0, 0] = np.nan  # FIML: no robust scaling
    a = analyze(data, spec({"cfa": "fiml"}), histograms=False)
    cfa = a["cfa"]
    assert cfa["scaling_factor"] is None
    basis = a["ratings"]["factorial_basis"]
    assert not basis["robust"] and basis["rmsea"] == cfa["rmsea"] and basis["cfi"] == cfa["cfi"]
    assert a["ratings"]["factorial"] == rate_factorial(cfa["rmsea"], cfa["cfi"]) == "–"
    assert "robust" not in basis["text"]


def test_report_states_estimator_and_indices_of_the_rating():
    a = analyze(heavy_tailed(), spec(), histograms=False)
    page = render_to_string("psychometrics/_cfa.html", {"a": a})
    basis = a["ratings"]["factorial_basis"]
    rating_cell = html.unescape(page.split('class="factorial-rating"', 1)[1].split("</td>", 1)[0])
    assert "+" in rating_cell and basis["text"] in rating_cell
    assert f"{basis['rmsea']:.3f}" in rating_cell and f"{basis['cfi']:.3f}" in rating_cell


def test_validation_summary_and_export_carry_the_rated_indices(monkeypatch):
    a = analyze(heavy_tailed(), spec(), histograms=False)
    report = {"models": [{"endpoint": "m", "analysis": a}], "missing_policy": "listwise"}
    monkeypatch.setattr(reports, "run_report", lambda run: report)
    row = reports.validation_summary(run=None)["rows"][0]
    basis = a["ratings"]["factorial_basis"]
    assert (row["rmsea"], row["cfi"], row["factorial_basis"]) == (basis["rmsea"], basis["cfi"], basis["text"])
    rows = {r["measure"]: r for r in datasets.reliability_rows(report)}
    assert rows["cfa_rmsea_robust"]["value"] == a["cfa"]["rmsea_robust"] and rows["cfa_rmsea_robust"]["rating"] == "+"
    assert rows["cfa_cfi_robust"]["rating"] == "+" and rows["cfa_rmsea"]["rating"] == ""
    assert rows["cfa_chi2_scaled"]["value"] == a["cfa"]["chi2_scaled"]
