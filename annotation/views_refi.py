"""REFI-QDA pages of the codebook owner: import a .qdpx project or .qdc codebook, download a codebook as .qdc.
They sit on the Exports page (same URLs as before), which renders `ImportForm`."""

from django import forms
from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect
from django.views.decorators.http import require_POST, require_safe

from stereoscope.models import Role
from stereoscope.permissions import study_role_required

from . import refi_qda
from .models import Codebook
from .refi_services import export_qdc, import_file

MAX_UPLOAD_BYTES = 200 * 1024 * 1024


class ImportForm(forms.Form):
    file = forms.FileField(label="REFI-QDA file (.qdpx project or .qdc codebook)")


@study_role_required(Role.RESEARCHER)
@require_POST
def refi_import(request, study_id):
    form = ImportForm(request.POST, request.FILES)
    if not form.is_valid():
        messages.error(request, "Choose a .qdpx or .qdc file to import.")
        return redirect("exports", request.study.pk)
    upload = form.cleaned_data["file"]
    if upload.size > MAX_UPLOAD_BYTES:
        messages.error(request, f"The file is larger than {MAX_UPLOAD_BYTES // 2**20} MB.")
        return redirect("exports", request.study.pk)
    try:
        report = import_file(request.study, upload.read(), filename=upload.name, actor=request.user)
    except refi_qda.RefiError as exc:
        messages.error(request, f"Nothing was imported from {upload.name}: {exc}")
    else:
        messages.success(
            request,
            f"Imported {upload.name} into codebook {report['codebook']}: "
            f"{report.get('codes', 0)} codes, {report.get('sources', 0)} stories, "
            f"{report.get('codings', 0)} codings, {report.get('memos', 0)} memos.",
        )
    return redirect("exports", request.study.pk)


@study_role_required(Role.RESEARCHER)
@require_safe
def codebook_qdc(request, study_id, codebook_id):
    codebook = get_object_or_404(Codebook, pk=codebook_id, study=request.study)
    response = HttpResponse(export_qdc(request.study, codebook), content_type="application/xml")
    name = "".join(ch if ch.isalnum() else "-" for ch in codebook.name) or "codebook"
    response["Content-Disposition"] = f'attachment; filename="{name}-v{codebook.version}.qdc"'
    return response
