"""Text measures pages: lexicons (edit word lists, exclusions, preview), measure runs, reports, twins, CSV."""

import itertools
import json

from django.contrib import messages
from django.db.models import Count
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from generation import selectors as generation
from stereoscope.downloads import table_download
from stereoscope.models import Role
from stereoscope.permissions import VIEWER, has_role, study_role_required
from stereoscope.untrusted import whole_numbers

from . import scoring, selectors, services
from .contrasts import rows_for, store_contrasts, twin_pairs
from .forms import CategoryForm, ExclusionForm, LexiconForm, LexiconImportForm, MeasureRunForm, PreviewForm
from .highlight import render_layer
from .models import Lexicon, LexiconCategory, LexiconExclusion, MeasureRun, OutputMeasure
from .tasks import fairness_check_task


def _lexicon(request, lexicon_id):
    return get_object_or_404(services.lexicons_for(request.study), pk=lexicon_id)


def _own_lexicon(request, lexicon_id):
    lexicon = _lexicon(request, lexicon_id)
    if lexicon.study_id != request.study.pk:
        raise Http404("Copy the built-in lexicon into this study to edit it.")
    return lexicon


def _run(request, run_id):
    return get_object_or_404(MeasureRun, pk=run_id, study=request.study)


@study_role_required(VIEWER)
@require_safe
def index(request, study_id):
    study = request.study
    lexicons = (
        services.lexicons_for(study).prefetch_related("categories").order_by("-study__is_library", "name", "-version")
    )
    runs = MeasureRun.objects.filter(study=study).prefetch_related("lexicons")
    return render(
        request,
        "measures/index.html",
        {
            "study": study,
            "lexicons": lexicons,
            "runs": runs,
            "can_edit": has_role(request.user, study, Role.RESEARCHER),
            "lexicon_form": LexiconForm(),
            "import_form": LexiconImportForm(),
        },
    )


@study_role_required(Role.RESEARCHER)
@require_POST
def lexicon_new(request, study_id):
    form = LexiconForm(request.POST)
    if not form.is_valid():
        messages.error(request, "Give the lexicon a name.")
        return redirect("measures", study_id)
    data = {**form.cleaned_data, "source": "", "categories": [], "exclusions": []}
    lexicon = services.create_lexicon(request.study, data, actor=request.user)
    messages.success(request, f"Lexicon “{lexicon}” created; add its categories.")
    return redirect("measures-lexicon", study_id, lexicon.pk)


@study_role_required(Role.RESEARCHER)
@require_POST
def lexicon_import(request, study_id):
    form = LexiconImportForm(request.POST, request.FILES)
    if not form.is_valid():
        for error in form.non_field_errors():
            messages.error(request, error)
        return redirect("measures", study_id)
    try:
        data = services.validate_lexicon_data(form.cleaned_data["data"])
    except services.LexiconDataError as exc:
        for error in exc.errors[:20]:
            messages.error(request, error)
        return redirect("measures", study_id)
    lexicon = services.create_lexicon(request.study, data, actor=request.user)
    messages.success(request, f"Imported “{lexicon}” with {lexicon.categories.count()} categories.")
    return redirect("measures-lexicon", study_id, lexicon.pk)


@study_role_required(VIEWER)
@require_safe
def lexicon_detail(request, study_id, lexicon_id):
    lexicon = _lexicon(request, lexicon_id)
    categories = [(c, services.category_warnings(c)) for c in lexicon.categories.all()]
    can_edit = has_role(request.user, request.study, Role.RESEARCHER)
    return render(
        request,
        "measures/lexicon.html",
        {
            "study": request.study,
            "lexicon": lexicon,
            "categories": categories,
            "can_edit": can_edit,
            "own": lexicon.study_id == request.study.pk,
            "exclusions": lexicon.exclusions.select_related("category"),
            "exclusion_form": ExclusionForm(lexicon=lexicon),
            "preview_form": PreviewForm(),
            "versions": Lexicon.objects.filter(study=lexicon.study, name=lexicon.name).order_by("-version"),
        },
    )


