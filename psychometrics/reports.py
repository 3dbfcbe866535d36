"""Reads: the analysis report of a run (per model), cross-run comparisons, the missing-value table and the
extraction audit. Pure statistics come from analysis / reliability / validity / group_tests."""

from django.db.models import Count, Q

from measures.selectors import context_scores
from stereoscope.lazy_imports import LazyModule

from . import reliability
from .analysis import analyze, sanitize
from .group_tests import (
    PAIRWISE_FAMILY,
    anova_models,
    between_groups,
    model_by_dimension,
    one_sample_t,
    rm_anova_dimensions,
)
from .models import BARE_CONTEXT_KEY, Context, ExtractionAudit, InstrumentItem, Response, ResponseStatus
from .scoring import score, score_names
from .validity import correlation

pd = LazyModule("pandas")

STATUSES = ["ok", "refused", "inconclusive", "not_present"]


def response_frame(run):
    """Long DataFrame of a run's responses: endpoint_id, endpoint, context, repetition, item, value, extraction,
    status. Fetches ids only and maps names in Python (fast for large runs)."""

    rows = list(
        run.responses.values_list("endpoint_id", "context_id", "repetition", "item_id", "value", "extraction", "status")
    )
    frame = pd.DataFrame.from_records(
        rows, columns=["endpoint_id", "context_id", "repetition", "item_id", "value", "extraction", "status"]
    )
    endpoints = dict(run.endpoints.values_list("pk", "name"))
    endpoints.update(
        dict(
            run.responses.exclude(endpoint_id__in=list(endpoints))
            .order_by()
            .values_list("endpoint_id", "endpoint__name")
            .distinct()
        )
    )
    contexts = dict(Context.objects.filter(context_set_id=run.context_set_id).values_list("pk", "key"))
    items = dict(InstrumentItem.objects.filter(instrument_id=run.instrument_id).values_list("pk", "item_id"))
    frame["endpoint"] = frame["endpoint_id"].map(endpoints)
    frame["context"] = frame["context_id"].map(contexts).where(frame["context_id"].notna(), BARE_CONTEXT_KEY)
    frame["item"] = frame["item_id"].map(items)
    return frame


def wide_by_endpoint(run, spec, frame=None):
    """{endpoint name: wide DataFrame (index = (context, repetition), columns = item ids)} of extracted values."""
    frame = response_frame(run) if frame is None else frame
    out = {}
    for name, group in frame.groupby("endpoint", sort=True):
        wide = group.pivot_table(
            index=["context", "repetition"], columns="item", values="value", aggfunc="first", dropna=False
        )
        wide = wide.reindex(columns=spec.item_ids())
        # respondents whose every unit is still pending are not respondents yet
        answered = group[group["status"] != ResponseStatus.PENDING].groupby(["context", "repetition"]).size()
        out[name] = wide.loc[wide.index.isin(answered.index)].astype(float)
    return out


def audit_summary(run):
    """Per endpoint: audited responses, how many extractions were right, accuracy (Jung: 100 per model)."""
    rows = (
        ExtractionAudit.objects.filter(response__run=run)
        .values("response__endpoint__name")
        .annotate(n=Count("id"), correct=Count("id", filter=Q(correct=True)))
    )
    sampled = dict(run.responses.filter(audit_sampled=True).values_list("endpoint__name").annotate(n=Count("id")))
    out = {}
    for r in rows:
        name = r["response__endpoint__name"]
        out[name] = {
            "sampled": sampled.get(name, 0),
            "audited": r["n"],
            "correct": r["correct"],
            "accuracy": r["correct"] / r["n"] if r["n"] else None,
        }
    for name, n in sampled.items():
        out.setdefault(name, {"sampled": n, "audited": 0, "correct": 0, "accuracy": None})
    return out


