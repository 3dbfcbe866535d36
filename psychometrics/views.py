"""Questionnaire pages: instruments, personas, context sets, runs (progress), reports, comparisons, audit, exports."""

import json

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import HttpResponse, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from generation.models import RunStatus
from generation.runs import batches
from measures.selectors import study_measure_runs
from stereoscope.downloads import table_download, workbook_download
from stereoscope.models import Role
from stereoscope.permissions import VIEWER, has_role, study_role_required
from stereoscope.untrusted import loads_json, whole_number

from . import datasets, reports, runs, services
from .forms import (
    ContextFromPersonasForm,
    ContextGenerationForm,
    ContextImportForm,
    InstrumentImportForm,
    PersonaGenerateForm,
    PersonaImportForm,
    RunFileForm,
    RunForm,
)
from .models import Context, ContextSet, ExtractionAudit, Persona, QuestionnaireRun, Response
from .services import PsychError


def _ctx(request, **extra):
    return {"study": request.study, "can_edit": has_role(request.user, request.study, Role.RESEARCHER), **extra}


@study_role_required(VIEWER)
@require_safe
def index(request, study_id):
    study = request.study
    return render(
        request,
        "psychometrics/index.html",
        _ctx(
            request,
            instruments=services.instruments_for(study).prefetch_related("items"),
            persona_sets=services.persona_sets_for(study),
            context_sets=ContextSet.objects.filter(study=study),
            runs_list=QuestionnaireRun.objects.filter(study=study).select_related("instrument", "context_set"),
            import_form=InstrumentImportForm(),
            runfile_form=RunFileForm(),
        ),
    )


@study_role_required(Role.RESEARCHER)
@require_POST
def instrument_import(request, study_id):
    form = InstrumentImportForm(request.POST, request.FILES)
    if form.is_valid():
        try:
            instrument = services.create_instrument(request.study, form.cleaned_data["content"], actor=request.user)
            messages.success(request, f"Imported {instrument}.")
            return redirect("psych-instrument", request.study.pk, instrument.pk)
        except PsychError as exc:
            messages.error(request, f"Nothing imported: {exc}")
    else:
        messages.error(request, " ".join(e for errs in form.errors.values() for e in errs))
    return redirect("questionnaires", request.study.pk)


@study_role_required(VIEWER)
@require_safe
def instrument_detail(request, study_id, instrument_id):
    instrument = get_object_or_404(services.instruments_for(request.study), pk=instrument_id)
    spec = instrument.to_spec()
    return render(
        request,
        "psychometrics/instrument.html",
        _ctx(
            request,
            instrument=instrument,
            items=instrument.items.select_related("parallel__instrument"),
            spec=spec,
            labels=sorted((int(k), v) for k, v in (instrument.scale_labels or {}).items()),
        ),
    )


@study_role_required(VIEWER)
@require_safe
def instrument_export(request, study_id, instrument_id):
    instrument = get_object_or_404(services.instruments_for(request.study), pk=instrument_id)
    response = JsonResponse(
        services.export_instrument(instrument), json_dumps_params={"indent": 1, "ensure_ascii": False}
    )
    response["Content-Disposition"] = f'attachment; filename="instrument-{instrument.pk}.json"'
    return response


@study_role_required(VIEWER)
@require_safe
def personas(request, study_id):
    return render(
        request,
        "psychometrics/personas.html",
        _ctx(
            request,
            persona_sets=services.persona_sets_for(request.study),
            import_form=PersonaImportForm(),
            generate_form=PersonaGenerateForm(),
            context_form=ContextFromPersonasForm(persona_sets=services.persona_sets_for(request.study)),
            context_import_form=ContextImportForm(),
            context_sets=ContextSet.objects.filter(study=request.study),
        ),
    )


