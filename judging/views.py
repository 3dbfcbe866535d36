"""Judging pages: overview, templates, rounds (plan → launch → verdicts), reports, weights, human verification."""

from django.contrib import messages
from django.core.paginator import Paginator
from django.http import Http404, JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from generation import selectors as generation
from generation.runs import batches
from stereoscope.downloads import table_download
from stereoscope.models import Role
from stereoscope.permissions import VIEWER, has_role, study_role_required
from stereoscope.untrusted import whole_numbers

from . import reports, rounds, services
from .forms import JudgeRoundForm, JudgeTemplateForm, VerificationForm, WeightsImportForm
from .models import ItemWeight, JudgeRound, Verdict, VerdictStatus, VerificationRequest


def _round(request, round_id):
    return get_object_or_404(
        JudgeRound.objects.select_related("template", "source_run"), pk=round_id, study=request.study
    )


@study_role_required(VIEWER)
@require_safe
def overview(request, study_id):
    study = request.study
    round_list = list(
        JudgeRound.objects.filter(study=study).select_related("template", "source_run").order_by("-created_at")
    )
    for rnd in round_list:
        rnd.counts = rounds.status_counts(rnd)
    return render(
        request,
        "judging/overview.html",
        {
            "rounds": round_list,
            "templates": rounds.templates_for(study).order_by("-study__is_library", "name", "-version"),
            "is_researcher": has_role(request.user, study, Role.RESEARCHER),
            "my_questions": services.pending_checks(study, request.user).count(),
        },
    )


# -- templates ------------------------------------------------------------------------------------------------------
@study_role_required(Role.RESEARCHER)
def template_new(request, study_id):
    source = None
    if request.GET.get("from"):
        source = get_object_or_404(rounds.templates_for(request.study), pk=request.GET["from"])
    initial = {}
    if source:
        initial = {
            k: getattr(source, k) for k in ("kind", "text", "scale_min", "scale_max", "detect_threshold", "description")
        }
        initial["labels"] = ", ".join(source.labels or [])
        initial["name"] = source.name if source.study_id == request.study.pk else f"{source.name} (copy)"
    form = JudgeTemplateForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        try:
            template = services.create_template(request.study, actor=request.user, **form.cleaned_data)
            messages.success(request, f"Template “{template}” saved.")
            return redirect("judging-template", request.study.pk, template.pk)
        except services.JudgingError as exc:
            form.add_error(None, str(exc))
    return render(request, "judging/template_form.html", {"form": form, "source": source})


@study_role_required(VIEWER)
@require_safe
def template_detail(request, study_id, template_id):
    template = get_object_or_404(rounds.templates_for(request.study), pk=template_id)
    return render(
        request,
        "judging/template_detail.html",
        {
            "template": template,
            "is_researcher": has_role(request.user, request.study, Role.RESEARCHER),
            "rounds": template.rounds.filter(study=request.study),
        },
    )


# -- rounds ---------------------------------------------------------------------------------------------------------
@study_role_required(Role.RESEARCHER)
def round_new(request, study_id):
    study = request.study
    form = JudgeRoundForm(study, request.POST or None)
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        try:
            rnd = rounds.create_round(
                study,
                name=d["name"],
                template=d["template"],
                judges=d["judges"],
                source_run=d["source_run"],
                policy=d["policy"],
                k=d["k"],
                forbid_same_family=d["forbid_same_family"],
                batch_size=d["batch_size"],
                temperature=d["temperature"],
                seed=d["seed"],
                reask_missing=d["reask_missing"],
                output_filter={k: d[k] for k in ("item_numbers", "models") if d[k]},
                actor=request.user,
                execution_mode=d.get("execution_mode") or "live",
            )
            messages.success(request, "Round created. Check the plan, then launch it.")
            return redirect("judging-round", study.pk, rnd.pk)
        except rounds.RoundError as exc:
            form.add_error(None, str(exc))
    return render(request, "judging/round_form.html", {"form": form})


@study_role_required(Role.RESEARCHER)
@require_safe
def round_detail(request, study_id, round_id):
    rnd = _round(request, round_id)
    plan, plan_error = rnd.plan, None
    if rnd.status == "draft":
        try:
            plan = rounds.compute_plan(rnd)
        except rounds.RoundError as exc:
            plan_error = str(exc)
    status_filter = request.GET.get("status", "")
    verdicts = rnd.verdicts.select_related("output", "output__item").order_by("batch_ref", "position")
    if status_filter in VerdictStatus.values:
        verdicts = verdicts.filter(status=status_filter)
    page = Paginator(verdicts, 50).get_page(request.GET.get("page"))
    return render(
        request,
        "judging/round_detail.html",
        {
            "round": rnd,
            "plan": plan,
            "plan_error": plan_error,
            "counts": rounds.status_counts(rnd),
            "page": page,
            "status_filter": status_filter,
            "statuses": VerdictStatus.values,
            "judges": rnd.judges.order_by("name"),
            "batch_info": batches.summary(rounds.ROUND_JOB.name, rnd.pk),
        },
    )