def extraction_counts(frame):
    """{endpoint: {ok, refused, inconclusive, not_present, failed, pending, total}}"""
    out = {}
    for name, group in frame.groupby("endpoint", sort=True):
        counts = group["extraction"].value_counts().to_dict()
        row = {s: int(counts.get(s, 0)) for s in STATUSES}
        row["failed"] = int((group["status"] == ResponseStatus.FAILED).sum())
        row["pending"] = int((group["status"] == ResponseStatus.PENDING).sum())
        row["total"] = int(len(group))
        row["missing"] = row["total"] - row["ok"]
        out[name] = row
    return out


def svg_bars(hist, width=320, height=120):
    """Coordinates for an inline SVG histogram (rendered by the template, autoescaped)."""
    if not hist:
        return None
    top = max(b["count"] for b in hist) or 1
    w = width / len(hist)
    bars = [
        {
            "x": round(i * w, 2),
            "w": round(w - 2, 2),
            "h": round(b["count"] / top * (height - 20), 2),
            "y": round(height - 20 - b["count"] / top * (height - 20), 2),
            "count": b["count"],
            "label": f"{b['lo']:.2f}–{b['hi']:.2f}",
        }
        for i, b in enumerate(hist)
    ]
    return {"width": width, "height": height, "bars": bars, "lo": hist[0]["lo"], "hi": hist[-1]["hi"], "max": top}


def run_report(run, cfa=True):
    spec = run.instrument.to_spec()
    frame = response_frame(run)
    wides = wide_by_endpoint(run, spec, frame)
    counts = extraction_counts(frame) if len(frame) else {}
    audits = audit_summary(run)
    models = []
    long_rows = []
    names = score_names(spec)
    for name, wide in wides.items():
        result = analyze(wide.reset_index(drop=True), spec, cfa=cfa)
        result["svg"] = {n: svg_bars(h) for n, h in result.get("histograms", {}).items()}
        models.append(
            {"endpoint": name, "analysis": result, "extraction": counts.get(name, {}), "audit": audits.get(name)}
        )
        scores = score(wide, spec)
        for (context, rep), row in scores.iterrows():
            for n in names:
                long_rows.append({"model": name, "subject": f"{name}|{context}|{rep}", "dimension": n, "score": row[n]})
    report = {
        "run": run,
        "instrument": run.instrument,
        "spec": spec,
        "models": models,
        "missing_policy": spec.missing_policy_text(),
        "score_names": names,
        "missing_table": [{"model": m["endpoint"], "form": str(run.instrument), **m["extraction"]} for m in models],
    }
    report["group_tests"] = group_tests(pd.DataFrame(long_rows), spec) if long_rows else None
    report["attribute_tests"] = attribute_tests(run, long_rows)
    return report


def attribute_tests(run, long_rows):
    """R.U.Psycho's persona-induced bias: for each persona attribute with two or more values (e.g. title Mr/Ms,
    surname group), each model's scores compared across the values (Welch t or one-way ANOVA, with effect sizes)."""

    attributes = dict(Context.objects.filter(context_set_id=run.context_set_id).values_list("key", "attributes"))
    keys = sorted({k for attrs in attributes.values() for k in (attrs or {})})
    out = []
    for key in keys:
        levels = {str((attrs or {}).get(key)) for attrs in attributes.values() if (attrs or {}).get(key) is not None}
        if len(levels) < 2:
            continue
        cells = {}
        for row in long_rows:
            model, context, _ = row["subject"].split("|", 2)
            value = (attributes.get(context) or {}).get(key)
            if value is None or row["score"] is None or pd.isna(row["score"]):
                continue
            cells.setdefault((model, row["dimension"]), {}).setdefault(str(value), []).append(row["score"])
        for (model, score_name), groups in sorted(cells.items()):
            out.append({"endpoint": model, "attribute": key, "score": score_name, **between_groups(groups)})
    return sanitize(out)


