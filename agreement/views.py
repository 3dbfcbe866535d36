"""Agreement pages: the study report, one table with its drill-down and adjudication, CSV downloads."""

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.html import escape
from django.views.decorators.http import require_POST, require_safe

from judging.selectors import study_round_queryset
from stereoscope.downloads import table_download
from stereoscope.models import Role
from stereoscope.permissions import study_role_required
from stereoscope.stats import agreement as ag
from stereoscope.untrusted import whole_number

from . import services
from .params import number_param, whole_param
from .rating_tables import GOLD, AgreementRequestError, CodingData, build_table, segment_report, study_codebooks


def _codebook(request):
    raw = request.GET.get("codebook", "")
    if raw and whole_number(raw) is None:
        raise AgreementRequestError("codebook must be an id.")
    return services.default_codebook(request.study, whole_number(raw) if raw else None)


def _report_params(request):
    return {
        "codebook": _codebook(request),
        "bootstrap": whole_param(request.GET, "bootstrap", 1000, 0, 5000),
        "low": number_param(request.GET, "threshold", services.LOW_ALPHA, -1, 1),
        "min_overlap": number_param(request.GET, "overlap", 0.9, 0.01, 1),
    }


@study_role_required(Role.RESEARCHER)
@require_safe
def agreement_report(request, study_id):
    try:
        params = _report_params(request)
        report = services.cached_study_report(request.study, **params)
        error = None
    except AgreementRequestError as exc:
        report, error = None, str(exc)
    return render(
        request,
        "agreement/report.html",
        {
            "study": request.study,
            "report": report,
            "error": error,
            "codebooks": study_codebooks(request.study),
            "form_values": {
                "threshold": request.GET.get("threshold") or services.LOW_ALPHA,
                "overlap": request.GET.get("overlap") or 0.9,
                "bootstrap": request.GET.get("bootstrap") or 1000,
            },
        },
        status=400 if error else 200,
    )


def _table_request(request):
    target = request.GET.get("target", "")
    raters = [r for r in request.GET.getlist("raters") if r]
    rounds = request.GET.getlist("rounds")
    if any(whole_number(r) is None for r in rounds):
        raise AgreementRequestError("rounds must be ids.")
    codebook = _codebook(request)

    table = build_table(
        request.study, target, codebook=codebook, raters=raters or None, round_ids=[int(r) for r in rounds] or None
    )
    level = request.GET.get("level") or table.level
    if level not in ag.LEVELS:
        raise AgreementRequestError(f"level must be one of {', '.join(ag.LEVELS)}.")
    return table, level, codebook


@study_role_required(Role.RESEARCHER)
@require_safe
def agreement_table(request, study_id):
    try:
        table, level, codebook = _table_request(request)
        bootstrap = whole_param(request.GET, "bootstrap", 1000, 0, 5000)
        overlap = number_param(request.GET, "overlap", 0.9, 0.01, 1)
    except AgreementRequestError as exc:
        return render(request, "agreement/table.html", {"study": request.study, "error": str(exc)}, status=400)
    result = services.table_result(table, level=level, bootstrap=bootstrap)
    rows, n_disagree = services.disagreement_rows(table, limit=200)
    raters = [(key, table.label(key)) for key in table.matrix.raters]
    a, b = request.GET.get("a"), request.GET.get("b")
    if not (a in table.matrix.raters and b in table.matrix.raters and a != b) and len(raters) >= 2:
        a, b = raters[0][0], raters[1][0]
    confusion = ag.confusion(table.matrix, a, b) if a and b and a != b else None
    return render(
        request,
        "agreement/table.html",
        {
            "study": request.study,
            "table": table,
            "result": result,
            "level": level,
            "levels": ag.LEVELS,
            "pairs": [
                dict(p, label_a=table.label(p["rater_a"]), label_b=table.label(p["rater_b"])) for p in result.pairs
            ],
            "versus": services.rater_comparisons(table, level=level),
            "disagreements": rows,
            "n_disagree": n_disagree,
            "raters": raters,
            "confusion": _confusion_context(table, confusion),
            "gold_values": services.allowed_gold_values(table.target),
            "all_raters": _all_raters(request, table),
            "selected_raters": request.GET.getlist("raters"),
            "judge_rounds": _judge_rounds(request.study) if table.target == "stereotype" else [],
            "segments": _segments(request.study, codebook, table.target, overlap),
            "overlap": overlap,
            "selected_rounds": [int(r) for r in request.GET.getlist("rounds")],
            "can_adjudicate": True,
            "codebook": codebook,
            "query": request.GET.urlencode(),
            "gold_key": GOLD,
        },
    )


