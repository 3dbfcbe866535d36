"""Datasets for the export registry (stereoscope/datasets.py): questionnaire responses (long) and scores per
context. Also the tables of a run's downloads (written by stereoscope.downloads)."""

import json

from stereoscope.datasets import Column, register_dataset

from .models import QuestionnaireRun, Response
from .reliability import rate_internal_consistency
from .reports import scores_table

RESPONSE_COLUMNS = [
    ("run_id", "Questionnaire run id"),
    ("run", "Run name"),
    ("instrument", "Instrument name"),
    ("instrument_version", "Instrument version"),
    ("model", "Model id that answered"),
    ("endpoint", "Endpoint name"),
    ("context", "Context key"),
    ("persona", "System persona of the context (empty if none)"),
    ("context_attributes", "The context's persona attributes (JSON), e.g. title and surname group"),
    ("repetition", "Repetition number"),
    ("seed", "Provider seed this unit was sent with (empty = none)"),
    ("item", "Item id"),
    ("subscale", "Item subscale"),
    ("reverse", "1 if the item is reverse-coded"),
    ("option_order", "fixed / reversed / permuted"),
    ("permutation", "Original scale values in the order shown, e.g. 3|0|5|1|2|4"),
    ("status", "done / failed / pending"),
    ("raw_text", "The model's answer, verbatim"),
    ("extraction", "ok / refused / inconclusive / not_present"),
    ("extracted_code", "The option code as shown"),
    ("value", "Answer on the original scale (empty = missing)"),
    ("recoded", "Value after reverse recoding"),
    ("extraction_method", "Extractor that decided"),
    ("error", "Provider error if the call failed"),
    ("completed_at", "When the answer arrived (ISO 8601)"),
    ("template", "Prompt template key"),
    ("order_seed", "Seed of the option permutations"),
    ("messages", "The rendered prompt exactly as sent (JSON list of messages: system, prior turns, user)"),
    ("params", "Generation parameters (JSON) of the run's overrides"),
    ("extractors", "Extractor chain"),
]
SCORE_COLUMNS = [
    ("run_id", "Questionnaire run id"),
    ("run", "Run name"),
    ("instrument", "Instrument"),
    ("model", "Endpoint name"),
    ("context", "Context key"),
    ("repetition", "Repetition"),
    ("score", "Subscale name or total"),
    ("value", "Score (mean or sum, per the instrument) after recoding"),
    ("answered", "Items answered in this (sub)scale"),
]


def _runs(study, options):
    runs = QuestionnaireRun.objects.filter(study=study).select_related("instrument")
    if options.get("run_ids"):
        runs = runs.filter(pk__in=options["run_ids"])
    return runs.order_by("pk")


def _count_responses(study, options):
    qs = Response.objects.filter(run__in=_runs(study, options))
    return qs.filter(model_name__in=options["models"]).count() if options.get("models") else qs.count()


@register_dataset(
    "questionnaire_responses",
    title="Questionnaire responses (long: raw text, extraction, permutation)",
    app="psychometrics",
    columns=tuple(Column(n, d) for n, d in RESPONSE_COLUMNS),
    count=_count_responses,
)
def response_rows(study, options=None):
    options = options or {}
    for run in _runs(study, options):
        lo, hi = run.instrument.scale_min, run.instrument.scale_max
        params = json.dumps(run.param_overrides or {}, sort_keys=True)
        qs = (
            Response.objects.filter(run=run)
            .select_related("item", "context", "endpoint")
            .order_by("endpoint__name", "context__order", "context__key", "repetition", "item__position")
        )
        if options.get("models"):
            qs = qs.filter(model_name__in=options["models"])
        for r in qs.iterator(chunk_size=2000):
            recoded = None if r.value is None else (lo + hi - r.value if r.item.reverse else r.value)
            yield {
                "run_id": run.pk,
                "run": run.name,
                "instrument": run.instrument.name,
                "instrument_version": run.instrument.version,
                "model": r.model_name,
                "endpoint": r.endpoint.name,
                "context": r.context_key,
                "persona": r.context.persona if r.context_id else "",
                "context_attributes": json.dumps(
                    (r.context.attributes if r.context_id else None) or {}, sort_keys=True, ensure_ascii=False
                ),
                "repetition": r.repetition,
                "seed": r.seed,
                "messages": json.dumps(r.messages, ensure_ascii=False),
                "item": r.item.item_id,
                "subscale": r.item.subscale,
                "reverse": int(r.item.reverse),
                "option_order": run.option_order,
                "permutation": "|".join(f"{v:g}" for v in r.permutation),
                "status": r.status,
                "raw_text": r.raw_text,
                "extraction": r.extraction,
                "extracted_code": r.extracted_code,
                "value": r.value,
                "recoded": recoded,
                "extraction_method": r.extraction_method,
                "error": r.error,
                "completed_at": r.completed_at.isoformat() if r.completed_at else "",
                "template": run.template_key,
                "order_seed": run.order_seed,
                "params": params,
                "extractors": ",".join(run.extractors or []),
            }