@study_role_required(Role.RESEARCHER)
@require_POST
def persona_import(request, study_id):
    form = PersonaImportForm(request.POST, request.FILES)
    if form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            ps = services.import_personas(request.study, form.cleaned_data["name"], upload.read(), upload.name)
            messages.success(request, f"Imported {ps.personas.count()} personas into “{ps.name}”.")
            return redirect("psych-persona-set", request.study.pk, ps.pk)
        except (PsychError, UnicodeDecodeError) as exc:
            messages.error(request, f"Nothing imported: {exc}")
    else:
        messages.error(request, "Nothing imported: " + " ".join(e for errs in form.errors.values() for e in errs))
    return redirect("psych-personas", request.study.pk)


@study_role_required(Role.RESEARCHER)
@require_POST
def persona_generate(request, study_id):
    form = PersonaGenerateForm(request.POST)
    if form.is_valid():
        try:
            attributes = loads_json(form.cleaned_data["attributes"])
            ps = services.generate_personas(
                request.study, form.cleaned_data["name"], form.cleaned_data["template"], attributes
            )
            messages.success(request, f"Generated {ps.personas.count()} personas.")
            return redirect("psych-persona-set", request.study.pk, ps.pk)
        except ValueError as exc:  # PsychError and JSON errors
            messages.error(request, f"Nothing generated: {exc}")
    else:
        messages.error(request, "Nothing generated: " + " ".join(e for errs in form.errors.values() for e in errs))
    return redirect("psych-personas", request.study.pk)


@study_role_required(VIEWER)
@require_safe
def persona_set_detail(request, study_id, set_id):
    ps = get_object_or_404(services.persona_sets_for(request.study), pk=set_id)
    page = Paginator(ps.personas.all(), 100).get_page(request.GET.get("page"))
    editable = ps.study_id == request.study.pk
    return render(
        request, "psychometrics/persona_set.html", _ctx(request, persona_set=ps, page=page, editable=editable)
    )


@study_role_required(Role.RESEARCHER)
@require_POST
def persona_set_twins(request, study_id, set_id):
    ps = get_object_or_404(request.study.persona_sets, pk=set_id)
    n = services.add_persona_twins(ps)
    messages.success(request, f"Added {n} gender-swapped twins.")
    return redirect("psych-persona-set", request.study.pk, ps.pk)


@study_role_required(Role.RESEARCHER)
@require_POST
def toggle_include(request, study_id, kind, pk):
    model = Persona if kind == "persona" else Context
    field = "persona_set__study" if kind == "persona" else "context_set__study"
    obj = get_object_or_404(model, pk=pk, **{field: request.study})
    try:
        services.set_included(obj, request.POST.get("included") == "1", request.POST.get("reason", ""))
    except PsychError as exc:
        messages.error(request, str(exc))
    if request.htmx:
        return render(
            request,
            "psychometrics/_include_row.html",
            {"obj": obj, "kind": kind, "study": request.study, "can_edit": True},
        )
    target = (
        ("psych-persona-set", obj.persona_set_id) if kind == "persona" else ("psych-context-set", obj.context_set_id)
    )
    return redirect(target[0], request.study.pk, target[1])


@study_role_required(Role.RESEARCHER)
@require_POST
def context_from_personas(request, study_id):
    form = ContextFromPersonasForm(request.POST, persona_sets=services.persona_sets_for(request.study))
    if form.is_valid():
        d = form.cleaned_data
        try:
            cs = services.contexts_from_personas(request.study, d["name"], d["persona_set"], n=d["n"], seed=d["seed"])
            messages.success(request, f"Context set “{cs.name}” with {cs.contexts.count()} contexts.")
            return redirect("psych-context-set", request.study.pk, cs.pk)
        except PsychError as exc:
            messages.error(request, f"Nothing created: {exc}")
    else:
        messages.error(request, "Nothing created: " + " ".join(e for errs in form.errors.values() for e in errs))
    return redirect("psych-personas", request.study.pk)


