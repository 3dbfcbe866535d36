"""Validity: confirmatory factor analysis (semopy), McDonald's omega, correlations between scores (no Django).

CFA: one factor per subscale, factors correlated, the first loading of each factor fixed to 1 (marker), estimator
ML (semopy's "MLW" objective, converged tightly) with the Satorra–Bentler scaled χ², scaled and robust CFI/TLI and
robust RMSEA computed here as lavaan's MLM does (checked against published lavaan output in
tests/psychometrics/test_robust_ml.py); FIML for missing data has no robust scaling. Fit indices: χ², df, p, CFI,
TLI and RMSEA; the RMSEA 90% CI (non-central χ²) and SRMR (Bentler) computed here, all with N in the denominator,
as lavaan reports them.
"""

import re
import warnings

import numpy as np
import pandas as pd
from scipy import optimize, stats

from .reliability import clean

ESTIMATOR = (
    "ML (maximum likelihood, semopy MLW) with the Satorra–Bentler scaled χ² and robust CFI, TLI and RMSEA "
    "(as lavaan's MLM); the factorial rating uses the robust RMSEA and CFI"
)
ESTIMATOR_FIML = (
    "ML with full-information ML for missing data (semopy ModelMeans: each respondent's observed "
    "items; saturated model by EM); normal theory, no robust scaling"
)
CFA_MISSING = ("listwise", "fiml")
ML_OPTIONS = {"ftol": 1e-12, "maxiter": 10000}  # SLSQP, listwise ML: converged as tightly as lavaan


def _patterns(x):
    """{tuple of observed column indices: row indices} of a data matrix with NaN for missing."""
    groups = {}
    for i, row in enumerate(x):
        groups.setdefault(tuple(np.flatnonzero(~np.isnan(row))), []).append(i)
    return {cols: np.array(rows) for cols, rows in groups.items() if cols}


def observed_loglik(x, mean, cov):
    """The normal log-likelihood of each row's observed values under (mean, cov), summed (FIML's objective)."""
    x, mean, cov = np.asarray(x, dtype=float), np.asarray(mean, dtype=float), np.asarray(cov, dtype=float)
    total = 0.0
    for cols, rows in _patterns(x).items():
        idx = list(cols)
        sub = cov[np.ix_(idx, idx)]
        sign, logdet = np.linalg.slogdet(sub)
        if sign <= 0:
            return float("-inf")
        dev = x[np.ix_(rows, idx)] - mean[idx]
        quad = np.einsum("ij,jk,ik->", dev, np.linalg.inv(sub), dev)
        total += -0.5 * (len(rows) * (len(idx) * np.log(2 * np.pi) + logdet) + quad)
    return float(total)


def saturated_moments(x, tol=1e-10, max_iter=5000):
    """ML mean vector and covariance matrix of incomplete normal data by EM (the FIML saturated model).
    EM runs on the data centred on the observed means (added back at the end): far from 0, E[xx'] − mean·mean'
    would lose the covariance's last digits to rounding and the iterations would never meet `tol`."""
    x = np.asarray(x, dtype=float)
    x = x[~np.isnan(x).all(axis=1)]
    centre = np.nanmean(x, axis=0)
    x = x - centre
    n, p = x.shape
    mean = np.nanmean(x, axis=0)
    cov = np.diag(np.nanvar(x, axis=0))
    patterns = _patterns(x)
    for _ in range(max_iter):
        sum_x, sum_xx = np.zeros(p), np.zeros((p, p))
        for cols, rows in patterns.items():
            o = list(cols)
            m = [j for j in range(p) if j not in cols]
            filled = np.empty((len(rows), p))
            filled[:, o] = x[np.ix_(rows, o)]
            extra = np.zeros((p, p))
            if m:
                coef = cov[np.ix_(m, o)] @ np.linalg.inv(cov[np.ix_(o, o)])
                filled[:, m] = mean[m] + (filled[:, o] - mean[o]) @ coef.T
                extra[np.ix_(m, m)] = len(rows) * (cov[np.ix_(m, m)] - coef @ cov[np.ix_(o, m)])
            sum_x += filled.sum(axis=0)
            sum_xx += filled.T @ filled + extra
        new_mean = sum_x / n
        new_cov = sum_xx / n - np.outer(new_mean, new_mean)
        done = max(np.abs(new_mean - mean).max(), np.abs(new_cov - cov).max()) < tol
        mean, cov = new_mean, new_cov
        if done:
            break
    return mean + centre, cov