@study_role_required(VIEWER)
@require_safe
def lexicon_export(request, study_id, lexicon_id):
    lexicon = _lexicon(request, lexicon_id)
    response = HttpResponse(
        json.dumps(services.lexicon_data(lexicon), ensure_ascii=False, indent=1),
        content_type="application/json; charset=utf-8",
    )
    response["Content-Disposition"] = f'attachment; filename="lexicon-{lexicon.pk}-v{lexicon.version}.json"'
    return response


@study_role_required(Role.RESEARCHER)
@require_POST
def lexicon_copy(request, study_id, lexicon_id):
    lexicon = _lexicon(request, lexicon_id)
    try:
        copy = services.LEXICONS.copy_into(lexicon, study=request.study, actor=request.user)
    except services.LexiconDataError as exc:
        messages.error(request, str(exc))
        return redirect("measures-lexicon", study_id, lexicon.pk)
    messages.success(request, f"Copied into this study as “{copy}”.")
    return redirect("measures-lexicon", study_id, copy.pk)


@study_role_required(VIEWER)
@require_POST
def lexicon_preview(request, study_id, lexicon_id):
    lexicon = _lexicon(request, lexicon_id)
    form = PreviewForm(request.POST)
    if not form.is_valid():
        return HttpResponse('<p class="error">Paste some text (up to 20,000 characters).</p>')
    return HttpResponse(render_layer(form.cleaned_data["text"], lexicon))


@study_role_required(Role.RESEARCHER)
def category_edit(request, study_id, lexicon_id, category_id=None):
    lexicon = _own_lexicon(request, lexicon_id)
    category = get_object_or_404(LexiconCategory, pk=category_id, lexicon=lexicon) if category_id else None
    form = CategoryForm(request.POST or None, initial=CategoryForm.initial_for(category) if category else None)
    if request.method == "POST" and form.is_valid():
        try:
            saved, created = services.save_category(
                lexicon, form.data_for_service(), category=category, actor=request.user
            )
        except services.LexiconDataError as exc:
            for error in exc.errors:
                form.add_error(None, error)
        else:
            if created:
                messages.info(
                    request,
                    f"v{lexicon.version} is used by a measure run, so the change went into v{saved.lexicon.version}.",
                )
            messages.success(request, f"Saved “{saved.name}” ({len(saved.words)} entries).")
            for warning in services.category_warnings(saved)[:10]:
                messages.warning(request, warning)
            return redirect("measures-lexicon", study_id, saved.lexicon_id)
    return render(
        request,
        "measures/category_form.html",
        {"study": request.study, "lexicon": lexicon, "category": category, "form": form},
    )


@study_role_required(Role.RESEARCHER)
@require_POST
def category_delete(request, study_id, lexicon_id, category_id):
    lexicon = _own_lexicon(request, lexicon_id)
    category = get_object_or_404(LexiconCategory, pk=category_id, lexicon=lexicon)
    target = services.delete_category(category, actor=request.user)
    messages.success(request, f"Deleted “{category.name}” from {target}.")
    return redirect("measures-lexicon", study_id, target.pk)


@study_role_required(Role.RESEARCHER)
@require_POST
def exclusion_add(request, study_id, lexicon_id):
    lexicon = _own_lexicon(request, lexicon_id)
    form = ExclusionForm(request.POST, lexicon=lexicon)
    if not form.is_valid():
        messages.error(request, "An exclusion needs a phrase (and a category of this lexicon, if any).")
        return redirect("measures-lexicon", study_id, lexicon.pk)
    try:
        ex, created = services.add_exclusion(lexicon, actor=request.user, **form.cleaned_data)
    except services.LexiconDataError as exc:
        messages.error(request, exc.errors[0])
        return redirect("measures-lexicon", study_id, lexicon.pk)
    messages.success(
        request, f"Excluded “{ex.phrase}”" + (f" in the new version v{ex.lexicon.version}." if created else ".")
    )
    return redirect("measures-lexicon", study_id, ex.lexicon_id)