@study_role_required(Role.RESEARCHER)
@require_POST
def context_import(request, study_id):
    form = ContextImportForm(request.POST, request.FILES)
    if form.is_valid():
        d = form.cleaned_data
        try:
            cs = services.import_contexts(
                request.study, d["name"], d["file"].read(), d["file"].name, n=d["n"], seed=d["seed"]
            )
            messages.success(request, f"Imported {cs.contexts.count()} contexts.")
            return redirect("psych-context-set", request.study.pk, cs.pk)
        except (PsychError, UnicodeDecodeError) as exc:
            messages.error(request, f"Nothing imported: {exc}")
    else:
        messages.error(request, "Nothing imported: " + " ".join(e for errs in form.errors.values() for e in errs))
    return redirect("psych-personas", request.study.pk)


@study_role_required(VIEWER)
@require_safe
def context_set_detail(request, study_id, set_id):
    cs = get_object_or_404(ContextSet, pk=set_id, study=request.study)
    page = Paginator(cs.contexts.all(), 100).get_page(request.GET.get("page"))
    return render(
        request,
        "psychometrics/context_set.html",
        _ctx(
            request,
            context_set=cs,
            page=page,
            generate_form=ContextGenerationForm(study=request.study, initial={"name": f"Texts in {cs.name}"}),
        ),
    )


@study_role_required(Role.RESEARCHER)
@require_POST
def context_set_generate(request, study_id, set_id):
    """A generation run asked in every included context of the set (Jung's letters per context)."""
    cs = get_object_or_404(ContextSet, pk=set_id, study=request.study)
    form = ContextGenerationForm(request.POST, study=request.study)
    if not form.is_valid():
        messages.error(request, "Nothing created: " + " ".join(e for errs in form.errors.values() for e in errs))
        return redirect("psych-context-set", request.study.pk, cs.pk)
    d = form.cleaned_data
    try:
        run = services.generation_run_in_contexts(
            request.study,
            name=d["name"],
            context_set=cs,
            toolkit=d["toolkit"],
            endpoints=d["endpoints"],
            trials=d["trials"],
            actor=request.user,
        )
    except PsychError as exc:
        messages.error(request, f"Nothing created: {exc}")
        return redirect("psych-context-set", request.study.pk, cs.pk)
    n = cs.contexts.filter(included=True).count()
    messages.success(request, f"Generation run “{run.name}” created in {n} contexts.")
    return redirect("run-detail", request.study.pk, run.pk)


@study_role_required(Role.RESEARCHER)
@require_POST
def context_set_twins(request, study_id, set_id):
    cs = get_object_or_404(ContextSet, pk=set_id, study=request.study)
    n = services.add_context_twins(cs)
    messages.success(request, f"Added {n} gender-swapped twins.")
    return redirect("psych-context-set", request.study.pk, cs.pk)


@study_role_required(Role.RESEARCHER)
def run_new(request, study_id):
    study = request.study
    form = RunForm(request.POST or None, instruments=services.instruments_for(study), study=study)
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        try:
            run = runs.create_run(study, actor=request.user, **{k: v for k, v in d.items()})
            messages.success(request, f"Run “{run.name}” created. Check the plan, then start it.")
            return redirect("psych-run", study.pk, run.pk)
        except PsychError as exc:
            form.add_error(None, str(exc))
    has_contexts = ContextSet.objects.filter(study=study).exists()
    return render(request, "psychometrics/run_new.html", _ctx(request, form=form, has_contexts=has_contexts))


@study_role_required(Role.RESEARCHER)
@require_POST
def run_from_file(request, study_id):
    form = RunFileForm(request.POST, request.FILES)
    if form.is_valid():
        try:
            data = loads_json(form.cleaned_data["file"].read())
            run = runs.create_run_from_file(
                request.study, data, actor=request.user, name=form.cleaned_data["name"] or None
            )
            messages.success(request, f"Run “{run.name}” created from the file.")
            return redirect("psych-run", request.study.pk, run.pk)
        except (ValueError, UnicodeDecodeError) as exc:
            messages.error(request, f"Nothing created: {exc}")
    else:
        messages.error(request, "Nothing created: choose a run file.")
    return redirect("questionnaires", request.study.pk)


def _run(request, run_id):
    return get_object_or_404(
        QuestionnaireRun.objects.select_related("instrument", "context_set"), pk=run_id, study=request.study
    )


