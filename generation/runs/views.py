"""Pages for model endpoints, generation runs, manual collection, output import and the output viewer. Thin:
the work is done in endpoint_services, runs and collect."""

import json

from django.conf import settings
from django.contrib import messages
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.db.models.functions import Substr
from django.http import Http404
from django.shortcuts import get_object_or_404, redirect, render
from django.utils import timezone
from django.views.decorators.http import require_POST, require_safe

from stereoscope.models import Role
from stereoscope.permissions import VIEWER, has_role, study_role_required
from stereoscope.untrusted import whole_number

from ..models import Dimension, GenerationRun, ModelEndpoint, Output, OutputStatus, ProviderCall, RunStatus
from . import batches, collect
from . import services as runs
from .endpoint_services import EndpointError, delete_endpoint, save_endpoint
from .forms import AnswerFileForm, EndpointForm, OutputImportForm, RunForm

OUTPUTS_PER_PAGE = 50


def _run(request, run_id):
    return get_object_or_404(GenerationRun.objects.select_related("toolkit", "study"), pk=run_id, study=request.study)


# --- endpoints -------------------------------------------------------------------------------------------------


@study_role_required(VIEWER)
@require_safe
def endpoint_list(request, study_id):
    endpoints = (
        ModelEndpoint.objects.filter(study=request.study)
        .select_related("connection")
        .annotate(n_outputs=Count("outputs"))
        .order_by("name")
    )
    return render(
        request,
        "generation/endpoint_list.html",
        {
            "study": request.study,
            "endpoints": endpoints,
            "can_edit": has_role(request.user, request.study, Role.RESEARCHER),
        },
    )


def _endpoint_form(request, instance=None):
    form = EndpointForm(request.POST or None, instance=instance, study=request.study)
    if request.method == "POST" and form.is_valid():
        try:
            endpoint = save_endpoint(request.study, form.values(), instance=instance, actor=request.user)
        except EndpointError as exc:
            for field, message in exc.problems.items():
                form.add_error(None if field == "__all__" or field not in form.fields else field, message)
        else:
            messages.success(request, f"Endpoint “{endpoint.name}” saved.")
            return redirect("endpoints", request.study.pk)
    return render(
        request,
        "generation/endpoint_form.html",
        {"study": request.study, "form": form, "endpoint": instance},
        status=400 if form.errors else 200,
    )


@study_role_required(Role.RESEARCHER)
def endpoint_create(request, study_id):
    return _endpoint_form(request)


@study_role_required(Role.RESEARCHER)
def endpoint_edit(request, study_id, endpoint_id):
    return _endpoint_form(request, get_object_or_404(ModelEndpoint, pk=endpoint_id, study=request.study))


@study_role_required(Role.RESEARCHER)
@require_POST
def endpoint_delete(request, study_id, endpoint_id):
    endpoint = get_object_or_404(ModelEndpoint, pk=endpoint_id, study=request.study)
    try:
        delete_endpoint(endpoint, actor=request.user)
        messages.success(request, f"Endpoint “{endpoint.name}” deleted.")
    except EndpointError as exc:
        messages.error(request, str(exc.problems.get("__all__", exc)))
    return redirect("endpoints", request.study.pk)


# --- runs ------------------------------------------------------------------------------------------------------


@study_role_required(VIEWER)
@require_safe
def run_list(request, study_id):
    qs = (
        GenerationRun.objects.filter(study=request.study)
        .select_related("toolkit")
        # distinct: the endpoints join repeats each output once per endpoint
        .annotate(
            n_total=Count("outputs", distinct=True),
            n_done=Count("outputs", filter=Q(outputs__status=OutputStatus.DONE), distinct=True),
            n_failed=Count("outputs", filter=Q(outputs__status=OutputStatus.FAILED), distinct=True),
            n_endpoints=Count("endpoints", distinct=True),
        )
        .order_by("-created_at")
    )
    return render(
        request,
        "generation/run_list.html",
        {"study": request.study, "runs": qs, "can_launch": has_role(request.user, request.study, Role.RESEARCHER)},
    )


@study_role_required(Role.RESEARCHER)
def run_create(request, study_id):
    form = RunForm(request.POST or None, study=request.study, initial={"trials": 1})
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            run = runs.create_run(
                request.study,
                name=data["name"],
                toolkit=data["toolkit"],
                endpoints=data["endpoints"],
                trials=data["trials"],
                param_overrides=data["param_overrides"],
                system_prompt=data["system_prompt"],
                actor=request.user,
                execution_mode=data.get("execution_mode") or "live",
            )
        except runs.RunError as exc:
            form.add_error(None, str(exc))
        else:
            messages.success(request, f"Run “{run.name}” created. Check the dry run, then start it.")
            return redirect("run-plan", request.study.pk, run.pk)
    return render(
        request, "generation/run_form.html", {"study": request.study, "form": form}, status=400 if form.errors else 200
    )