@study_role_required(Role.RESEARCHER)
@require_safe
def round_progress(request, study_id, round_id):
    rnd = _round(request, round_id)
    response = render(request, "judging/_progress.html", {"round": rnd, "counts": rounds.status_counts(rnd)})
    if rnd.status not in ("queued", "running"):
        response["HX-Refresh"] = "true"  # show the verdicts and the actions of the finished round
    return response


ACTIONS = {
    "launch": rounds.start,
    "cancel": rounds.cancel,
    "resume": rounds.resume,
    "retry": rounds.retry_failed,
    "reask": rounds.reask,
}


@study_role_required(Role.RESEARCHER)
@require_POST
def round_action(request, study_id, round_id, what):
    rnd = _round(request, round_id)
    if what not in ACTIONS:
        messages.error(request, "Unknown action.")
        return redirect("judging-round", rnd.study_id, rnd.pk)
    try:
        if what == "reask" and request.POST.get("verdict"):
            rounds.reask(rnd, whole_numbers([request.POST["verdict"]]), actor=request.user)
        else:
            ACTIONS[what](rnd, actor=request.user)
        messages.success(
            request,
            {
                "launch": "Round launched.",
                "cancel": "Cancel requested.",
                "resume": "Round resumed.",
                "retry": "Failed verdicts are being retried.",
                "reask": "Asking again, one story at a time.",
            }[what],
        )
    except rounds.RoundError as exc:
        messages.error(request, str(exc))
    return redirect("judging-round", rnd.study_id, rnd.pk)


@study_role_required(Role.RESEARCHER)
@require_safe
def verdict_detail(request, study_id, round_id, verdict_id):
    rnd = _round(request, round_id)
    verdict = get_object_or_404(Verdict.objects.select_related("output", "output__item"), pk=verdict_id, round=rnd)
    return render(
        request,
        "judging/verdict_detail.html",
        {
            "round": rnd,
            "verdict": verdict,
            "question": rounds.question_text(verdict, rnd.template),
            "checks": verdict.human_checks.select_related("user"),
            "calls": generation.unit_calls(
                verdict.round.study_id, "judging", [f"verdict-batch:{verdict.batch_ref}", f"verdict:{verdict.pk}"]
            ),
        },
    )


# -- reports and exports --------------------------------------------------------------------------------------------
def _weak_below(request):
    try:
        value = float(request.GET.get("weak_below", 0.3))
    except ValueError:
        return 0.3
    return value if 0 <= value <= 1 else 0.3


def _report_context(rnd_list, method, weak_below=0.3):
    data = reports.report(rnd_list, method=method, weak_below=weak_below)
    return {
        "report": data,
        "heatmap": reports.heatmap(data["table3"]),
        "bars": reports.bars(data["items"]),
        "matrix": reports.matrix_cells(data),
        "method": method,
        "methods": reports.W.METHODS,
        "default_method": reports.W.DEFAULT_METHOD,
    }


@study_role_required(Role.RESEARCHER)
@require_safe
def round_report(request, study_id, round_id):
    rnd = _round(request, round_id)
    method = request.GET.get("method", reports.W.DEFAULT_METHOD)
    if method not in reports.W.METHODS:
        method = reports.W.DEFAULT_METHOD
    ctx = _report_context([rnd], method, _weak_below(request))
    ctx.update(round=rnd, template=rnd.template)
    return render(request, "judging/report.html", ctx)


@study_role_required(Role.RESEARCHER)
@require_safe
def round_verdicts_export(request, study_id, round_id, fmt):
    rnd = _round(request, round_id)
    if fmt not in ("csv", "json"):
        raise Http404("Export as .csv or .json.")
    rows = list(reports.verdict_export_rows(request.study, round_ids=[rnd.pk]))
    if fmt == "csv":
        return table_download([c for c, _ in reports.VERDICT_COLUMNS], rows, f"verdicts-round-{rnd.pk}.csv")
    response = JsonResponse(
        {"round": rnd.pk, "name": rnd.name, **reports.provenance([rnd]), "verdicts": rows},
        json_dumps_params={"indent": 1, "ensure_ascii": False},
    )
    response["Content-Disposition"] = f'attachment; filename="verdicts-round-{rnd.pk}.json"'
    return response


