"""Toolkit pages: list and library, detail with items, dimensions, slots and expansion preview;
editing; import/export."""

from django.contrib import messages
from django.core.exceptions import PermissionDenied, ValidationError
from django.db.models import Count, Q
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.text import slugify
from django.views.decorators.http import require_GET, require_POST, require_safe

from stereoscope.downloads import table_download
from stereoscope.models import Role, Study
from stereoscope.permissions import VIEWER, has_role, study_role_required

from ..models import Toolkit
from . import file_format as toolkit_format
from . import item_extras, services
from .counterfactual import parse_name_pairs
from .expansion import count_units
from .forms import (
    DimensionForm,
    ImportForm,
    ItemForm,
    SlotForm,
    SlotsJsonForm,
    ToolkitForm,
    TwinForm,
    json_text,
)
from .slots import SlotError

PREVIEW_LIMITS = (10, 20, 50, 100)


def _error_text(exc):
    if isinstance(exc, ValidationError):
        return " ".join(exc.messages)
    return str(exc)


def _library():
    return Study.objects.filter(is_library=True).first()


def _toolkit(request, toolkit_id, library_ok=False):
    """A toolkit of the current study (or, for reading, of the built-in library); 404 otherwise."""
    studies = Q(study=request.study)
    if library_ok:
        studies |= Q(study__is_library=True)
    return get_object_or_404(Toolkit.objects.filter(studies).select_related("study", "parent"), pk=toolkit_id)


def _detail_url(request, toolkit):
    return reverse("toolkit-detail", args=[request.study.pk, toolkit.pk])


def _annotated(queryset):
    toolkits = list(
        queryset.annotate(
            n_items=Count("items", distinct=True),
            n_dimensions=Count("dimensions", distinct=True),
            n_runs=Count("runs", distinct=True),
        ).order_by("name", "-version")
    )
    for toolkit in toolkits:
        try:
            toolkit.n_units = count_units(toolkit)
        except SlotError:
            toolkit.n_units = None
    return toolkits


@study_role_required(VIEWER)
def toolkit_list(request, study_id):
    study = request.study
    can_edit = has_role(request.user, study, Role.RESEARCHER) and not study.is_library
    form = ToolkitForm(request.POST or None)
    if request.method == "POST":
        if not can_edit:
            raise PermissionDenied("Creating toolkits needs the researcher role.")
        if form.is_valid():
            try:
                toolkit = services.create_blank_toolkit(study, actor=request.user, **form.cleaned_data)
                messages.success(request, f"Created {toolkit}. Add dimensions, slots and items below.")
                return redirect("toolkit-detail", study.pk, toolkit.pk)
            except (ValidationError, ValueError) as exc:
                form.add_error(None, _error_text(exc))
    library = _library()
    library_toolkits = _annotated(library.toolkits.all()) if library and library.pk != study.pk else []
    return render(
        request,
        "generation/toolkit_list.html",
        {
            "study": study,
            "toolkits": _annotated(study.toolkits.all()),
            "library_toolkits": library_toolkits,
            "can_edit": can_edit,
            "form": form,
            "import_form": ImportForm(),
        },
        status=400 if form.errors else 200,
    )


@study_role_required(Role.RESEARCHER)
@require_POST
def toolkit_import(request, study_id):
    study = request.study
    form = ImportForm(request.POST, request.FILES)
    errors = []
    if form.is_valid():
        upload = form.cleaned_data["file"]
        try:
            fmt = form.cleaned_data["format"] or toolkit_format.guess_format(upload.name)
            toolkit = toolkit_format.import_toolkit(
                study, upload.read(), fmt=fmt, created_by=request.user, name=form.cleaned_data["name"] or None
            )
        except toolkit_format.ToolkitFormatError as exc:
            errors = exc.errors
        else:
            services.record_activity(study, request.user, "imported a toolkit", f"{toolkit} from {upload.name}")
            messages.success(
                request, f"Imported {toolkit}: {toolkit.items.count()} items, {toolkit.dimensions.count()} dimensions."
            )
            return redirect("toolkit-detail", study.pk, toolkit.pk)
    return render(
        request,
        "generation/toolkit_list.html",
        {
            "study": study,
            "toolkits": _annotated(study.toolkits.all()),
            "library_toolkits": [],
            "can_edit": True,
            "form": ToolkitForm(),
            "import_form": form,
            "import_errors": errors,
        },
        status=400,
    )