@study_role_required(VIEWER)
@require_safe
def run_plan(request, study_id, run_id):
    run = _run(request, run_id)
    if run.is_import:
        raise Http404("An import run has no plan.")
    plan = runs.plan(run, sample=20)
    return render(
        request,
        "generation/run_plan.html",
        {
            "study": request.study,
            "run": run,
            "plan": plan,
            "can_launch": has_role(request.user, request.study, Role.RESEARCHER),
        },
    )


def _progress_context(request, run):
    return {
        "study": request.study,
        "run": run,
        "counts": runs.counts(run),
        "has_manual": collect.has_manual(run),
        "can_launch": has_role(request.user, request.study, Role.RESEARCHER),
        "live": is_live(run),
        "batch_info": batches.summary(runs.RUN_JOB.name, run.pk),
        "batch_allowed": runs.batch_allowed(run),
        "poll_seconds": int(settings.BATCH_POLL_SECONDS),
    }


def is_live(run):
    """Queued, or running under a worker whose lease is fresh (a killed worker's run shows Resume instead)."""
    if run.status == RunStatus.QUEUED:
        return True
    return (
        run.status == RunStatus.RUNNING
        and bool(run.lease_token)
        and bool(run.lease_expires_at and run.lease_expires_at > timezone.now())
    )


@study_role_required(VIEWER)
@require_safe
def run_detail(request, study_id, run_id):
    run = _run(request, run_id)
    context = _progress_context(request, run)
    context["endpoints"] = run.endpoints.order_by("name")
    return render(request, "generation/run_detail.html", context)


@study_role_required(VIEWER)
@require_safe
def run_progress(request, study_id, run_id):
    """The htmx partial polled while a run is live."""
    run = _run(request, run_id)
    return render(request, "generation/_run_progress.html", _progress_context(request, run))


RUN_ACTIONS = {
    "start": runs.start,
    "cancel": runs.cancel,
    "resume": runs.resume,
    "retry": runs.retry_failed,
    "to-live": lambda run, actor: runs.set_mode(run, "live", actor),
    "to-batch": lambda run, actor: runs.set_mode(run, "batch", actor),
}
ACTION_DONE = {
    "start": "started",
    "cancel": "cancelled",
    "resume": "resumed",
    "retry": "retrying its failed units",
    "to-live": "switched to live mode",
    "to-batch": "switched to batch mode",
}


@study_role_required(Role.RESEARCHER)
@require_POST
def run_action(request, study_id, run_id, action):
    run = _run(request, run_id)
    if action not in RUN_ACTIONS:
        raise Http404("No such action.")
    try:
        RUN_ACTIONS[action](run, actor=request.user)
        messages.success(request, f"Run “{run.name}” {ACTION_DONE[action]}.")
    except runs.RunError as exc:
        messages.error(request, str(exc))
    return redirect("run-detail", request.study.pk, run.pk)


# --- manual collection -----------------------------------------------------------------------------------------


@study_role_required(Role.RESEARCHER)
def run_collect(request, study_id, run_id):
    run = _run(request, run_id)
    if not collect.has_manual(run):
        raise Http404("This run has no manual endpoint.")
    problems = []
    upload = AnswerFileForm()
    if request.method == "POST":
        try:
            if request.FILES:
                upload = AnswerFileForm(request.POST, request.FILES)
                if not upload.is_valid():
                    raise collect.ImportProblems([e for errors in upload.errors.values() for e in errors])
                f = upload.cleaned_data["file"]
                n = collect.import_answers(
                    run,
                    f.name,
                    f.read(),
                    fmt=upload.cleaned_data["format"],
                    actor=request.user,
                    skip_empty=bool(request.POST.get("skip_empty")),
                )
            else:
                n = collect.form_answers(run, request.POST, actor=request.user)
        except collect.ImportProblems as exc:
            problems = exc.problems
        else:
            messages.success(request, f"Saved {n} answers.")
            return redirect("run-collect", request.study.pk, run.pk)
    pending = collect.manual_outputs(run).filter(status__in=[OutputStatus.PENDING, OutputStatus.FAILED])
    n_done = collect.manual_outputs(run).filter(status=OutputStatus.DONE).count()
    page = Paginator(pending, 50).get_page(request.GET.get("page"))
    return render(
        request,
        "generation/run_collect.html",
        {
            "study": request.study,
            "run": run,
            "page": page,
            "n_done": n_done,
            "problems": problems,
            "upload": upload,
            "materialized": run.status != RunStatus.DRAFT,
            "posted": request.POST,
        },
        status=400 if problems else 200,
    )


@study_role_required(Role.RESEARCHER)
@require_safe
def run_collect_sheet(request, study_id, run_id, fmt):
    run = _run(request, run_id)
    if fmt not in ("csv", "xlsx") or not collect.has_manual(run):
        raise Http404("No such collection sheet.")
    return collect.sheet_download(run, fmt)


