"""The Recipe page of a study: download its recipe; start from a published study (the built-in recipes) or upload
one, and see the plan before anything is applied; confirm to apply (study admins) and see what was created."""

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from stereoscope.models import Role
from stereoscope.permissions import has_role, study_role_required

from . import library, results, services
from .exporting import export_recipe
from .loader import RecipeError, dump, parse_text

RESULT_KEY = "recipe-applied-{}"


def _render(request, **context):
    study = request.study
    context.setdefault("can_apply", has_role(request.user, study, Role.ADMIN) and not study.is_library)
    context.setdefault("gallery", library.gallery())
    return render(
        request, "recipes/recipe.html", {"study": study, **context}, status=400 if context.get("problems") else 200
    )


def _plan(request, text, builtin=None):
    """The page with the plan of the recipe `text` (or its problems, with the text to edit and plan again)."""
    try:
        connection_map = services.parse_connection_map(request.POST.get("connections"))
        outcome = services.plan(
            parse_text(text), study=request.study, actor=request.user, connection_map=connection_map
        )
    except RecipeError as exc:
        return _render(request, problems=[str(p) for p in exc.problems], recipe_text=text, builtin=builtin)
    return _render(
        request,
        outcome=outcome,
        recipe_text=text,
        builtin=builtin,
        connections_text=request.POST.get("connections") or "",
        cost_text=services.cost_text(outcome.jobs),
        calls_text=services.calls_text(outcome.jobs, outcome.changes),
    )


@study_role_required(Role.RESEARCHER)
def recipe_page(request, study_id):
    """GET: the page (with ?builtin=NAME: the plan of that built-in recipe). POST (upload or edited text): the
    plan of the recipe, with a button to apply it."""
    if request.method != "POST":
        name = request.GET.get("builtin")
        if not name:
            return _render(request)
        try:
            text = library.text(name)
        except RecipeError as exc:
            return _render(request, problems=[str(p) for p in exc.problems])
        return _plan(request, text, builtin=library.gallery_entry(name))
    upload = request.FILES.get("file")
    text = upload.read(services.MAX_UPLOAD + 1) if upload else (request.POST.get("recipe") or "").encode()
    if len(text) > services.MAX_UPLOAD:
        return _render(request, problems=[f"The recipe is larger than {services.MAX_UPLOAD // 1_000_000} MB."])
    try:
        text = text.decode("utf-8-sig")
    except UnicodeDecodeError:
        return _render(request, problems=["The file is not UTF-8 text."])
    return _plan(request, text, builtin=library.gallery_entry(request.POST.get("builtin") or ""))


@study_role_required(Role.RESEARCHER)
@require_safe
def recipe_download(request, study_id):
    response = HttpResponse(dump(export_recipe(request.study)), content_type="application/yaml; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="study-{request.study.pk}-recipe.yaml"'
    return response


@study_role_required(Role.ADMIN)
@require_POST
def recipe_apply(request, study_id):
    text = request.POST.get("recipe") or ""
    try:
        connection_map = services.parse_connection_map(request.POST.get("connections"))
        data = parse_text(text)
        outcome = services.apply(data, study=request.study, actor=request.user, connection_map=connection_map)
    except RecipeError as exc:
        return _render(request, problems=[str(p) for p in exc.problems], recipe_text=text)
    builtin = library.gallery_entry(request.POST.get("builtin") or "")
    request.session[RESULT_KEY.format(request.study.pk)] = dict(
        results.summary(outcome, data), builtin=builtin["title"] if builtin else ""
    )
    return redirect("recipe-applied", study_id=request.study.pk)


@study_role_required(Role.ADMIN)
@require_safe
def recipe_applied(request, study_id):
    """What the last apply created, updated or left alone, with links, and the next steps. Shown once."""
    result = request.session.pop(RESULT_KEY.format(request.study.pk), None)
    if result is None:
        messages.info(request, "No recipe was applied just now: plan one here.")
        return redirect("recipe", study_id=request.study.pk)
    return render(request, "recipes/applied.html", {"study": request.study, "result": result})