@study_role_required(Role.RESEARCHER)
@require_POST
def exclusion_delete(request, study_id, lexicon_id, exclusion_id):
    lexicon = _own_lexicon(request, lexicon_id)
    exclusion = get_object_or_404(LexiconExclusion, pk=exclusion_id, lexicon=lexicon)
    target = services.delete_exclusion(exclusion, actor=request.user)
    messages.success(request, f"Removed the exclusion “{exclusion.phrase}”.")
    return redirect("measures-lexicon", study_id, target.pk)


@study_role_required(Role.RESEARCHER)
def run_new(request, study_id):
    form = MeasureRunForm(
        request.POST or None, study=request.study, initial={"lexicons": request.GET.getlist("lexicon")}
    )
    if request.method == "POST" and form.is_valid():
        d = form.cleaned_data
        try:
            run = scoring.create_run(
                request.study,
                name=d["name"],
                lexicons=d["lexicons"],
                source_runs=d["source_runs"],
                classifier=d["classifier"] or "",
                classifier_path=d["classifier_path"],
                classifier_model_id=d["classifier_model_id"],
                classifier_unit=d["classifier_unit"],
                gender_sources=d["gender_sources"],
                name_genders=d["name_genders"],
                zero_policy=d["zero_policy"],
                or_orientation=d["or_orientation"],
                success_filter=d["success_filter"],
                success_keywords=d["success_keywords"],
                nli_path=d["nli_path"],
                nli_model_id=d["nli_model_id"],
                context_slot=d["context_slot"],
                trained_classifier=d["trained_classifier"],
                actor=request.user,
            )
        except scoring.MeasureRunError as exc:
            form.add_error(None, str(exc))
        else:
            if "start" in request.POST:
                scoring.start(run, actor=request.user)
            messages.success(request, f"Measure run “{run.name}” created.")
            return redirect("measures-run", study_id, run.pk)
    return render(request, "measures/run_form.html", {"study": request.study, "form": form})


def _run_context(request, run):
    return {
        "study": request.study,
        "run": run,
        "progress": scoring.progress_of(run),
        "can_edit": has_role(request.user, request.study, Role.RESEARCHER),
        "live": run.status in ("queued", "running"),
    }


@study_role_required(VIEWER)
@require_safe
def run_detail(request, study_id, run_id):
    run = _run(request, run_id)
    ctx = _run_context(request, run)
    ctx.update(
        {
            "n_outputs": scoring.outputs_for(run).count(),
            "measures": run.output_measures.select_related("output").order_by("output_id")[:50],
            "gender_sources": _gender_source_counts(run),
            "success_counts": selectors.success_counts(run) if run.success_filter else [],
        }
    )
    return render(request, "measures/run.html", ctx)


def _gender_source_counts(run):

    return list(
        run.output_measures.values("gender", "gender_source")
        .annotate(n=Count("id"))
        .order_by("gender_source", "gender")
    )


@study_role_required(VIEWER)
@require_safe
def run_progress(request, study_id, run_id):
    run = _run(request, run_id)
    return render(request, "measures/_run_progress.html", _run_context(request, run))


@study_role_required(Role.RESEARCHER)
@require_POST
def run_action(request, study_id, run_id, action):
    run = _run(request, run_id)
    try:
        if action == "start":
            scoring.start(run, actor=request.user)
            messages.success(request, "Scoring queued; outputs already scored are skipped.")
        elif action == "cancel":
            scoring.cancel(run, actor=request.user)
            messages.success(request, "Cancel requested.")
        elif action == "recompute":
            store_contrasts(run)
            messages.success(request, "Contrasts recomputed.")
        elif action == "fairness":
            fairness_check_task.delay(run.pk)
            messages.success(request, "Fairness check queued; its result appears in the report.")
        else:
            raise Http404("Unknown action.")
    except (scoring.MeasureRunError, ValueError) as exc:
        messages.error(request, str(exc))
    return redirect("measures-run", study_id, run.pk)