def _segments(study, codebook, target, overlap):
    """Span-level matching between coders for a code table (MAXQDA-style overlap share)."""
    if not target.startswith("code:") or codebook is None:
        return None

    return segment_report(CodingData(study, codebook), int(target.split(":")[1]), overlap)


def _judge_rounds(study):

    return list(study_round_queryset(study).order_by("-created_at", "-id"))


def _all_raters(request, table):
    """Every rater the table could have (for the rater-set checkboxes), not only the chosen ones."""
    if not request.GET.getlist("raters"):
        return [(key, table.label(key)) for key in table.matrix.raters]

    rounds = [int(r) for r in request.GET.getlist("rounds")] or None
    full = build_table(request.study, table.target, codebook=_codebook(request), round_ids=rounds)
    return [(key, full.label(key)) for key in full.matrix.raters]


def _confusion_context(table, confusion):
    if not confusion:
        return None
    return dict(
        confusion,
        label_a=table.label(confusion["rater_a"]),
        label_b=table.label(confusion["rater_b"]),
        rows=list(zip(confusion["categories"], confusion["table"], strict=True)),
    )


@study_role_required(Role.RESEARCHER)
@require_safe
def agreement_confusion(request, study_id):
    """htmx partial: the confusion table of the chosen pair."""
    try:
        table, _level, _codebook = _table_request(request)
        a, b = request.GET.get("a"), request.GET.get("b")
        if a not in table.matrix.raters or b not in table.matrix.raters or a == b:
            raise AgreementRequestError("Choose two different raters of this table.")
    except AgreementRequestError as exc:
        return HttpResponse(f'<p class="error">{_escape(str(exc))}</p>', status=400)
    confusion = _confusion_context(table, ag.confusion(table.matrix, a, b))
    return render(request, "agreement/confusion.html", {"confusion": confusion})


def _escape(text):

    return escape(text)


@study_role_required(Role.RESEARCHER)
@require_POST
def agreement_gold(request, study_id):
    """Set or clear the gold value of one story for one target (htmx swaps the cell; plain POST redirects back)."""
    target, output_id = request.POST.get("target", ""), request.POST.get("output", "")
    value = request.POST.get("value", "")
    try:
        if value == "clear":
            services.clear_gold(request.study, target=target, output_id=output_id, user=request.user)
            gold = None
        else:
            gold = services.set_gold(
                request.study,
                target=target,
                output_id=output_id,
                value=value,
                user=request.user,
                note=request.POST.get("note", ""),
            )
        error = None
    except AgreementRequestError as exc:
        gold, error = None, str(exc)
    if request.htmx:
        context = {
            "study": request.study,
            "target": target,
            "output_id": output_id,
            "gold": gold.value if gold else None,
            "gold_values": services.allowed_gold_values(target) if not error else [],
            "error": error,
        }
        return render(request, "agreement/gold_cell.html", context, status=400 if error else 200)
    if error:
        messages.error(request, error)
    else:
        messages.success(request, "Gold label saved." if gold else "Gold label cleared.")
    back = request.POST.get("next", "")
    if back.startswith("/studies/"):
        return redirect(back)
    return redirect(reverse("agreement-table", args=[request.study.pk]) + f"?target={target}")


@study_role_required(Role.RESEARCHER)
@require_safe
def agreement_export(request, study_id):
    """CSV of any agreement table: report, coder_matrix, judge_human, ratings, pairs, confusion, disagreements, gold."""
    kind = request.GET.get("table", "report")
    try:
        header, rows = _export_rows(request, kind)
    except AgreementRequestError as exc:
        return HttpResponse(str(exc), status=400, content_type="text/plain; charset=utf-8")
    columns = _unique_columns(header)
    return table_download(
        columns, (dict(zip(columns, row, strict=True)) for row in rows), f"agreement-{kind}-study{request.study.pk}.csv"
    )