def fiml_fit_statistics(x, implied_mean, implied_cov, dof):
    """χ² = 2(ℓ_saturated − ℓ_model) and the independence baseline's χ² (its FIML fit is each item's own mean and
    variance); CFI, TLI and RMSEA from them as for complete data. Also the EM moments (for SRMR)."""
    mean_s, cov_s = saturated_moments(x)
    ll_s = observed_loglik(x, mean_s, cov_s)
    ll_m = observed_loglik(x, implied_mean, implied_cov)
    ll_b = observed_loglik(x, np.nanmean(x, axis=0), np.diag(np.nanvar(x, axis=0)))
    n = int((~np.isnan(x).all(axis=1)).sum())
    p = x.shape[1]
    chi2, chi2_b, df_b = 2 * (ll_s - ll_m), 2 * (ll_s - ll_b), p * (p - 1) / 2
    d_model, d_base = max(chi2 - dof, 0.0), max(chi2_b - df_b, chi2 - dof, 0.0)
    tli = ((chi2_b / df_b) - (chi2 / dof)) / ((chi2_b / df_b) - 1) if dof and chi2_b / df_b != 1 else None
    return (
        {
            "chi2": clean(chi2),
            "p": clean(stats.chi2.sf(chi2, dof)) if dof else None,
            "cfi": clean(1 - d_model / d_base) if d_base > 0 else None,
            "cfi_raw": clean(1 - (chi2 - dof) / (chi2_b - df_b)) if chi2_b != df_b else None,
            "tli": None if tli is None else clean(min(1.0, max(0.0, tli))),
            "tli_raw": clean(tli),
            "rmsea": clean(np.sqrt(d_model / (dof * n))) if dof else None,
        },
        cov_s,
        n,
    )


def _safe(name):
    return "f_" + re.sub(r"\W", "_", str(name))


def _var(name):
    return "i_" + re.sub(r"\W", "_", str(name))


def rmsea_ci(chi2, df, n, level=0.90):
    """The (lower, upper) RMSEA confidence limits from the non-central χ² distribution."""
    if df <= 0 or n <= 0:
        return None, None
    lo_p, hi_p = (1 + level) / 2, (1 - level) / 2

    def solve(p):
        def f(lam):
            return stats.ncx2.cdf(chi2, df, lam) - p if lam > 0 else stats.chi2.cdf(chi2, df) - p

        if f(1e-9) < 0:
            return 0.0
        hi = max(10.0, chi2 * 2)
        while f(hi) > 0:
            hi *= 2
        return optimize.brentq(f, 1e-9, hi, xtol=1e-10)

    return tuple(clean(np.sqrt(solve(p) / (df * n))) for p in (lo_p, hi_p))


def srmr(sample_cov, implied_cov):
    """Standardised root mean square residual over the lower triangle including the diagonal."""
    s, sigma = np.asarray(sample_cov), np.asarray(implied_cov)
    d = np.sqrt(np.diag(s))
    resid = (s - sigma) / np.outer(d, d)
    idx = np.tril_indices_from(resid)
    return float(np.sqrt(np.mean(resid[idx] ** 2)))


def fit_indices(chi2, dof, sample_cov, n):
    """CFI, TLI and RMSEA (N in the denominator, as lavaan) against the independence baseline, whose ML χ² has the
    closed form N·(Σ log s_ii − log|S|) with df = p(p−1)/2."""
    empty = {"cfi": None, "tli": None, "rmsea": None, "cfi_raw": None, "tli_raw": None}
    if chi2 is None or not dof:
        return empty
    p = sample_cov.shape[0]
    sign, logdet = np.linalg.slogdet(sample_cov)
    if sign <= 0:
        return empty
    chi2_b = n * (np.log(np.diag(sample_cov)).sum() - logdet)
    df_b = p * (p - 1) / 2
    d_model, d_base = max(chi2 - dof, 0.0), max(chi2_b - df_b, chi2 - dof, 0.0)
    cfi = 1 - d_model / d_base if d_base > 0 else None
    tli = ((chi2_b / df_b) - (chi2 / dof)) / ((chi2_b / df_b) - 1) if df_b and chi2_b / df_b != 1 else None
    rmsea = float(np.sqrt(d_model / (dof * n)))
    # Uncapped values (CFI and TLI above 1 or below 0 flag a model that fits "better than perfect", e.g. noise).
    cfi_raw = 1 - (chi2 - dof) / (chi2_b - df_b) if chi2_b != df_b else None
    tli_capped = None if tli is None else min(1.0, max(0.0, tli))
    return {
        "cfi": clean(cfi),
        "tli": clean(tli_capped),
        "rmsea": clean(rmsea),
        "cfi_raw": clean(cfi_raw),
        "tli_raw": clean(tli),
    }