def prompt_variant_table(study):
    """R.U.Psycho's Table 1: per prompt variant (template) and model, the share of answered prompts that were invalid
    (no option found), refused or inconclusive."""
    rows = (
        Response.objects.filter(run__study=study)
        .exclude(status=ResponseStatus.PENDING)
        .values("run__template_key", "model_name")
        .annotate(
            n=Count("id"),
            invalid=Count("id", filter=Q(extraction="not_present")),
            refused=Count("id", filter=Q(extraction="refused")),
            inconclusive=Count("id", filter=Q(extraction="inconclusive")),
        )
        .order_by("run__template_key", "model_name")
    )
    return [
        {
            "template": r["run__template_key"],
            "model": r["model_name"],
            "n": r["n"],
            **{k: r[k] / r["n"] for k in ("invalid", "refused", "inconclusive")},
        }
        for r in rows
        if r["n"]
    ]


def group_tests(long, spec):
    """Fang 2025 Phase 1: t against the midpoint per model × score, ANOVA across models, RM ANOVA across
    dimensions (subscales), model × dimension interaction."""
    mid = spec.scale.midpoint if spec.scoring == "mean" else None
    out = {
        "midpoint": mid,
        "one_sample": [],
        "anova": {},
        "rm_anova": None,
        "interaction": None,
        "family": PAIRWISE_FAMILY,
    }
    if mid is not None:
        for (model, dim), group in long.groupby(["model", "dimension"], sort=True):
            out["one_sample"].append({"model": model, "score": dim, **one_sample_t(group["score"], mid)})
    for dim, group in long.groupby("dimension", sort=False):
        if group["model"].nunique() > 1:
            out["anova"][dim] = anova_models(group)
    subs = long[long["dimension"] != "total"]
    if subs["dimension"].nunique() > 1:
        out["rm_anova"] = rm_anova_dimensions(subs)
        if subs["model"].nunique() > 1:
            out["interaction"] = model_by_dimension(subs)
    return sanitize(out)


COMPARISONS = {
    "alternate_form": ("Alternate-form reliability", reliability.rate_internal_consistency),
    "option_order": ("Option-order symmetry", reliability.rate_option_order),
    "convergent": ("Convergent validity", reliability.rate_convergent),
    "concurrent": ("Concurrent validity", reliability.rate_concurrent),
    "repeat": ("Test–retest", reliability.rate_internal_consistency),
}


def compare_runs(run_a, run_b, kind="alternate_form"):
    """Pearson r between the scores of two runs over the same contexts, per model (matched by endpoint) and per
    score shared by both instruments (total always), with df, p and Jung's rating."""
    if kind not in COMPARISONS:
        raise ValueError(f"Unknown comparison {kind!r}; choose one of {', '.join(COMPARISONS)}.")
    title, rate = COMPARISONS[kind]
    spec_a, spec_b = run_a.instrument.to_spec(), run_b.instrument.to_spec()
    wa, wb = wide_by_endpoint(run_a, spec_a), wide_by_endpoint(run_b, spec_b)
    shared = (
        [n for n in score_names(spec_a) if n in score_names(spec_b)]
        if kind in ("alternate_form", "option_order", "repeat")
        else ["total"]
    )
    notes = []
    if run_a.context_set_id != run_b.context_set_id:
        notes.append("The runs use different context sets; contexts are matched by key.")
    rows = []
    for name in sorted(set(wa) & set(wb)):
        sa, sb = score(wa[name], spec_a), score(wb[name], spec_b)
        joined = sa.add_suffix("_a").join(sb.add_suffix("_b"), how="inner")
        for n in shared:
            c = correlation(joined[f"{n}_a"], joined[f"{n}_b"])
            rows.append({"model": name, "score": n, **c, "rating": rate(c["r"])})
    if not rows:
        notes.append("The runs share no endpoint with answers.")
    return sanitize({"kind": kind, "title": title, "rows": rows, "notes": notes})


def scores_table(run):
    """Scores per context × repetition × model (for exports)."""
    spec = run.instrument.to_spec()
    rows = []
    for name, wide in wide_by_endpoint(run, spec).items():
        s = score(wide, spec)
        for (context, rep), row in s.iterrows():
            rec = {"model": name, "context": context, "repetition": int(rep)}
            for n in score_names(spec):
                rec[n] = None if pd.isna(row[n]) else float(row[n])
                rec[f"{n}_answered"] = int(row[f"{n}__answered"])
            rows.append(rec)
    return rows


