"""Pages for categorical variables: agreement (coders and judges), majority gold and adjudication of ties."""

from urllib.parse import urlencode

from django.contrib import messages
from django.shortcuts import redirect, render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from stereoscope.models import Role
from stereoscope.permissions import study_role_required

from . import variables
from .rating_tables import AgreementRequestError


@study_role_required(Role.RESEARCHER)
@require_safe
def variable_list(request, study_id):
    from annotation.selectors import study_variables

    return render(
        request, "agreement/variables.html", {"study": request.study, "variables": study_variables(request.study)}
    )


@study_role_required(Role.RESEARCHER)
@require_safe
def variable_detail(request, study_id, variable_id):
    try:
        variable = variables.get_variable(request.study, variable_id)
        rounds = [r for r in request.GET.getlist("rounds") if r]
        if any(not r.isdigit() for r in rounds):
            raise AgreementRequestError("rounds must be ids.")
        unit_options = variables.unit_options(variable, request.GET.get("units"), request.GET.get("overlap"))
        report = variables.variable_report(
            request.study,
            variable,
            round_ids=[int(r) for r in rounds] or None,
            include_judges=request.GET.get("judges", "1") != "0",
            **unit_options,
        )
    except AgreementRequestError as exc:
        return render(request, "agreement/variable.html", {"study": request.study, "error": str(exc)}, status=400)
    from . import contrasts

    by = request.GET.get("by", "gender")
    try:
        contrast = contrasts.label_contrast(request.study, variable, by=by, **unit_options) if report["gold"] else None
    except AgreementRequestError as exc:
        return render(request, "agreement/variable.html", {"study": request.study, "error": str(exc)}, status=400)
    show = request.GET.get("show", "ties")
    gold = [g for g in report["gold"] if g["undecided"]] if show == "ties" else report["gold"]
    return render(
        request,
        "agreement/variable.html",
        {
            "study": request.study,
            "report": report,
            "summary": list(variables.summary_rows(report)),
            "gold_rows": gold,
            "show": show,
            "variable": variable,
            "by": by,
            "groupings": contrasts.GROUPINGS,
            "by_model": contrasts.counts_by_model(request.study, variable, **unit_options) if report["gold"] else None,
            "unit_options": unit_options,
            "span_units": variables.SPAN_UNITS,
            "contrast": contrast["contrast"] if contrast else None,
            "contrast_rows": (
                list(zip(contrast["contrast"].groups, contrast["contrast"].table, strict=True)) if contrast else []
            ),
        },
    )


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
    from annotation.services import AnnotationError, update_code

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