STANDARDISED_LIMIT = 0.999


def improper_solution(converged, loadings, residual_variances, factor_covariance, implied_cov):
    """Reasons why a fitted CFA solution is improper (empty when it is proper): non-convergence, residual variances
    at or below zero, standardised loadings or factor correlations of ±1 or beyond, and covariance matrices that are
    not positive definite."""
    reasons = []
    if not converged:
        reasons.append("the estimation did not converge")
    for item, value in residual_variances.items():
        if not value > 1e-8:
            reasons.append(
                f"residual variance of {item} is {'zero' if abs(value) <= 1e-8 else 'negative'} "
                f"({value:.3g}, Heywood case)"
            )
    for row in loadings:
        if row["std"] is not None and abs(row["std"]) >= STANDARDISED_LIMIT:
            reasons.append(f"standardised loading of {row['item']} on {row['factor']} is {row['std']:.3f}")
    for name, matrix in (("factor covariance", factor_covariance), ("model-implied covariance", implied_cov)):
        if matrix is not None and matrix.size and not np.linalg.eigvalsh((matrix + matrix.T) / 2).min() > 1e-10:
            reasons.append(f"the {name} matrix is not positive definite")
    return reasons


def cfa(data, factors, drop_zero_variance=True, missing="listwise"):
    """Fit a correlated-factors CFA. `data` rows = respondents, columns = items; `factors` = {factor: [items]}.
    missing "listwise" uses respondents with every item answered; "fiml" every respondent with an answer
    (full-information ML).

    Returns a dict with n, estimator, chi2, df, p, cfi, tli, rmsea, rmsea_ci_low/high, srmr, loadings
    [{factor, item, estimate, std, p}], factor_correlations, omega (per factor and total), dropped, notes.
    Values that cannot be computed are None and a note says why.
    """
    import semopy  # lazy: heavy library, loaded on first use

    if missing not in CFA_MISSING:
        raise ValueError(f"missing must be one of {', '.join(CFA_MISSING)}.")
    fiml = missing == "fiml"
    notes, dropped = [], []
    result = {
        "n": 0,
        "estimator": ESTIMATOR_FIML if fiml else ESTIMATOR,
        "missing": missing,
        "chi2": None,
        "df": None,
        "p": None,
        "cfi": None,
        "tli": None,
        "rmsea": None,
        "rmsea_ci_low": None,
        "rmsea_ci_high": None,
        "srmr": None,
        "loadings": [],
        "cfi_raw": None,
        "tli_raw": None,
        "improper": [],
        "boundary": False,
        "boundary_estimates": [],
        "residual_variances": {},
        "chi2_scaled": None,
        "scaling_factor": None,
        "cfi_robust": None,
        "tli_robust": None,
        "rmsea_robust": None,
        "factor_correlations": [],
        "omega": {},
        "dropped": dropped,
        "notes": notes,
    }
    used = {}
    cols = [c for ids in factors.values() for c in ids]
    frame = data[cols].astype(float).dropna(axis=0, how="all" if fiml else "any")
    if fiml and frame.isna().any().any():
        notes.append(
            f"Full-information ML: all {len(frame)} respondents with an answer are used; "
            f"{int(frame.isna().sum().sum())} missing answers enter through the likelihood."
        )
    if len(frame) < len(data):
        notes.append(
            f"{len(data) - len(frame)} respondents with "
            f"{'no answer' if fiml else 'missing items'} left out{'' if fiml else ' (listwise deletion)'}."
        )
    for factor, ids in factors.items():
        keep = []
        for item in ids:
            if drop_zero_variance and not frame[item].var(ddof=1) > 0:
                dropped.append(item)
                continue
            keep.append(item)
        if len(keep) < 2:
            notes.append(f"Factor {factor} left out: fewer than 2 items with variance.")
            dropped.extend(keep)
            continue
        used[factor] = keep
    if dropped:
        notes.append(f"Dropped items (zero variance or no factor): {', '.join(map(str, dropped))}.")
    items = [c for ids in used.values() for c in ids]
    result["n"] = int(len(frame))
    if not used:
        notes.append("No factor has 2 or more items with variance; no CFA.")
        return result
    if len(frame) <= len(items):
        notes.append(f"Too few {'' if fiml else 'complete '}respondents ({len(frame)}) for {len(items)} items; no CFA.")
        return result
    names = {item: _var(item) for item in items}
    df_data = frame[items].rename(columns=names)
    desc = "\n".join(f"{_safe(f)} =~ " + " + ".join(names[i] for i in ids) for f, ids in used.items())
    model = semopy.ModelMeans(desc) if fiml else semopy.Model(desc)
    # FIML is fitted on centred items (the optimiser starts its intercepts at 0 and fails far from it, e.g. on a
    # 0–100 scale); the likelihood only moves with the location, so the centre is added back to the intercepts.
    centre = df_data.mean() if fiml else None
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            # ModelMeans' ML is FIML. semopy's SLSQP default (ftol 1e-6 on F) stops before the minimum: χ² is
            # flat there, but estimates and the Satorra–Bentler scaling are off in the 3rd decimal against lavaan.
            if fiml:
                solution = model.fit(df_data - centre, obj="ML")
            else:
                solution = model.fit(df_data, obj="MLW", options=dict(ML_OPTIONS))
            dof = semopy.stats.calc_dof(model)
            if not fiml:
                chi2_value, p_value = semopy.stats.calc_chi2(model, dof)
            est = model.inspect(std_est=True)
            sigma = model.calc_sigma()[0]
    except Exception as exc:  # singular matrices and the like: report, do not crash
        notes.append(f"The CFA could not be estimated: {type(exc).__name__}: {exc}")
        return result
    order = model.vars["observed"]
    position = [order.index(names[i]) for i in items]
    sigma = np.asarray(sigma)
    implied = sigma[np.ix_(position, position)]  # in the order of `items`
    if fiml:
        k = len(items)  # moments: k(k+1)/2 covariances and k means; semopy's count leaves out the means
        dof = k * (k + 1) // 2 + k - len(model.param_vals)
        intercepts = {row[0]: float(row[3]) for row in est.itertuples(index=False) if row[1] == "~" and row[2] == "1"}
        implied_mean = np.array([intercepts[names[i]] + centre[names[i]] for i in items])
        fit, sample_items, n = fiml_fit_statistics(frame[items].to_numpy(), implied_mean, implied, dof)
        result.update(df=clean(dof), **fit)
        result["srmr"] = clean(srmr(sample_items, implied))
    else:
        n = len(df_data)
        matrix = df_data[order].to_numpy()
        sample = np.cov(matrix, rowvar=False, ddof=0)
        implied_mean = df_data[[names[i] for i in items]].mean().to_numpy()
        result.update(chi2=clean(chi2_value), df=clean(dof), p=clean(p_value))
        result.update(fit_indices(clean(chi2_value), dof, sample, n))
        result["srmr"] = clean(srmr(sample, sigma))
        if result["chi2"] is not None and dof:
            try:
                result.update(satorra_bentler(model, df_data, order, result["chi2"], dof))
            except (np.linalg.LinAlgError, ValueError, ZeroDivisionError) as exc:
                notes.append(f"No robust (Satorra–Bentler) statistics: {exc}.")
    result["n"] = int(n)
    result["implied_mean"], result["implied_cov"] = implied_mean.tolist(), implied.tolist()
    if result["chi2"] is not None and dof:
        result["rmsea_ci_low"], result["rmsea_ci_high"] = rmsea_ci(result["chi2"], dof, n)
    reverse_names = {v: k for k, v in names.items()}
    reverse_factors = {_safe(f): f for f in used}
    lam, theta, phi = {}, {}, {}
    for row in est.itertuples(index=False):
        lval, op, rval = row[0], row[1], row[2]
        estimate, std, p = row[3], row[4], row[7]
        if op == "~" and rval in reverse_factors:
            factor, item = reverse_factors[rval], reverse_names.get(lval, lval)
            lam[(factor, item)] = float(estimate)
            result["loadings"].append(
                {
                    "factor": factor,
                    "item": item,
                    "estimate": clean(estimate),
                    "std": clean(std),
                    "p": clean(p) if not isinstance(p, str) else None,
                }
            )
        elif op == "~~" and lval in reverse_names and lval == rval:
            theta[reverse_names[lval]] = float(estimate)
        elif op == "~~" and lval in reverse_factors and rval in reverse_factors:
            phi[(reverse_factors[lval], reverse_factors[rval])] = float(estimate)
            phi[(reverse_factors[rval], reverse_factors[lval])] = float(estimate)
            if lval != rval:
                result["factor_correlations"].append(
                    {
                        "a": reverse_factors[lval],
                        "b": reverse_factors[rval],
                        "r": clean(std),
                        "p": clean(p) if not isinstance(p, str) else None,
                    }
                )
    if any(r["p"] is None for r in result["loadings"]):
        notes.append("The first loading of each factor is fixed to 1 (marker), so it has no p-value.")
    # McDonald's omega from the fitted model: (Σλ)²φ / ((Σλ)²φ + Σθ) per factor; for the total,
    # 1'ΛΦΛ'1 / (1'ΛΦΛ'1 + 1'Θ1) over all factors.
    factor_list = list(used)
    sums = {f: sum(lam.get((f, i), 0.0) for i in used[f]) for f in factor_list}
    for f in factor_list:
        common = sums[f] ** 2 * phi.get((f, f), 0.0)
        unique = sum(theta.get(i, 0.0) for i in used[f])
        result["omega"][f] = clean(common / (common + unique)) if common + unique > 0 else None
    common = sum(sums[a] * sums[b] * phi.get((a, b), 0.0) for a in factor_list for b in factor_list)
    unique = sum(theta.get(i, 0.0) for i in items)
    result["omega"]["total"] = clean(common / (common + unique)) if common + unique > 0 else None
    phi_matrix = np.array([[phi.get((a, b), 0.0) for b in factor_list] for a in factor_list])
    converged = bool(getattr(solution, "success", True))
    result["improper"] = improper_solution(converged, result["loadings"], theta, phi_matrix, np.asarray(sigma))
    for row in result["factor_correlations"]:
        if row["r"] is not None and abs(row["r"]) >= STANDARDISED_LIMIT:
            result["improper"].append(f"the correlation of factors {row['a']} and {row['b']} is {row['r']:.3f}")
    mark_boundary(result, theta)
    if result["improper"]:
        notes.append(
            "Improper solution: " + "; ".join(result["improper"]) + ". Fit indices of an improper "
            "solution are not evidence of validity."
        )
    if result["boundary"]:
        notes.append(
            "Boundary solution: " + "; ".join(result["boundary_estimates"]) + ". These estimates sit on a bound "
            "(a variance at zero, a standardised loading or correlation at ±1); they were not estimated freely, "
            "and the fit statistics are those of the constrained solution."
        )
    return result


