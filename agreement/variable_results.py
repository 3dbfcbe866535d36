"""Everything the variable page shows, computed once: the report (with bootstrap 95% intervals), the per-annotator
and confusion tables, the gold labels by model, and the label × group contrasts (χ², df, p, Cramér's V) by subject
gender, context type and model. The page, its downloads and the API all read this, so they show the same numbers."""

from __future__ import annotations

from stereoscope.untrusted import whole_number

from . import contrasts, variables
from .rating_tables import AgreementRequestError

DEFAULT_BOOTSTRAP = 1000
MAX_BOOTSTRAP = 5000


def check_bootstrap(raw, default=DEFAULT_BOOTSTRAP):
    """The number of bootstrap resamples from a request parameter (0 skips the intervals)."""
    if raw in (None, ""):
        return default
    number = whole_number(raw)
    if number is None or number > MAX_BOOTSTRAP:
        raise AgreementRequestError(f"bootstrap must be a whole number between 0 and {MAX_BOOTSTRAP}.")
    return number


def variable_results(
    study,
    variable,
    *,
    round_ids=None,
    include_judges=True,
    bootstrap=DEFAULT_BOOTSTRAP,
    seed=0,
    pair=(None, None),
    unit_options=None,
) -> dict:
    unit_options = unit_options or {}
    report = variables.variable_report(
        study,
        variable,
        round_ids=round_ids,
        include_judges=include_judges,
        bootstrap=bootstrap,
        seed=seed,
        **unit_options,
    )
    by_group, by_model = {}, None
    if report["gold"]:
        for by in contrasts.GROUPINGS:
            by_group[by] = contrasts.label_contrast(study, variable, by=by, report=report)["contrast"]
        by_model = contrasts.counts_by_model(study, variable, report=report)
    return {
        "report": report,
        "summary": list(variables.summary_rows(report)),
        "raters": list(variables.rater_rows(report)),
        "rater_columns": variables.rater_columns(report),
        "confusion": variables.confusion(report, *pair),
        "contrasts": by_group,
        "by_model": by_model,
    }


def results_json(results) -> dict:
    """The API shape: the report's JSON plus the tables only the page used to show."""
    body = variables.report_json(results["report"])
    body["bootstrap"] = results["report"].get("bootstrap", 0)
    body["summary"] = [{k: v for k, v in row.items() if k != "ci95"} for row in results["summary"]]
    body["raters_vs_majority"] = results["raters"]
    body["confusion"] = results["confusion"]
    body["contrasts"] = {by: variables.contrast_json(c) for by, c in results["contrasts"].items()}
    by_model = results["by_model"]
    body["by_model"] = (
        {k: by_model[k] for k in ("models", "rows", "totals", "n", "n_ties", "n_excluded")} if by_model else None
    )
    return body


def tables(results):
    """(name, columns, rows) of every table on the page (variables.report_tables)."""
    conf = results["confusion"]
    return variables.report_tables(
        results["report"],
        confusion_pair=(conf["rater_a"], conf["rater_b"]) if conf else None,
        contrasts=results["contrasts"],
        by_model=results["by_model"],
    )