def missing_counts_by_form(study):
    """Jung Table B.2: missing values per model × form over all runs of a study."""
    rows = (
        Response.objects.filter(run__study=study)
        .exclude(status=ResponseStatus.PENDING)
        .values("model_name", "run__instrument__name", "run__option_order")
        .annotate(total=Count("id"), missing=Count("id", filter=~Q(extraction="ok")))
        .order_by("model_name", "run__instrument__name")
    )
    return list(rows)


def questionnaire_context_scores(run, score_name="total"):
    """{endpoint name: Series (index = context key) of the score, averaged over repetitions}."""
    spec = run.instrument.to_spec()
    out = {}
    for name, wide in wide_by_endpoint(run, spec).items():
        scores = score(wide, spec)
        if score_name in scores:
            out[name] = scores[score_name].groupby(level="context").mean()
    return out


def concurrent_validity(run, measure_run):
    """Jung's concurrent validity: per model (matched by endpoint name) and lexicon, Pearson r over contexts between
    the questionnaire total (mean over repetitions) and the context score of texts written in the same contexts."""

    questionnaire = questionnaire_context_scores(run)
    letters = {}
    for row in context_scores(measure_run):
        letters.setdefault((row["endpoint"], row["lexicon"]), {})[row["context"]] = row["score"]
    rows = []
    for (endpoint, lexicon), by_context in sorted(letters.items()):
        if endpoint not in questionnaire:
            continue
        c = correlation(questionnaire[endpoint], pd.Series(by_context, dtype=float))
        rows.append({"model": endpoint, "lexicon": lexicon, **c, "rating": reliability.rate_concurrent(c["r"])})
    return rows


def validation_summary(run, alternate=None, option_order=None, convergent=None, concurrent=None):
    """Jung 2025's validation per model (Table 4.2 ratings): internal consistency (stratified alpha of `run`),
    alternate-form r (`alternate`: the parallel form over the same contexts), option-order r (`option_order`: the
    same form with permuted options), then — only when all three reliability ratings are "+" or better — factorial
    validity (CFA of `run`) and convergent r (`convergent`: another scale, e.g. the MSS)."""
    report = run_report(run)
    comparisons = {}
    concurrent_rows = concurrent_validity(run, concurrent) if concurrent is not None else []
    for key, other in (("alternate_form", alternate), ("option_order", option_order), ("convergent", convergent)):
        if other is not None:
            comparisons[key] = {(r["model"], r["score"]): r for r in compare_runs(run, other, key)["rows"]}
    rows = []
    for m in report["models"]:
        a = m["analysis"]
        name = m["endpoint"]
        alt = comparisons.get("alternate_form", {}).get((name, "total"))
        order = comparisons.get("option_order", {}).get((name, "total"))
        conv = comparisons.get("convergent", {}).get((name, "total"))
        reliability_ratings = [a["ratings"]["internal_consistency"], alt and alt["rating"], order and order["rating"]]
        gate = reliability.reliability_gate(reliability_ratings)
        cfa = a.get("cfa") or {}
        basis = a["ratings"].get("factorial_basis") or {}
        rows.append(
            {
                "model": name,
                "stratified_alpha": a["stratified_alpha"],
                "internal_consistency": a["ratings"]["internal_consistency"],
                "alternate_form": alt,
                "option_order": order,
                "gate": gate,
                "rmsea": basis.get("rmsea", cfa.get("rmsea")),
                "cfi": basis.get("cfi", cfa.get("cfi")),
                "factorial_basis": basis.get("text"),
                "factorial": a["ratings"]["factorial"] if gate else None,
                "convergent": conv if gate else None,
                "concurrent": [
                    {**c, "rating": c["rating"] if gate else None} for c in concurrent_rows if c["model"] == name
                ],
                "note": ""
                if gate
                else "Validity not assessed: not every reliability rating (internal consistency, "
                "alternate form, option order) is + or better, or one is missing.",
            }
        )
    return sanitize({"rows": rows, "missing_policy": report["missing_policy"]})