@register_dataset(
    "questionnaire_scores",
    title="Questionnaire scores per context (after recoding)",
    app="psychometrics",
    columns=tuple(Column(n, d) for n, d in SCORE_COLUMNS),
)
def score_rows(study, options=None):
    options = options or {}
    for run in _runs(study, options):
        for row in scores_table(run):
            if options.get("models") and row["model"] not in options["models"]:
                continue
            for name in [k for k in row if k not in ("model", "context", "repetition") and not k.endswith("_answered")]:
                yield {
                    "run_id": run.pk,
                    "run": run.name,
                    "instrument": str(run.instrument),
                    "model": row["model"],
                    "context": row["context"],
                    "repetition": row["repetition"],
                    "score": name,
                    "value": row[name],
                    "answered": row[f"{name}_answered"],
                }


def workbook_sheets(sheets):
    """[(title, rows, columns)] -> the sheets of a run's workbook for the table writer: a "columns" sheet
    describing every column first, then one sheet per table."""
    described = [
        {"sheet": title, "column": name, "description": text} for title, _, columns in sheets for name, text in columns
    ]
    return [("columns", ["sheet", "column", "description"], described)] + [
        (title, [name for name, _ in columns], rows) for title, rows, columns in sheets
    ]


ITEM_COLUMNS = [
    ("model", "Endpoint"),
    ("item", "Item id"),
    ("subscale", "Subscale"),
    ("n", "Answers"),
    ("mean", "Item mean (recoded)"),
    ("variance", "Item variance"),
    ("corrected_item_total_r", "Corrected item–subscale correlation"),
    ("alpha_if_deleted", "Subscale alpha without the item"),
    ("zero_variance", "1 = zero variance"),
]
RELIABILITY_COLUMNS = [
    ("model", "Endpoint"),
    ("measure", "Statistic"),
    ("scope", "Subscale, total or model"),
    ("value", "Value (empty = undefined)"),
    ("rating", "Jung 2025 Table 4.2 rating"),
    ("detail", "df, p, CI or estimator"),
]


# CFA statistics exported per model; the factorial rating sits on the RMSEA and CFI it used (robust or ML)
CFA_KEYS = (
    "chi2",
    "df",
    "p",
    "cfi",
    "tli",
    "rmsea",
    "rmsea_ci_low",
    "rmsea_ci_high",
    "srmr",
    "chi2_scaled",
    "p_scaled",
    "scaling_factor",
    "cfi_robust",
    "tli_robust",
    "rmsea_robust",
)


def item_rows(report):
    for m in report["models"]:
        for row in m["analysis"]["items"]:
            yield {"model": m["endpoint"], **row, "zero_variance": int(row["zero_variance"])}


def reliability_rows(report):

    for m in report["models"]:
        a = m["analysis"]
        for scope, detail in a["alpha_detail"].items():
            yield {
                "model": m["endpoint"],
                "measure": "cronbach_alpha",
                "scope": scope,
                "value": detail["alpha"],
                "rating": rate_internal_consistency(detail["alpha"]),
                "detail": f"n={detail['n']}, k={detail['k']}, 95% CI [{detail['ci_low']}, {detail['ci_high']}]",
            }
        yield {
            "model": m["endpoint"],
            "measure": "stratified_alpha",
            "scope": "total",
            "value": a["stratified_alpha"],
            "rating": a["ratings"]["internal_consistency"],
            "detail": "Jung eq. 4.2 on item sums",
        }
        for scope, value in (a.get("omega") or {}).items():
            yield {
                "model": m["endpoint"],
                "measure": "omega",
                "scope": scope,
                "value": value,
                "rating": "",
                "detail": "from the CFA",
            }
        cfa = a.get("cfa") or {}
        basis = a["ratings"].get("factorial_basis") or {}
        rated = ("rmsea_robust", "cfi_robust") if basis.get("robust") else ("rmsea", "cfi")
        for key in CFA_KEYS:
            yield {
                "model": m["endpoint"],
                "measure": f"cfa_{key}",
                "scope": "model",
                "value": cfa.get(key),
                "rating": a["ratings"]["factorial"] if key in rated else "",
                "detail": f"rated on {basis.get('text')}" if key in rated and basis else cfa.get("estimator", ""),
            }
        for ld in cfa.get("loadings", []):
            yield {
                "model": m["endpoint"],
                "measure": "std_loading",
                "scope": f"{ld['factor']}/{ld['item']}",
                "value": ld["std"],
                "rating": "",
                "detail": f"p={ld['p']}",
            }