def mark_boundary(result, theta):
    """Mark the estimates of a fitted CFA that sit on a bound: residual variances at or below zero (Heywood),
    standardised loadings and factor correlations at ±1. Sets result["boundary"], result["boundary_estimates"]
    (one line each), result["residual_variances"] and "at_bound" on every loading and factor correlation."""
    result["residual_variances"] = {item: clean(value) for item, value in theta.items()}
    estimates = []
    heywood = {item for item, value in theta.items() if not value > 1e-8}
    for item in sorted(heywood, key=str):
        estimates.append(f"θ({item}) = {theta[item]:.3g} (residual variance at the lower bound 0)")
    for row in result["loadings"]:
        at_std_bound = row["std"] is not None and abs(row["std"]) >= STANDARDISED_LIMIT
        row["at_bound"] = row["item"] in heywood or at_std_bound
        if at_std_bound:
            estimates.append(f"standardised λ({row['item']} on {row['factor']}) = {row['std']:.3f}")
    for row in result["factor_correlations"]:
        row["at_bound"] = row["r"] is not None and abs(row["r"]) >= STANDARDISED_LIMIT
        if row["at_bound"]:
            estimates.append(f"r({row['a']}, {row['b']}) = {row['r']:.3f}")
    result["boundary_estimates"] = estimates
    result["boundary"] = bool(estimates)


