"""The Recipe page of a study: download its recipe; upload one and see the plan before anything is applied;
confirm to apply (study admins)."""

from django.contrib import messages
from django.http import HttpResponse
from django.shortcuts import redirect, render
from django.views.decorators.http import require_POST, require_safe

from stereoscope.models import Role
from stereoscope.permissions import has_role, study_role_required

from . import services
from .exporting import export_recipe
from .loader import RecipeError, dump, parse_text


def _render(request, **context):
    study = request.study
    context.setdefault("can_apply", has_role(request.user, study, Role.ADMIN) and not study.is_library)
    return render(
        request, "recipes/recipe.html", {"study": study, **context}, status=400 if context.get("problems") else 200
    )


@study_role_required(Role.RESEARCHER)
def recipe_page(request, study_id):
    """GET: the page. POST (upload): the plan of the uploaded recipe, with a button to apply it."""
    if request.method != "POST":
        return _render(request)
    upload = request.FILES.get("file")
    text = upload.read(services.MAX_UPLOAD + 1) if upload else (request.POST.get("recipe") or "").encode()
    if len(text) > services.MAX_UPLOAD:
        return _render(request, problems=[f"The recipe is larger than {services.MAX_UPLOAD // 1_000_000} MB."])
    try:
        text = text.decode("utf-8-sig")
        connection_map = services.parse_connection_map(request.POST.get("connections"))
        outcome = services.plan(
            parse_text(text), study=request.study, actor=request.user, connection_map=connection_map
        )
    except UnicodeDecodeError:
        return _render(request, problems=["The file is not UTF-8 text."])
    except RecipeError as exc:
        return _render(request, problems=[str(p) for p in exc.problems], recipe_text=text)
    return _render(
        request,
        outcome=outcome,
        recipe_text=text,
        connections_text=request.POST.get("connections") or "",
        known_cost=services.total_cost(outcome.jobs),
    )


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
        outcome = services.apply(
            parse_text(text), study=request.study, actor=request.user, connection_map=connection_map
        )
    except RecipeError as exc:
        return _render(request, problems=[str(p) for p in exc.problems], recipe_text=text)
    messages.success(request, f"Recipe applied: {len(outcome.changed)} change(s).")
    return redirect("recipe", study_id=request.study.pk)