def _unique_columns(header):
    """Column names for the table writer: a repeated label (two raters shown alike) gets " (2)", " (3)" ..."""
    used, out = set(), []
    for name in map(str, header):
        candidate, n = name, 1
        while candidate in used:
            n += 1
            candidate = f"{name} ({n})"
        used.add(candidate)
        out.append(candidate)
    return out


EXPORT_TABLES = ("report", "coder_matrix", "judge_human", "ratings", "pairs", "confusion", "disagreements", "gold")


def _export_rows(request, kind):
    study = request.study
    if kind not in EXPORT_TABLES:
        raise AgreementRequestError(f"table must be one of {', '.join(EXPORT_TABLES)}.")
    if kind == "report":
        rows = list(services.agreement_rows(study, {"bootstrap": whole_param(request.GET, "bootstrap", 1000, 0, 5000)}))
        header = list(rows[0]) if rows else ["target"]
        return header, [list(r.values()) for r in rows]
    if kind == "gold":
        rows = list(services.gold_label_rows(study))
        header = ["target", "output_id", "value", "value_name", "decided_by", "note", "updated_at"]
        return header, [list(r.values()) for r in rows]
    if kind == "coder_matrix":
        report = services.study_report(study, codebook=_codebook(request), bootstrap=0)
        out = []
        for name, cells in report["coder_matrix"]:
            for other, cell in zip(report["coders"], cells, strict=True):
                if cell:
                    out.append([name, other, cell["n_units"], cell["kappa"], cell["percent_agreement"]])
        return ["coder_a", "coder_b", "n_units", "kappa", "percent_agreement"], out
    if kind == "judge_human":
        matrix = services.judge_human_matrix(study, _codebook(request))
        out = []
        for judge, cells in (matrix or {}).get("rows", []):
            for human, cell in zip(matrix["humans"], cells, strict=True):
                out.append(
                    [
                        judge,
                        human,
                        cell["n_units"] if cell else 0,
                        cell["kappa"] if cell else None,
                        cell["weighted_kappa"] if cell else None,
                        cell["percent_agreement"] if cell else None,
                    ]
                )
        return ["judge", "human", "n_units", "kappa", "weighted_kappa", "percent_agreement"], out
    table, level, _codebook_obj = _table_request(request)
    if kind == "ratings":
        return ["unit", "rater", "value"], [[u, r, v] for u, r, v in table.long_rows()]
    if kind == "pairs":
        result = services.table_result(table, level=level, bootstrap=0)
        return (
            ["rater_a", "rater_b", "n_units", "kappa", "weighted_kappa", "percent_agreement"],
            [
                [
                    table.label(p["rater_a"]),
                    table.label(p["rater_b"]),
                    p["n_units"],
                    p["kappa"],
                    p["weighted_kappa"],
                    p["percent_agreement"],
                ]
                for p in result.pairs
            ],
        )
    if kind == "confusion":
        a, b = request.GET.get("a"), request.GET.get("b")
        if a not in table.matrix.raters or b not in table.matrix.raters or a == b:
            raise AgreementRequestError("Choose two different raters of this table with a= and b=.")
        conf = ag.confusion(table.matrix, a, b)
        header = [f"{table.label(a)} \\ {table.label(b)}"] + [str(c) for c in conf["categories"]]
        return header, [[c] + row for c, row in zip(conf["categories"], conf["table"], strict=True)]
    if kind == "disagreements":
        rows, _n = services.disagreement_rows(table)
        raters = [k for k in table.matrix.raters if k != GOLD]
        return (
            ["output_id", "story"] + [table.label(k) for k in raters] + ["gold"],
            [[r["output_id"], r["label"]] + [v["value"] for v in r["values"]] + [r["gold"]] for r in rows],
        )
    raise AgreementRequestError(f"table must be one of {', '.join(EXPORT_TABLES)}.")