def omega_total(data, items):
    """McDonald's omega total of one set of items from a one-factor ML model."""
    fit = cfa(data, {"g": list(items)})
    return fit["omega"].get("g"), fit["notes"]


def correlation(x, y):
    """Pearson r between two aligned Series (pairwise complete): {"r", "df", "p", "n", "ci_low", "ci_high"} with
    the 95% Fisher-z interval (needs n ≥ 4); r None when undefined."""
    pair = pd.concat([pd.Series(x, dtype=float), pd.Series(y, dtype=float)], axis=1).dropna()
    n = len(pair)
    out = {"r": None, "df": n - 2 if n >= 2 else None, "p": None, "n": int(n), "ci_low": None, "ci_high": None}
    if n < 3 or pair.iloc[:, 0].std() == 0 or pair.iloc[:, 1].std() == 0:
        return out
    result = stats.pearsonr(pair.iloc[:, 0], pair.iloc[:, 1])
    out.update(r=clean(result.statistic), p=clean(result.pvalue))
    if n >= 4:
        ci = result.confidence_interval(0.95)  # Fisher z, as scipy documents
        out.update(ci_low=clean(ci.low), ci_high=clean(ci.high))
    return out


# -- robust ML: Satorra–Bentler scaling ------------------------------------------------------------------------------
def _vech_index(p):
    return [(i, j) for j in range(p) for i in range(j, p)]