@study_role_required(Role.RESEARCHER)
@require_POST
def toolkit_copy(request, study_id, toolkit_id):
    """Copy a built-in library toolkit into this study as an editable toolkit."""
    source = get_object_or_404(Toolkit, pk=toolkit_id, study__is_library=True)
    if request.study.is_library:
        raise Http404("The library cannot copy into itself.")
    copy = services.TOOLKITS.copy_into(source, study=request.study, actor=request.user)
    messages.success(request, f"Copied {source.name} into this study as {copy}. It is editable.")
    return redirect("toolkit-detail", request.study.pk, copy.pk)


@study_role_required(VIEWER)
@require_safe
def toolkit_detail(request, study_id, toolkit_id):
    toolkit = _toolkit(request, toolkit_id, library_ok=True)
    in_library = toolkit.study_id != request.study.pk
    locked = services.TOOLKITS.is_locked(toolkit)
    researcher = has_role(request.user, request.study, Role.RESEARCHER)
    editable = researcher and not locked and not in_library and not toolkit.study.is_library
    items, extra_columns = _items_with_extras(toolkit)
    versions = (
        Toolkit.objects.filter(study=toolkit.study, name=toolkit.name).order_by("version") if not in_library else []
    )
    return render(
        request,
        "generation/toolkit_detail.html",
        {
            "study": request.study,
            "toolkit": toolkit,
            "items": items,
            "extra_columns": extra_columns,
            "in_library": in_library,
            "locked": locked,
            "researcher": researcher and not request.study.is_library,
            "editable": editable,
            "dimensions": toolkit.dimensions.annotate(n_items=Count("items")).order_by("order", "name"),
            "slots": sorted((toolkit.slots or {}).items()),
            "combinations": toolkit.combinations,
            "versions": versions,
            "runs": toolkit.runs.order_by("-created_at")[:20],
            "meta_form": ToolkitForm(
                initial={"name": toolkit.name, "description": toolkit.description, "language": toolkit.language}
            ),
            "dimension_form": DimensionForm(),
            "slot_form": SlotForm(),
            "slots_json_form": SlotsJsonForm(
                initial={"slots": json_text(toolkit.slots), "combinations": json_text(toolkit.combinations)}
            ),
            "item_form": ItemForm(toolkit=toolkit),
            "twin_form": TwinForm(),
            "preview_limits": PREVIEW_LIMITS,
        },
    )


def _items_with_extras(toolkit):
    """The items in order, each with `extra_cells` from other apps (e.g. detection weights), and those columns."""
    items = toolkit.items.select_related("dimension", "counterfactual_of").prefetch_related("counterfactuals")
    return item_extras.annotate_items(toolkit, items.order_by("number"))


@study_role_required(VIEWER)
@require_GET
def toolkit_preview(request, study_id, toolkit_id):
    """htmx partial: how many prompts the toolkit expands to and the first rendered ones with their slot values."""
    toolkit = _toolkit(request, toolkit_id, library_ok=True)
    try:
        limit = int(request.GET.get("limit", 20))
    except ValueError:
        limit = 20
    limit = max(1, min(limit, 500))
    count, units, problems = services.preview(toolkit, limit)
    return render(
        request,
        "generation/_toolkit_preview.html",
        {
            "toolkit": toolkit,
            "count": count,
            "units": units,
            "problems": problems,
            "limit": limit,
            "study": request.study,
            "preview_limits": PREVIEW_LIMITS,
        },
    )


@study_role_required(VIEWER)
@require_GET
def toolkit_export(request, study_id, toolkit_id, fmt):
    if fmt not in ("json", "csv"):
        raise Http404("Export as .json or .csv.")
    toolkit = _toolkit(request, toolkit_id, library_ok=True)
    filename = f"{slugify(toolkit.name) or 'toolkit'}-v{toolkit.version}.{fmt}"
    if fmt == "csv":
        return table_download(*toolkit_format.toolkit_table(toolkit), filename)
    response = HttpResponse(
        toolkit_format.export_json(toolkit).encode("utf-8"), content_type="application/json; charset=utf-8"
    )
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _edit(view):
    """Researcher-only POST/GET edit views; a locked toolkit gives a clear message and the detail page."""

    @study_role_required(Role.RESEARCHER)
    def wrapper(request, study_id, toolkit_id, *args, **kwargs):
        toolkit = _toolkit(request, toolkit_id)
        try:
            services.TOOLKITS.ensure_editable(toolkit)
        except services.ToolkitLocked as exc:
            messages.error(request, str(exc))
            return redirect("toolkit-detail", request.study.pk, toolkit.pk)
        return view(request, toolkit, *args, **kwargs)

    wrapper.__name__ = view.__name__
    return wrapper