@study_role_required(VIEWER)
@require_safe
def run_detail(request, study_id, run_id):
    run = _run(request, run_id)
    plan = runs.plan(run) if run.status == RunStatus.DRAFT else None
    has_manual = run.endpoints.filter(provider="manual").exists()
    batch_info = batches.summary(runs.QUESTIONNAIRE_JOB.name, run.pk)
    return render(
        request,
        "psychometrics/run.html",
        _ctx(
            request,
            run=run,
            counts=runs.counts(run),
            plan=plan,
            has_manual=has_manual,
            runfile=json.dumps(runs.export_run_file(run), indent=1),
            batch_info=batch_info,
        ),
    )


@study_role_required(VIEWER)
@require_safe
def run_progress(request, study_id, run_id):
    run = _run(request, run_id)
    return render(
        request, "psychometrics/_progress.html", {"run": run, "counts": runs.counts(run), "study": request.study}
    )


@study_role_required(Role.RESEARCHER)
@require_POST
def run_action(request, study_id, run_id, action):
    run = _run(request, run_id)
    actions = {"start": runs.start, "resume": runs.resume, "cancel": runs.cancel, "retry": runs.retry_failed}
    if action not in actions:
        return HttpResponse("Unknown action.", status=400)
    try:
        actions[action](run, request.user)
        messages.success(request, f"{action.capitalize()}: done.")
    except PsychError as exc:
        messages.error(request, str(exc))
    return redirect("psych-run", request.study.pk, run.pk)


@study_role_required(VIEWER)
@require_safe
def run_report(request, study_id, run_id):
    run = _run(request, run_id)
    report = reports.run_report(run)
    return render(request, "psychometrics/report.html", _ctx(request, run=run, report=report))


@study_role_required(VIEWER)
@require_safe
def run_responses(request, study_id, run_id):
    run = _run(request, run_id)
    qs = run.responses.select_related("item", "context", "endpoint")
    status = request.GET.get("extraction", "")
    if status:
        qs = qs.filter(extraction=status)
    page = Paginator(qs, 50).get_page(request.GET.get("page"))
    return render(request, "psychometrics/responses.html", _ctx(request, run=run, page=page, extraction=status))


@study_role_required(Role.CODER)
def run_audit(request, study_id, run_id):
    run = _run(request, run_id)
    if request.method == "POST":
        response = get_object_or_404(Response, pk=request.POST.get("response"), run=run, audit_sampled=True)
        try:
            runs.record_audit(
                response,
                request.user,
                request.POST.get("correct") == "1",
                request.POST.get("corrected_value"),
                request.POST.get("note", ""),
            )
        except PsychError as exc:
            messages.error(request, str(exc))
        return redirect(f"{request.path}?page={request.GET.get('page', 1)}")
    if run.status == RunStatus.COMPLETED and not run.responses.filter(audit_sampled=True).exists():
        runs.draw_audit_sample(run)
    qs = run.responses.filter(audit_sampled=True).select_related("item", "endpoint").order_by("endpoint__name", "pk")
    page = Paginator(qs, 20).get_page(request.GET.get("page"))
    mine = {
        a.response_id: a for a in ExtractionAudit.objects.filter(user=request.user, response__in=[r.pk for r in page])
    }
    rows = [(r, mine.get(r.pk)) for r in page]
    return render(
        request,
        "psychometrics/audit.html",
        _ctx(request, run=run, page=page, rows=rows, summary=reports.audit_summary(run)),
    )