def duplication_matrix(p):
    """D with vec(A) = D · vech(A) for symmetric A (vech: lower triangle, column by column)."""
    index = _vech_index(p)
    d = np.zeros((p * p, len(index)))
    for k, (i, j) in enumerate(index):
        d[j * p + i, k] = 1.0
        d[i * p + j, k] = 1.0
    return d


def normal_theory_weight(sigma):
    """W = ½ D'(Σ⁻¹ ⊗ Σ⁻¹)D, the inverse of the normal-theory covariance of vech(S) (expected information)."""
    inv = np.linalg.inv(sigma)
    d = duplication_matrix(sigma.shape[0])
    return 0.5 * d.T @ np.kron(inv, inv) @ d


def empirical_gamma(x):
    """Γ: the covariance (N divisor) of vech((x_i − x̄)(x_i − x̄)') over respondents, the fourth-moment matrix."""
    x = np.asarray(x, dtype=float)
    centred = x - x.mean(axis=0)
    index = _vech_index(x.shape[1])
    products = np.column_stack([centred[:, i] * centred[:, j] for i, j in index])
    return np.cov(products, rowvar=False, ddof=0)


def satorra_bentler_scaling(weight, delta, gamma, df):
    """c = tr(UΓ)/df with U = W − WΔ(Δ'WΔ)⁻¹Δ'W (Satorra & Bentler 1994); T_SB = T_ML / c."""
    wd = weight @ delta
    u = weight - wd @ np.linalg.solve(delta.T @ wd, wd.T)
    return float(np.trace(u @ gamma) / df)


def implied_jacobian(model, observed_order, h=1e-6):
    """Δ = ∂vech(Σ(θ))/∂θ of a fitted semopy model, by central differences (the model is left as fitted)."""
    theta = np.array(model.param_vals, dtype=float)
    index = _vech_index(len(observed_order))

    def vech_sigma(values):
        model.update_matrices(values)
        sigma = np.asarray(model.calc_sigma()[0])
        return np.array([sigma[i, j] for i, j in index])

    columns = []
    for k in range(len(theta)):
        step = np.zeros_like(theta)
        step[k] = h * max(1.0, abs(theta[k]))
        columns.append((vech_sigma(theta + step) - vech_sigma(theta - step)) / (2 * step[k]))
    model.update_matrices(theta)
    return np.column_stack(columns)


