"""Pages for categorical variables: agreement (coders and judges), majority gold and adjudication of ties."""

from urllib.parse import urlencode

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from annotation.selectors import study_variables
from annotation.services import AnnotationError, update_code
from stereoscope.downloads import table_download, workbook_download
from stereoscope.models import Role
from stereoscope.permissions import study_role_required
from stereoscope.untrusted import whole_number

from . import contrasts, variables
from .rating_tables import AgreementRequestError
from .variable_results import check_bootstrap, tables, variable_results


@study_role_required(Role.RESEARCHER)
@require_safe
def variable_list(request, study_id):

    return render(
        request, "agreement/variables.html", {"study": request.study, "variables": study_variables(request.study)}
    )


def _results(request):
    """(variable, results, unit options) of the variable page's request."""

    variable = variables.get_variable(request.study, request.resolver_match.kwargs["variable_id"])
    rounds = [r for r in request.GET.getlist("rounds") if r]
    if any(whole_number(r) is None for r in rounds):
        raise AgreementRequestError("rounds must be ids.")
    unit_options = variables.unit_options(variable, request.GET.get("units"), request.GET.get("overlap"))
    results = variable_results(
        request.study,
        variable,
        round_ids=[int(r) for r in rounds] or None,
        include_judges=request.GET.get("judges", "1") != "0",
        bootstrap=check_bootstrap(request.GET.get("bootstrap")),
        pair=(request.GET.get("a"), request.GET.get("b")),
        unit_options=unit_options,
    )
    return variable, results, unit_options


@study_role_required(Role.RESEARCHER)
@require_safe
def variable_detail(request, study_id, variable_id):

    try:
        variable, results, unit_options = _results(request)
        by = request.GET.get("by", "gender")
        if by not in contrasts.GROUPINGS:
            raise AgreementRequestError(f"Group by one of {', '.join(contrasts.GROUPINGS)}.")
    except AgreementRequestError as exc:
        return render(request, "agreement/variable.html", {"study": request.study, "error": str(exc)}, status=400)
    report = results["report"]
    contrast = results["contrasts"].get(by)
    show = request.GET.get("show", "ties")
    gold = [g for g in report["gold"] if g["undecided"]] if show == "ties" else report["gold"]
    keep = {k: request.GET[k] for k in ("units", "overlap", "bootstrap", "judges", "by") if request.GET.get(k)}
    keep_rounds = [("rounds", r) for r in request.GET.getlist("rounds") if r]
    confusion = results["confusion"]
    return render(
        request,
        "agreement/variable.html",
        {
            "study": request.study,
            "report": report,
            "summary": results["summary"],
            "raters": [dict(r, value_counts=[r[f"n_{v}"] for v in report["values"]]) for r in results["raters"]],
            "confusion": confusion,
            "confusion_rows": list(zip(confusion["values"], confusion["table"], strict=True)) if confusion else [],
            "gold_rows": gold,
            "show": show,
            "variable": variable,
            "by": by,
            "groupings": contrasts.GROUPINGS,
            "by_model": results["by_model"],
            "unit_options": unit_options,
            "span_units": variables.SPAN_UNITS,
            "contrast": contrast,
            "contrast_rows": list(zip(contrast.groups, contrast.table, strict=True)) if contrast else [],
            "download_query": urlencode(list(keep.items()) + keep_rounds),
            "download_tables": DOWNLOAD_TABLES,
        },
    )


DOWNLOAD_TABLES = ("gold", "summary", "raters", "confusion", "by_gender", "by_context", "by_model", "ratings")
DOWNLOAD_FORMATS = ("csv", "xlsx")


@study_role_required(Role.RESEARCHER)
@require_safe
def variable_download(request, study_id, variable_id):
    """One table of the variable page as CSV or XLSX (?table=...&format=csv|xlsx), or every table as one XLSX
    workbook (?table=all&format=xlsx); the page's own parameters (units, rounds, judges, bootstrap) apply."""

    name, fmt = request.GET.get("table", "gold"), request.GET.get("format", "csv")
    try:
        if fmt not in DOWNLOAD_FORMATS:
            raise AgreementRequestError(f"format must be one of {', '.join(DOWNLOAD_FORMATS)}.")
        if name == "all" and fmt != "xlsx":
            raise AgreementRequestError("Every table at once comes as an XLSX workbook: use format=xlsx.")
        variable, results, _unit_options = _results(request)
        found = {t[0]: t for t in tables(results)}
        if name != "all" and name not in found:
            known = [t for t in found if t != "judges_vs_gold"] + ["all"]
            raise AgreementRequestError(f"table must be one of {', '.join(known)} (this variable has no “{name}”).")
    except AgreementRequestError as exc:
        return HttpResponse(str(exc), status=400, content_type="text/plain; charset=utf-8")
    stem = f"variable{variable.pk}-study{request.study.pk}"
    if name == "all":
        return workbook_download(list(found.values()), f"{stem}.xlsx")
    _name, columns, rows = found[name]
    return table_download(columns, rows, f"{stem}-{name}.{fmt}", fmt=fmt, sheet=name)


@study_role_required(Role.RESEARCHER)
@require_POST
def variable_gold(request, study_id, variable_id):
    try:
        variable = variables.get_variable(request.study, variable_id)
        variables.set_variable_gold(
            request.study,
            variable,
            output_id=request.POST.get("output", ""),
            unit=request.POST.get("unit", ""),
            value=request.POST.get("value", ""),
            user=request.user,
            note=request.POST.get("note", ""),
        )
        messages.success(request, "Gold value saved.")
    except AgreementRequestError as exc:
        return render(request, "agreement/variable.html", {"study": request.study, "error": str(exc)}, status=400)
    url = reverse("agreement-variable", args=[request.study.pk, variable.pk])
    kept = {k: request.POST[k] for k in ("units", "overlap") if request.POST.get(k)}
    return redirect(f"{url}?{urlencode(kept)}" if kept else url)


@study_role_required(Role.RESEARCHER)
@require_POST
def variable_gold_rule(request, study_id, variable_id):
    """Set the variable's gold rule (strict majority or plurality) and its minimum number of raters."""

    try:
        variable = variables.get_variable(request.study, variable_id)
        update_code(
            variable,
            actor=request.user,
            gold_rule=request.POST.get("gold_rule", ""),
            gold_min_raters=request.POST.get("gold_min_raters", ""),
        )
        messages.success(request, "Gold rule saved.")
    except (AgreementRequestError, AnnotationError) as exc:
        return render(request, "agreement/variable.html", {"study": request.study, "error": str(exc)}, status=400)
    return redirect(reverse("agreement-variable", args=[request.study.pk, variable.pk]))