@_edit
def toolkit_edit(request, toolkit):
    form = ToolkitForm(
        request.POST or None,
        initial={"name": toolkit.name, "description": toolkit.description, "language": toolkit.language},
    )
    if request.method == "POST" and form.is_valid():
        try:
            services.update_toolkit(toolkit, actor=request.user, **form.cleaned_data)
            messages.success(request, "Toolkit details saved.")
            return redirect("toolkit-detail", request.study.pk, toolkit.pk)
        except (ValidationError, ValueError) as exc:
            form.add_error(None, _error_text(exc))
    return render(
        request,
        "generation/toolkit_form.html",
        {"study": request.study, "toolkit": toolkit, "form": form, "title": f"Edit {toolkit}"},
        status=400 if form.errors else 200,
    )


@study_role_required(Role.RESEARCHER)
@require_POST
def toolkit_delete(request, study_id, toolkit_id):
    toolkit = _toolkit(request, toolkit_id)
    try:
        services.delete_toolkit(toolkit, actor=request.user)
    except (ValidationError, ValueError) as exc:
        messages.error(request, _error_text(exc))
        return redirect("toolkit-detail", request.study.pk, toolkit.pk)
    messages.success(request, f"Deleted {toolkit}.")
    return redirect("toolkits", request.study.pk)


@study_role_required(Role.RESEARCHER)
@require_POST
def toolkit_new_version(request, study_id, toolkit_id):
    toolkit = _toolkit(request, toolkit_id)
    try:
        copy = services.TOOLKITS.new_version(toolkit, actor=request.user)
    except ValueError as exc:
        messages.error(request, str(exc))
        return redirect("toolkit-detail", request.study.pk, toolkit.pk)
    messages.success(request, f"Created {copy}, an editable copy of v{toolkit.version}.")
    return redirect("toolkit-detail", request.study.pk, copy.pk)


# --- slots --------------------------------------------------------------------------------------------


@_edit
@require_POST
def slot_add(request, toolkit):
    form = SlotForm(request.POST)
    if form.is_valid():
        try:
            services.add_slot(
                toolkit, name=form.cleaned_data["slot_name"], values=form.cleaned_data["values"], actor=request.user
            )
            messages.success(request, f"Slot {{{form.cleaned_data['slot_name'].strip()}}} saved.")
        except (ValidationError, ValueError) as exc:
            messages.error(request, _error_text(exc))
    else:
        messages.error(request, "Give the slot a name and at least one value.")
    return redirect(_detail_url(request, toolkit) + "#slots")


@_edit
@require_POST
def slot_remove(request, toolkit, name):
    try:
        services.remove_slot(toolkit, name=name, actor=request.user)
        messages.success(request, f"Slot {{{name}}} removed.")
    except (ValidationError, ValueError) as exc:
        messages.error(request, _error_text(exc))
    return redirect(_detail_url(request, toolkit) + "#slots")


@_edit
@require_POST
def slots_json(request, toolkit):
    form = SlotsJsonForm(request.POST)
    if form.is_valid():
        try:
            services.update_toolkit(
                toolkit,
                slots=form.cleaned_data["slots"],
                combinations=form.cleaned_data["combinations"],
                actor=request.user,
            )
            messages.success(request, "Slots and combinations saved.")
        except (ValidationError, ValueError) as exc:
            messages.error(request, _error_text(exc))
    else:
        messages.error(request, " ".join(e for errors in form.errors.values() for e in errors))
    return redirect(_detail_url(request, toolkit) + "#slots")


# --- dimensions ---------------------------------------------------------------------------------------


@_edit
@require_POST
def dimension_add(request, toolkit):
    form = DimensionForm(request.POST)
    if form.is_valid():
        try:
            services.save_dimension(toolkit, actor=request.user, **form.cleaned_data)
            messages.success(request, f"Dimension “{form.cleaned_data['name']}” added.")
        except (ValidationError, ValueError) as exc:
            messages.error(request, _error_text(exc))
    else:
        messages.error(request, "A dimension needs a name.")
    return redirect(_detail_url(request, toolkit) + "#dimensions")


@_edit
def dimension_edit(request, toolkit, dimension_id):
    dimension = get_object_or_404(toolkit.dimensions, pk=dimension_id)
    form = DimensionForm(request.POST or None, initial={"name": dimension.name, "description": dimension.description})
    if request.method == "POST" and form.is_valid():
        try:
            services.save_dimension(toolkit, dimension=dimension, actor=request.user, **form.cleaned_data)
            messages.success(request, "Dimension saved.")
            return redirect(_detail_url(request, toolkit) + "#dimensions")
        except (ValidationError, ValueError) as exc:
            form.add_error(None, _error_text(exc))
    return render(
        request,
        "generation/toolkit_form.html",
        {"study": request.study, "toolkit": toolkit, "form": form, "title": f"Edit dimension “{dimension.name}”"},
        status=400 if form.errors else 200,
    )


