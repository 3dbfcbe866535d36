"""An improper CFA solution (Heywood case, |standardised loading| >= 1, non-positive-definite factor covariance) is
flagged and never rated "+"; raw CFI/TLI are reported beside the capped ones."""

import numpy as np
import pandas as pd

from psychometrics.analysis import analyze
from psychometrics.reliability import rate_factorial
from psychometrics.validity import cfa, improper_solution

from .test_pure import MINIMAL


def _noise(seed, n=60):
    rng = np.random.default_rng(seed)
    return pd.DataFrame(rng.integers(0, 6, size=(n, 6)).astype(float), columns=[f"i{k}" for k in range(6)])


FACTORS = {"A": ["i0", "i1", "i2"], "B": ["i3", "i4", "i5"]}


def test_noise_that_fits_perfectly_is_flagged_and_not_rated_plus():
    fit = cfa(_noise(2), FACTORS)
    # The fit indices alone would earn "+" (RMSEA <= .05 and CFI >= .90) ...
    assert fit["rmsea"] <= 0.05 and fit["cfi"] >= 0.90
    assert rate_factorial(fit["rmsea"], fit["cfi"]) == "+"
    # ... but a standardised loading of -1 makes the solution improper.
    assert any("standardised loading" in reason for reason in fit["improper"])
    assert rate_factorial(fit["rmsea"], fit["cfi"], bool(fit["improper"])) == "improper"
    assert fit["tli_raw"] > 1 and fit["tli"] == 1.0 and fit["cfi_raw"] is not None


def test_heywood_case_flagged():
    fit = cfa(_noise(7), FACTORS)
    assert any("residual variance" in reason for reason in fit["improper"])


def test_checks_one_by_one():
    loadings = [{"factor": "F", "item": "a", "std": 0.7}, {"factor": "F", "item": "b", "std": 0.6}]
    good = np.array([[1.0, 0.3], [0.3, 1.0]])
    assert improper_solution(True, loadings, {"a": 0.5, "b": 0.6}, good, good) == []
    assert improper_solution(False, loadings, {"a": 0.5, "b": 0.6}, good, good) == ["the estimation did not converge"]
    assert "negative" in improper_solution(True, loadings, {"a": -0.1, "b": 0.6}, good, good)[0]
    not_pd = np.array([[1.0, 1.2], [1.2, 1.0]])
    assert "factor covariance" in improper_solution(True, loadings, {"a": 0.5, "b": 0.6}, not_pd, good)[0]
    assert "1.000" in improper_solution(True, [{"factor": "F", "item": "a", "std": 1.0}], {"a": 0.5}, good, good)[0]


def test_report_shows_improper_and_raw_indices():
    from psychometrics.spec import parse_instrument

    items = [{"id": f"i{k}", "text": "x", "subscale": "HS" if k < 3 else "BS"} for k in range(6)]
    spec = parse_instrument({**MINIMAL, "items": items})
    a = analyze(_noise(2), spec)
    assert a["ratings"]["factorial"] == "improper"
    assert any(note.startswith("CFA: Improper solution") for note in a["notes"])


def test_heywood_case_is_called_a_boundary_solution_and_its_bound_estimates_are_marked():
    """Issue 34: a Heywood case prints the boundary solution (θ = 0, standardised loading 1.000) as if estimated.
    Say it is a boundary solution and mark the estimates that sit on a bound, in the result, the page and the CLI."""
    from django.template.loader import render_to_string

    fit = cfa(_noise(7), FACTORS)
    assert fit["boundary"] is True
    heywood = [item for item, value in fit["residual_variances"].items() if value <= 1e-8]
    assert heywood
    marked = {row["item"] for row in fit["loadings"] if row["at_bound"]}
    assert set(heywood) <= marked
    for row in fit["loadings"]:
        on_bound = row["item"] in heywood or abs(row["std"]) >= 0.999
        assert row["at_bound"] == on_bound, row
    assert any("θ" in e and "0" in e for e in fit["boundary_estimates"])
    proper = cfa(_noise(2, n=400).assign(i1=lambda d: d["i0"] + d["i1"], i2=lambda d: d["i0"] + d["i2"]), FACTORS)
    assert proper["boundary"] is (bool(proper["boundary_estimates"]))

    html = render_to_string("psychometrics/_cfa.html", {"a": {"cfa": fit, "ratings": {"factorial": "improper"}}})
    assert "Boundary solution" in html and html.count('class="at-bound"') >= len(heywood)