# --- import ----------------------------------------------------------------------------------------------------


@study_role_required(Role.RESEARCHER)
def output_import(request, study_id):
    form = OutputImportForm(request.POST or None, request.FILES or None, study=request.study)
    problems = []
    if request.method == "POST" and form.is_valid():
        f = form.cleaned_data["file"]
        try:
            run = collect.import_outputs(
                request.study,
                f.name,
                f.read(),
                fmt=form.cleaned_data["format"],
                run_name=form.cleaned_data["run_name"],
                toolkit=form.cleaned_data["toolkit"],
                actor=request.user,
            )
        except collect.ImportProblems as exc:
            problems = exc.problems
        else:
            messages.success(request, f"Imported {run.outputs.count()} outputs into “{run.name}”.")
            return redirect("run-detail", request.study.pk, run.pk)
    return render(
        request,
        "generation/output_import.html",
        {"study": request.study, "form": form, "problems": problems},
        status=400 if (problems or form.errors) else 200,
    )


# --- outputs ---------------------------------------------------------------------------------------------------


def filtered_outputs(study, params):
    """Outputs of a study filtered by run, model, item, dimension, trial and status; with the choices for the form.
    Returns (queryset, cleaned filters). Bad filter values are ignored with a message in `filters['problems']`."""
    qs = Output.objects.filter(study=study)
    filters, problems = {}, []
    for key in ("run", "item", "dimension", "trial"):
        raw = (params.get(key) or "").strip()
        if not raw:
            continue
        number = whole_number(raw)
        if number is None or len(raw) > 12:
            problems.append(f"Ignored the {key} filter: {raw[:20]!r} is not a number.")
            continue
        filters[key] = number
    if "run" in filters:
        qs = qs.filter(run_id=filters["run"])
    if "item" in filters:
        qs = qs.filter(item__number=filters["item"])
    if "dimension" in filters:
        qs = qs.filter(item__dimension_id=filters["dimension"])
    if "trial" in filters:
        qs = qs.filter(trial=filters["trial"])
    model = (params.get("model") or "").strip()
    if model:
        filters["model"] = model
        qs = qs.filter(model_name=model)
    status = (params.get("status") or "").strip()
    if status:
        if status in OutputStatus.values:
            filters["status"] = status
            qs = qs.filter(status=status)
        else:
            problems.append(f"Ignored the status filter: {status!r} is not one of {', '.join(OutputStatus.values)}.")
    filters["problems"] = problems
    return qs, filters


@study_role_required(VIEWER)
@require_safe
def output_list(request, study_id):
    study = request.study
    qs, filters = filtered_outputs(study, request.GET)
    qs = (
        qs.select_related("run", "item__dimension")
        .defer("text", "prompt_text", "provenance", "slot_values", "error")
        .annotate(snippet=Substr("text", 1, 160))
        .order_by("-run_id", "id")
    )
    page = Paginator(qs, OUTPUTS_PER_PAGE).get_page(request.GET.get("page"))
    query = request.GET.copy()
    query.pop("page", None)
    choices = {
        "runs": GenerationRun.objects.filter(study=study).order_by("-created_at").values_list("pk", "name"),
        "models": Output.objects.filter(study=study)
        .order_by("model_name")
        .values_list("model_name", flat=True)
        .distinct(),
        "dimensions": Dimension.objects.filter(toolkit__runs__study=study)
        .distinct()
        .order_by("name")
        .values_list("pk", "name", "toolkit__name"),
        "statuses": OutputStatus.choices,
    }
    return render(
        request,
        "generation/output_list.html",
        {"study": study, "page": page, "filters": filters, "choices": choices, "query": query.urlencode()},
    )


@study_role_required(VIEWER)
@require_safe
def output_detail(request, study_id, output_id):
    output = get_object_or_404(
        Output.objects.select_related("run", "item__dimension", "endpoint"), pk=output_id, study=request.study
    )
    calls = ProviderCall.objects.filter(output=output).order_by("attempt", "started_at")
    attempts = [
        {
            "call": c,
            "raw": json.dumps(c.raw_response, indent=2, ensure_ascii=False) if c.raw_response is not None else "",
            "messages": json.dumps(c.messages, indent=2, ensure_ascii=False),
            "params": json.dumps(c.params, ensure_ascii=False),
        }
        for c in calls
    ]
    provenance = json.dumps(output.provenance, indent=2, ensure_ascii=False)
    return render(
        request,
        "generation/output_detail.html",
        {
            "study": request.study,
            "output": output,
            "attempts": attempts,
            "provenance": provenance,
            "slot_values": json.dumps(output.slot_values, ensure_ascii=False) if output.slot_values else "",
        },
    )