def robust_fit(chi2, dof, chi2_b, n, c, c_b):
    """Satorra–Bentler scaled χ² and the robust indices: CFI and TLI of Brosseau-Liard & Savalei (2014), RMSEA of
    Brosseau-Liard, Savalei & Li (2012); also the 'scaled' CFI and TLI computed from the scaled statistics."""
    p = p_b = None
    df_b = None if chi2_b is None else chi2_b[1]
    chi2_b = None if chi2_b is None else chi2_b[0]
    scaled = chi2 / c
    p = stats.chi2.sf(scaled, dof)
    out = {
        "chi2_scaled": clean(scaled),
        "p_scaled": clean(p),
        "scaling_factor": clean(c),
        "rmsea_robust": clean(np.sqrt(max(chi2 - c * dof, 0.0) / (n * dof))),
        "cfi_scaled": None,
        "tli_scaled": None,
        "cfi_robust": None,
        "tli_robust": None,
        "chi2_baseline_scaled": None,
        "scaling_factor_baseline": clean(c_b),
    }
    if chi2_b is None or c_b is None:
        return out
    scaled_b = chi2_b / c_b
    p_b = stats.chi2.sf(scaled_b, df_b)
    out["chi2_baseline_scaled"], out["p_baseline_scaled"] = clean(scaled_b), clean(p_b)
    d, d_b = max(scaled - dof, 0.0), max(scaled_b - df_b, scaled - dof, 0.0)
    out["cfi_scaled"] = clean(1 - d / d_b) if d_b > 0 else None
    tli = (scaled_b / df_b - scaled / dof) / (scaled_b / df_b - 1) if scaled_b / df_b != 1 else None
    out["tli_scaled"] = clean(tli)
    r, r_b = max(chi2 - c * dof, 0.0), max(chi2_b - c_b * df_b, chi2 - c * dof, 0.0)
    out["cfi_robust"] = clean(1 - r / r_b) if r_b > 0 else None
    # robust TLI (Brosseau-Liard & Savalei 2014; lavaan's formula, not capped): the noncentralities over df
    t1, t2 = (chi2 - c * dof) * df_b, (chi2_b - c_b * df_b) * dof
    out["tli_robust"] = clean(1 - t1 / t2) if t2 else None
    return out


def rating_indices(fit):
    """The RMSEA and CFI that Jung's factorial rating uses, and a sentence saying which: the robust ones when robust ML
    (Satorra–Bentler) was computed, as Jung used robust ML; the ML ones otherwise (FIML, or the scaling failed)."""
    fit = fit or {}
    if all(fit.get(k) is not None for k in ("scaling_factor", "rmsea_robust", "cfi_robust")):
        return {
            "robust": True,
            "rmsea": fit["rmsea_robust"],
            "cfi": fit["cfi_robust"],
            "text": "robust ML (Satorra–Bentler): robust RMSEA (Brosseau-Liard, Savalei & Li 2012) and robust CFI "
            "(Brosseau-Liard & Savalei 2014)",
        }
    estimator = "ML with full-information ML for missing data" if fit.get("missing") == "fiml" else "ML"
    why = "" if fit.get("missing") == "fiml" else ", no robust scaling available"
    return {
        "robust": False,
        "rmsea": fit.get("rmsea"),
        "cfi": fit.get("cfi"),
        "text": f"{estimator}{why}: ML RMSEA and CFI",
    }


def satorra_bentler(model, data, observed_order, chi2, dof):
    """The robust ML results of a fitted (listwise, complete-data) semopy model: the scaling factors of the model
    and of the independence baseline, the scaled χ² and robust CFI/TLI/RMSEA."""
    x = np.asarray(data[observed_order], dtype=float)
    n, p = x.shape
    sigma = np.asarray(model.calc_sigma()[0])
    gamma = empirical_gamma(x)
    delta = implied_jacobian(model, observed_order)
    c = satorra_bentler_scaling(normal_theory_weight(sigma), delta, gamma, dof)
    sample = np.cov(x, rowvar=False, ddof=0)
    sign, logdet = np.linalg.slogdet(sample)
    chi2_b = n * (np.log(np.diag(sample)).sum() - logdet) if sign > 0 else None
    df_b = p * (p - 1) // 2
    index = _vech_index(p)
    delta_b = np.zeros((len(index), p))
    for k, (i, j) in enumerate(index):
        if i == j:
            delta_b[k, i] = 1.0
    c_b = satorra_bentler_scaling(normal_theory_weight(np.diag(np.diag(sample))), delta_b, gamma, df_b)
    return robust_fit(chi2, dof, None if chi2_b is None else (chi2_b, df_b), n, c, c_b)