@study_role_required(VIEWER)
@require_safe
def run_report(request, study_id, run_id):
    run = _run(request, run_id)
    choices = selectors.grouping_choices(run)
    grouping = request.GET.get("grouping", "overall")
    if grouping not in dict(choices):
        grouping = "overall"
    return render(
        request,
        "measures/report.html",
        {
            "study": request.study,
            "run": run,
            "grouping": grouping,
            "choices": choices,
            "report": selectors.report(run, grouping),
        },
    )


@study_role_required(VIEWER)
@require_safe
def run_pairs(request, study_id, run_id):
    run = _run(request, run_id)
    pairs = twin_pairs(rows_for(run))[:200]
    ids = [p[0]["output_id"] for p in pairs] + [p[1]["output_id"] for p in pairs]
    texts = generation.output_texts(ids)
    show = request.GET.get("show")
    lexicons = list(run.lexicons.all())
    rows = []
    for f, m in pairs:
        row = {
            "f": f,
            "m": m,
            "score_diff": (f["score"] - m["score"]) if f["score"] is not None and m["score"] is not None else None,
        }
        if show and str(f["output_id"]) == show:
            row["f_html"] = render_layer(texts[f["output_id"]], lexicons)
            row["m_html"] = render_layer(texts[m["output_id"]], lexicons)
        rows.append(row)
    return render(request, "measures/pairs.html", {"study": request.study, "run": run, "pairs": rows})


@study_role_required(VIEWER)
@require_safe
def run_output(request, study_id, run_id, output_id):
    run = _run(request, run_id)
    measure = get_object_or_404(OutputMeasure.objects.select_related("output__item"), run=run, output_id=output_id)
    categories = {str(c.pk): c for c in LexiconCategory.objects.filter(lexicon__in=run.lexicons.all())}
    counts = [(categories[k], n) for k, n in measure.category_counts.items() if k in categories]
    text = measure.output.text
    sentences = [(s, text[s.start : s.end]) for s in measure.sentence_rows()]
    return render(
        request,
        "measures/output.html",
        {
            "study": request.study,
            "run": run,
            "measure": measure,
            "output": measure.output,
            "counts": counts,
            "sentences": sentences,
            "lexicons": list(run.lexicons.all()),
        },
    )


def _csv_response(rows, filename):
    """The rows as a CSV download; the columns are the first row's keys (they depend on the run's lexicons)."""
    rows = iter(rows)
    first = next(rows, None)
    if first is None:
        return table_download(["no rows"], [], filename)
    return table_download(list(first), itertools.chain([first], rows), filename, stream=True)


@study_role_required(Role.RESEARCHER)
@require_safe
def run_csv(request, study_id, run_id, kind):
    run = _run(request, run_id)
    if kind == "outputs":
        return _csv_response(selectors.output_rows(run), f"measures-{run.pk}-outputs.csv")
    if kind == "sentences":
        return _csv_response(selectors.sentence_rows(run), f"measures-{run.pk}-sentences.csv")
    if kind == "success":
        return _csv_response(iter(selectors.success_counts(run)), f"measures-{run.pk}-success.csv")
    raise Http404("Unknown export.")


@study_role_required(VIEWER)
@require_safe
def output_layer(request, study_id, output_id):
    """An htmx partial for any output viewer (generation, coding): the text with a chosen lexicon's layer.
    ?lexicon=<id> (repeatable); default: the lexicons of the study's latest measure run, else none."""
    output = get_object_or_404(generation.study_outputs(request.study).select_related("item__toolkit"), pk=output_id)
    available = services.lexicons_for(request.study).order_by("-study__is_library", "name", "-version")
    wanted = whole_numbers(request.GET.getlist("lexicon"))
    if wanted:
        chosen = list(available.filter(pk__in=wanted))
    else:
        latest = MeasureRun.objects.filter(study=request.study).order_by("-created_at").first()
        chosen = list(latest.lexicons.all()) if latest else []
    language = (output.item.toolkit.language if output.item_id else "") or "en"
    return render(
        request,
        "measures/_output_layer.html",
        {
            "study": request.study,
            "output": output,
            "available": available,
            "chosen": chosen,
            "chosen_ids": [lx.pk for lx in chosen],
            "language": language,
        },
    )
