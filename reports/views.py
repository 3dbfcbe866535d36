"""The Report page of a study: the report with its section toggles (saved with the study) and downloads."""

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from exports import selectors as export_selectors
from exports import services as exports
from stereoscope.models import Role
from stereoscope.permissions import study_role_required

from . import builder, services
from .document import SECTIONS
from .render import FORMATS, sections_html
from .render import render as render_doc


@study_role_required(Role.RESEARCHER)
@require_safe
def report_page(request, study_id):
    study = request.study
    chosen = services.chosen_sections(study)
    doc = builder.build(study, chosen)
    return render(
        request,
        "reports/report.html",
        {
            "study": study,
            "sections": [{"key": k, "title": t, "on": k in chosen} for k, t in SECTIONS],
            "report_html": sections_html(doc),
            "doc": doc,
            "pdf_jobs": export_selectors.study_jobs(study, "report")[:5],
        },
    )


@study_role_required(Role.RESEARCHER)
@require_POST
def report_sections(request, study_id):
    try:
        services.save_sections(request.study, request.POST.getlist("sections"), actor=request.user)
    except services.ReportError as exc:
        messages.error(request, str(exc))
    else:
        messages.success(request, "The report's sections are saved with the study.")
    return redirect("report", study_id=request.study.pk)


def report_response(study, fmt):
    body, content_type, ext = render_doc(builder.build(study), fmt)  # html or md: a PDF is an export job
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="study-{study.pk}-report.{ext}"'
    return response


PDF_IN_BACKGROUND = (
    "A PDF of the report is made in the background: press “Make PDF” on the Report page, then download it from the "
    "Exports page."
)


@study_role_required(Role.RESEARCHER)
@require_safe
def report_download(request, study_id, fmt):
    if fmt == "pdf":
        return HttpResponse(PDF_IN_BACKGROUND, status=404, content_type="text/plain; charset=utf-8")
    if fmt not in FORMATS:
        return HttpResponse("Unknown format.", status=404, content_type="text/plain")
    return report_response(request.study, fmt)


@study_role_required(Role.RESEARCHER)
@require_POST
def report_pdf(request, study_id):
    """Queue an export job that writes the report as PDF; its progress and download are on the Exports page."""
    try:
        job = exports.create_job(request.study, fmt="report", actor=request.user)
    except exports.ExportError as exc:
        messages.error(request, str(exc))
        return redirect("report", study_id=request.study.pk)
    messages.success(
        request, f"The PDF is being made in the background (export {job.pk}); download it below when it is ready."
    )
    return redirect("exports", request.study.pk)