def _round_ids(request):
    return whole_numbers(request.GET.getlist("round")) or None


@study_role_required(Role.RESEARCHER)
def weights(request, study_id):
    study = request.study
    method = request.GET.get("method", reports.W.DEFAULT_METHOD)
    if method not in reports.W.METHODS:
        method = reports.W.DEFAULT_METHOD
    ids = _round_ids(request)
    fmt = request.GET.get("download")
    if fmt == "csv":
        preamble, columns, rows = services.weights_table(study, ids, method)
        return table_download(columns, rows, "toolkit-weights.csv", preamble=preamble)
    if fmt == "json":
        response = JsonResponse(
            services.weights_document(study, ids, method), json_dumps_params={"indent": 1, "ensure_ascii": False}
        )
        response["Content-Disposition"] = 'attachment; filename="toolkit-weights.json"'
        return response
    toolkits = generation.toolkits_for(study).order_by("name", "-version")
    form = WeightsImportForm(toolkits, request.POST or None, request.FILES or None)
    repeated = None
    if request.method == "POST" and form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            target, n = services.import_weights(
                study,
                form.cleaned_data["toolkit"],
                upload.read(),
                filename=upload.name,
                drop_flagged=form.cleaned_data["drop_flagged"],
                actor=request.user,
            )
            messages.success(request, f"Imported {n} weights into {target}; they are shown beside its items below.")
            return redirect("toolkit-detail", study.pk, target.pk)
        except services.WeightsAlreadyImported as exc:
            form.add_error(None, str(exc))
            repeated = exc.toolkit
        except services.JudgingError as exc:
            form.add_error(None, str(exc))
    round_list = reports.rounds_of(study, ids)
    ctx = _report_context(round_list, method, _weak_below(request))
    ctx.update(
        form=form,
        all_rounds=JudgeRound.objects.filter(study=study).order_by("-created_at"),
        selected=ids or [],
        imported=ItemWeight.objects.filter(toolkit__study=study)
        .select_related("toolkit", "item")
        .order_by("toolkit__name", "-toolkit__version", "item__number")[:300],
        repeated=repeated,
    )
    return render(request, "judging/weights.html", ctx, status=400 if form.errors else 200)


# -- human verification ---------------------------------------------------------------------------------------------
@study_role_required(Role.RESEARCHER)
def round_verification(request, study_id, round_id):
    rnd = _round(request, round_id)
    form = VerificationForm(services.coders_of(request.study), request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            n = services.request_verification(
                rnd,
                coders=form.cleaned_data["coders"],
                sample_size=form.cleaned_data["sample_size"],
                seed=form.cleaned_data["seed"],
                actor=request.user,
            )
            messages.success(request, f"Sent {n} judged outputs to {len(form.cleaned_data['coders'])} coder(s).")
            return redirect("judging-round-verification", request.study.pk, rnd.pk)
        except services.JudgingError as exc:
            form.add_error(None, str(exc))
    pairs = services.verification_pairs(rnd)
    only = request.GET.get("show", "disagreements")
    shown = [(v, c, reports.detected(v.value, rnd.template)) for v, c in pairs]
    if only == "disagreements":
        shown = [p for p in shown if p[2] != p[1].value]
    return render(
        request,
        "judging/verification.html",
        {"round": rnd, "form": form, "summary": services.verification_summary(rnd), "pairs": shown, "show": only},
    )


@study_role_required(Role.CODER)
def verify(request, study_id):
    """The coder's queue: one story at a time, blind to the judge's verdict."""
    study = request.study
    if request.method == "POST":
        req = get_object_or_404(
            VerificationRequest, pk=request.POST.get("request", 0), coder=request.user, verdict__round__study=study
        )
        try:
            services.answer_check(
                req, user=request.user, value=request.POST.get("value"), note=request.POST.get("note", "")
            )
        except services.JudgingError as exc:
            messages.error(request, str(exc))
        if not request.htmx:
            return redirect("judging-verify", study.pk)
    pending = services.pending_checks(study, request.user)
    ctx = {
        "question": pending.first(),
        "left": pending.count(),
        "answered": request.user.judge_checks.filter(verdict__round__study=study).count(),
    }
    template = "judging/_verify_question.html" if request.htmx else "judging/verify.html"
    return render(request, template, ctx)