@study_role_required(Role.RESEARCHER)
def run_collect(request, study_id, run_id):
    """Manual endpoints: paste each answer from a chat interface (one fresh chat per prompt)."""
    run = _run(request, run_id)
    if request.method == "POST":
        response = get_object_or_404(Response, pk=request.POST.get("response"), run=run, endpoint__provider="manual")
        try:
            runs.record_manual_answer(response, request.POST.get("answer", ""), request.user)
        except PsychError as exc:
            messages.error(request, str(exc))
        return redirect(request.get_full_path())
    if run.status == RunStatus.DRAFT:
        runs.materialize(run)
    pending = run.responses.filter(endpoint__provider="manual", status="pending").select_related(
        "item", "context", "endpoint"
    )
    page = Paginator(pending.order_by("pk"), 10).get_page(request.GET.get("page"))
    return render(request, "psychometrics/collect.html", _ctx(request, run=run, page=page, left=pending.count()))


@study_role_required(VIEWER)
@require_safe
def run_compare(request, study_id):
    study = request.study
    all_runs = QuestionnaireRun.objects.filter(study=study).select_related("instrument")
    result, error = None, ""
    a, b, kind = request.GET.get("a"), request.GET.get("b"), request.GET.get("kind", "alternate_form")
    if a and b:
        try:
            run_a, run_b = all_runs.get(pk=int(a)), all_runs.get(pk=int(b))
            result = reports.compare_runs(run_a, run_b, kind)
        except (QuestionnaireRun.DoesNotExist, ValueError) as exc:
            error = (
                str(exc)
                if isinstance(exc, ValueError) and "comparison" in str(exc)
                else "Choose two runs of this study."
            )
    return render(
        request,
        "psychometrics/compare.html",
        _ctx(
            request,
            runs_list=all_runs,
            result=result,
            error=error,
            kinds=reports.COMPARISONS,
            a=a,
            b=b,
            kind=kind,
            variants=reports.prompt_variant_table(study),
        ),
    )


@study_role_required(VIEWER)
@require_safe
def validation(request, study_id):
    """Jung's validation table: one run plus its alternate-form, option-order and convergent runs."""
    all_runs = QuestionnaireRun.objects.filter(study=request.study).select_related("instrument")
    picked = {}
    for key in ("run", "alternate", "option_order", "convergent"):
        value = request.GET.get(key, "")
        pk = whole_number(value)
        picked[key] = all_runs.filter(pk=pk).first() if pk is not None else None

    measure_runs = study_measure_runs(request.study)
    value = request.GET.get("concurrent", "")
    pk = whole_number(value)
    picked["concurrent"] = measure_runs.filter(pk=pk).first() if pk is not None else None
    result = None
    if picked["run"] is not None:
        result = reports.validation_summary(
            picked["run"], picked["alternate"], picked["option_order"], picked["convergent"], picked["concurrent"]
        )
    missing = reports.missing_counts_by_form(request.study)
    return render(
        request,
        "psychometrics/validation.html",
        _ctx(request, runs_list=all_runs, picked=picked, result=result, missing=missing, measure_runs=measure_runs),
    )


@study_role_required(Role.RESEARCHER)
@require_safe
def run_export(request, study_id, run_id, fmt):
    run = _run(request, run_id)
    opts = {"run_ids": [run.pk]}
    filename = f"questionnaire-run-{run.pk}-{fmt}"
    if fmt == "responses.csv":
        return table_download(
            [c for c, _ in datasets.RESPONSE_COLUMNS], datasets.response_rows(request.study, opts), filename
        )
    if fmt == "scores.csv":
        return table_download(
            [c for c, _ in datasets.SCORE_COLUMNS], datasets.score_rows(request.study, opts), filename
        )
    if fmt == "xlsx":
        report = reports.run_report(run)
        return workbook_download(
            datasets.workbook_sheets(
                [
                    ("responses", datasets.response_rows(request.study, opts), datasets.RESPONSE_COLUMNS),
                    ("scores", datasets.score_rows(request.study, opts), datasets.SCORE_COLUMNS),
                    ("items", datasets.item_rows(report), datasets.ITEM_COLUMNS),
                    ("reliability_validity", datasets.reliability_rows(report), datasets.RELIABILITY_COLUMNS),
                ]
            ),
            filename,
        )
    if fmt == "run.json":
        response = HttpResponse(json.dumps(runs.export_run_file(run), indent=1), content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response
    return HttpResponse("Unknown export.", status=404)