@_edit
@require_POST
def dimension_delete(request, toolkit, dimension_id):
    dimension = get_object_or_404(toolkit.dimensions, pk=dimension_id)
    services.delete_dimension(dimension, actor=request.user)
    messages.success(request, f"Dimension “{dimension.name}” deleted; its items have no dimension now.")
    return redirect(_detail_url(request, toolkit) + "#dimensions")


@_edit
@require_POST
def dimension_move(request, toolkit, dimension_id, direction):
    if direction not in ("up", "down"):
        raise Http404("Move up or down.")
    dimension = get_object_or_404(toolkit.dimensions, pk=dimension_id)
    services.move_dimension(dimension, -1 if direction == "up" else 1, actor=request.user)
    return redirect(_detail_url(request, toolkit) + "#dimensions")


# --- items --------------------------------------------------------------------------------------------


def _item_data(form):
    return {k: v for k, v in form.cleaned_data.items()}


@_edit
def item_add(request, toolkit):
    form = ItemForm(request.POST or None, toolkit=toolkit)
    if request.method == "POST" and form.is_valid():
        try:
            item = services.save_item(toolkit, _item_data(form), actor=request.user)
            messages.success(request, f"Item {item.number} added.")
            return redirect(_detail_url(request, toolkit) + f"#item-{item.number}")
        except (ValidationError, ValueError) as exc:
            form.add_error(None, _error_text(exc))
    return render(
        request,
        "generation/toolkit_item_form.html",
        {"study": request.study, "toolkit": toolkit, "form": form, "title": "Add an item"},
        status=400 if form.errors else 200,
    )


@_edit
def item_edit(request, toolkit, item_id):
    item = get_object_or_404(toolkit.items, pk=item_id)
    form = ItemForm(request.POST or None, toolkit=toolkit, initial=ItemForm.initial_for(item))
    if request.method == "POST" and form.is_valid():
        try:
            item = services.save_item(toolkit, _item_data(form), item=item, actor=request.user)
            messages.success(request, f"Item {item.number} saved.")
            return redirect(_detail_url(request, toolkit) + f"#item-{item.number}")
        except (ValidationError, ValueError) as exc:
            form.add_error(None, _error_text(exc))
    return render(
        request,
        "generation/toolkit_item_form.html",
        {"study": request.study, "toolkit": toolkit, "form": form, "item": item, "title": f"Edit item {item.number}"},
        status=400 if form.errors else 200,
    )


@_edit
@require_POST
def item_delete(request, toolkit, item_id):
    item = get_object_or_404(toolkit.items, pk=item_id)
    number = item.number
    services.delete_item(item, actor=request.user)
    messages.success(request, f"Item {number} deleted.")
    return redirect(_detail_url(request, toolkit) + "#items")


@_edit
@require_POST
def item_move(request, toolkit, item_id, direction):
    if direction not in ("up", "down"):
        raise Http404("Move up or down.")
    item = get_object_or_404(toolkit.items, pk=item_id)
    services.move_item(item, -1 if direction == "up" else 1, actor=request.user)
    if request.htmx:
        items, extra_columns = _items_with_extras(toolkit)
        response = render(
            request,
            "generation/_toolkit_items.html",
            {
                "study": request.study,
                "toolkit": toolkit,
                "items": items,
                "extra_columns": extra_columns,
                "editable": True,
            },
        )
        response["HX-Trigger"] = "toolkit-changed"
        return response
    return redirect(_detail_url(request, toolkit) + "#items")


@_edit
@require_POST
def item_twin(request, toolkit, item_id):
    item = get_object_or_404(toolkit.items, pk=item_id)
    form = TwinForm(request.POST)
    try:
        pairs = parse_name_pairs(form.data.get("name_pairs", "")) or None
        twin = services.derive_twin(item, actor=request.user, name_pairs=pairs)
    except (ValidationError, ValueError) as exc:
        messages.error(request, _error_text(exc))
        return redirect(_detail_url(request, toolkit) + "#items")
    messages.success(request, f"Item {twin.number} is the gender-swapped twin of item {item.number}.")
    return redirect(_detail_url(request, toolkit) + f"#item-{twin.number}")
