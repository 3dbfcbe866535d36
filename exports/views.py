"""The Exports page: start export jobs, follow their progress, download files (the REFI-QDA import form on it
posts to annotation.views_refi)."""

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from annotation.datasets import CodeIndex
from annotation.selectors import study_codebooks
from annotation.views_refi import ImportForm
from generation import selectors as generation
from judging.selectors import study_rounds
from stereoscope.models import Role
from stereoscope.permissions import LEVELS, has_role, study_role_required

from . import services
from .models import ExportFormat, ExportJob, ExportStatus


class ExportForm(forms.Form):
    format = forms.ChoiceField(choices=ExportFormat.choices, initial="csv")
    datasets = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="Tables to include (all when none is ticked). Ignored for .qdpx and the study report.",
    )
    run_ids = forms.MultipleChoiceField(required=False, label="Runs")
    models = forms.MultipleChoiceField(required=False, label="Models")
    item_numbers = forms.CharField(required=False, label="Items", help_text="Item numbers, e.g. 1, 5, 17")
    code_ids = forms.MultipleChoiceField(required=False, label="Codes", help_text="A code includes its sub-codes.")
    round_ids = forms.MultipleChoiceField(required=False, label="Judge rounds")
    pseudonymise = forms.BooleanField(required=False, label="Pseudonymise coders (stable ids instead of names)")

    def __init__(self, *args, study, user, **kwargs):
        super().__init__(*args, **kwargs)

        self.fields["datasets"].choices = [(k, ds.title) for k, ds in services.available_datasets(user, study).items()]
        self.fields["run_ids"].choices = [(r.pk, r.name) for r in generation.study_runs(study).order_by("pk")]
        self.fields["models"].choices = [(m, m) for m in generation.study_models(study)]
        self.fields["code_ids"].choices = _code_choices(study)
        self.fields["round_ids"].choices = _round_choices(study)

    def options(self):
        data = self.cleaned_data
        return {
            "run_ids": data["run_ids"],
            "models": data["models"],
            "item_numbers": data["item_numbers"],
            "code_ids": data["code_ids"],
            "round_ids": data["round_ids"],
            "pseudonymise": data["pseudonymise"],
        }


def _code_choices(study):
    if not services._has_model("annotation", "Code"):
        return []

    index = CodeIndex(study)
    return sorted(
        ((pk, f"{row[8]} v{row[9]}: {index.path(pk)}") for pk, row in index.codes.items() if row[4]), key=lambda c: c[1]
    )


def _round_choices(study):
    if not services._has_model("judging", "JudgeRound"):
        return []

    return [(r.pk, r.name) for r in study_rounds(study)]


def _import_form():
    """The REFI-QDA import form (the import itself is annotation's page), when annotation is installed."""
    if not services._has_model("annotation", "Codebook"):
        return None

    return ImportForm()


def _jobs(study):
    return ExportJob.objects.filter(study=study).select_related("created_by")[:50]


@study_role_required(Role.RESEARCHER)
def exports_page(request, study_id):
    study = request.study
    form = ExportForm(request.POST or None, study=study, user=request.user)
    if request.method == "POST" and form.is_valid():
        try:
            job = services.create_job(
                study,
                fmt=form.cleaned_data["format"],
                dataset_keys=form.cleaned_data["datasets"],
                options=form.options(),
                actor=request.user,
            )
        except services.ExportError as exc:
            form.add_error(None, str(exc))
        else:
            if job.status == ExportStatus.FAILED:
                messages.error(request, f"Export {job.pk} failed: {job.message}")
            elif job.status == ExportStatus.COMPLETED:
                messages.success(request, f"Export {job.pk} is ready.")
            else:
                messages.success(request, f"Export {job.pk} started; it runs in the background.")
            return redirect("exports", study.pk)
    codebooks = []
    if services._has_model("annotation", "Codebook"):
        codebooks = study_codebooks(study)
    return render(
        request,
        "exports/exports.html",
        {
            "study": study,
            "form": form,
            "import_form": _import_form(),
            "jobs": _jobs(study),
            "codebooks": codebooks,
            "datasets": services.available_datasets(request.user, study).values(),
            "can_delete": has_role(request.user, study, Role.ADMIN),
        },
    )


@study_role_required(Role.RESEARCHER)
@require_safe
def jobs_partial(request, study_id):
    """The jobs table, polled by htmx while a job runs."""
    return render(
        request,
        "exports/_jobs.html",
        {
            "study": request.study,
            "jobs": _jobs(request.study),
            "can_delete": has_role(request.user, request.study, Role.ADMIN),
        },
    )


def _check_job_access(role, job):
    """A job is readable by whoever may export every dataset in it."""
    for key in job.datasets:
        dataset = services.datasets().get(key)
        if dataset is not None and LEVELS[role] < LEVELS[dataset.min_role]:
            raise PermissionDenied(f"This export holds {dataset.title}, which needs the {dataset.min_role} role.")


@study_role_required(Role.RESEARCHER)
@require_safe
def download(request, study_id, job_id):
    job = get_object_or_404(ExportJob, pk=job_id, study=request.study)
    _check_job_access(request.study_role, job)
    if job.status != ExportStatus.COMPLETED:
        raise Http404("This export is not ready.")
    return job_file(job)


def job_file(job):
    """The finished file of an export job as an attachment (404 when it is gone), for the page and the API."""
    path = services.job_path(job)
    if not path.exists():
        raise Http404("The export file is gone; start the export again.")
    _, content_type = services.file_type(job.format)
    return FileResponse(open(path, "rb"), as_attachment=True, filename=job.file_name, content_type=content_type)


@study_role_required(Role.ADMIN)
@require_POST
def delete(request, study_id, job_id):
    job = get_object_or_404(ExportJob, pk=job_id, study=request.study)
    services.delete_job(job, actor=request.user)
    messages.success(request, f"Deleted export {job_id}.")
    return redirect("exports", request.study.pk)


JOB_ACTIONS = {"cancel": services.cancel_job, "resume": services.resume_job, "retry": services.retry_job}


@study_role_required(Role.RESEARCHER)
@require_POST
def job_action(request, study_id, job_id, action):
    """Cancel, resume or retry an export job (the one engine's services)."""
    job = get_object_or_404(ExportJob, pk=job_id, study=request.study)
    _check_job_access(request.study_role, job)
    if action not in JOB_ACTIONS:
        raise Http404("Unknown action.")
    try:
        JOB_ACTIONS[action](job, actor=request.user)
    except services.ExportError as exc:
        messages.error(request, f"Export {job_id}: {exc}")
    else:
        messages.success(request, f"Export {job_id}: {action} done.")
    return redirect("exports", request.study.pk)
