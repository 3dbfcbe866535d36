"""Coding pages: codebooks, the coding workspace (htmx), assignments, frequencies. Writes go through services."""

from django.contrib import messages
from django.contrib.auth import get_user_model
from django.core.paginator import Paginator
from django.db.models import Count, Q
from django.http import Http404, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.html import conditional_escape, escape, format_html, format_html_join
from django.utils.safestring import mark_safe
from django.views.decorators.http import require_POST, require_safe
from django_htmx.http import reswap

from generation import selectors as generation
from generation.models import BATCH_PROVIDERS, ExecutionMode
from generation.runs import batches
from stereoscope import jobs
from stereoscope.downloads import table_download
from stereoscope.models import Membership, Role
from stereoscope.permissions import VIEWER, has_role, study_role_required
from stereoscope.untrusted import whole_numbers

from . import codebook_format as fmt
from . import selectors, services
from .api.files import codebook_download, codings_download, import_upload
from .assigning import STRATEGIES
from .models import (
    Assignment,
    AssignmentStatus,
    AttributedGender,
    Code,
    Codebook,
    CodeDiscovery,
    CodeOperation,
    CodeSuggestion,
    Coding,
    CodingMode,
    GenderAttribution,
    GenderTag,
    Memo,
    VariableScope,
)
from .offsets import segments


def _codebook(request, codebook_id):
    return get_object_or_404(Codebook, pk=codebook_id, study=request.study)


def _found(obj, message):
    """`obj`, or a 404 that says what is missing."""
    if obj is None:
        raise Http404(message)
    return obj


# --- index ---------------------------------------------------------------------------------------------


@study_role_required(VIEWER)
@require_safe
def coding_home(request, study_id):
    study = request.study
    is_researcher = has_role(request.user, study, Role.RESEARCHER)
    codebooks = study.codebooks.annotate(
        n_codes=Count("codes", filter=Q(codes__active=True, codes__codable=True), distinct=True),
        n_codings=Count("codings", distinct=True),
    )
    if selectors.is_blind_reader(request.user, study):  # a coder counts only their own codings
        own = dict(
            selectors.visible_codings(request.user, study)
            .values("codebook_id")
            .annotate(n=Count("id"))
            .order_by()
            .values_list("codebook_id", "n")
        )
        codebooks = list(codebooks)
        for codebook in codebooks:
            codebook.n_codings = own.get(codebook.pk, 0)
    queues = []
    for row in (
        Assignment.objects.filter(study=study, coder=request.user)
        .values("codebook_id", "codebook__name", "codebook__version")
        .annotate(total=Count("id"), done=Count("id", filter=Q(status=AssignmentStatus.DONE)))
    ):
        nxt = services.next_assignment(Codebook(pk=row["codebook_id"]), request.user)
        row["next"] = nxt
        row["percent"] = round(100 * row["done"] / row["total"]) if row["total"] else 0
        queues.append(row)
    library = Codebook.objects.filter(study__is_library=True).order_by("name", "-version") if is_researcher else []
    return render(
        request,
        "annotation/home.html",
        {
            "study": study,
            "codebooks": codebooks,
            "queues": queues,
            "is_researcher": is_researcher,
            "library": library,
            "toolkits": generation.study_toolkits(study),
        },
    )


@study_role_required(Role.RESEARCHER)
@require_POST
def codebook_create(request, study_id):
    study = request.study
    action = request.POST.get("action", "create")
    try:
        if action == "copy":
            source = Codebook.objects.filter(pk=request.POST.get("source") or 0).select_related("study").first()
            if source is None or not (source.study_id == study.pk or source.study.is_library):
                raise services.AnnotationError("Choose a codebook from this study or the built-in library.")
            codebook = services.CODEBOOKS.copy_into(source, study=study, actor=request.user)
        elif action == "import":
            upload = request.FILES.get("file")
            if upload is None:
                raise services.AnnotationError("Choose a .qdc, .csv or .json file to import.")
            toolkit = None
            if request.POST.get("toolkit"):
                toolkit = _found(
                    generation.study_toolkit(study, request.POST["toolkit"]), "No such toolkit in this study."
                )
            codebook = import_upload(
                study, upload, request.POST.get("file_format"), request.POST.get("name"), request.user, toolkit
            )
        else:
            codebook = services.create_codebook(
                study,
                name=request.POST.get("name"),
                description=request.POST.get("description", ""),
                created_by=request.user,
            )
    except (services.AnnotationError, fmt.CodebookFormatError) as exc:
        messages.error(request, str(exc))
        return redirect("coding", study.pk)
    messages.success(request, f"Codebook “{codebook}” is ready.")
    return redirect("annotation-codebook", study.pk, codebook.pk)


# --- codebook ------------------------------------------------------------------------------------------


def _codebook_context(request, codebook, error=""):
    tree = selectors.code_tree(codebook)
    visible = selectors.visible_codings(request.user, request.study, Coding.objects.filter(codebook=codebook))
    counts = dict(visible.values("code_id").annotate(n=Count("id")).order_by().values_list("code_id", "n"))
    for code in selectors.flat_codes(tree):
        code.n_codings = counts.get(code.pk, 0)
    return {
        "study": request.study,
        "codebook": codebook,
        "tree": tree,
        "flat": list(selectors.flat_codes(tree)),
        "operations": codebook.operations.select_related("actor")[:30],
        "latest_op": services.latest_operation(codebook),
        "can_edit": has_role(request.user, request.study, Role.RESEARCHER) and not codebook.locked,
        "is_researcher": has_role(request.user, request.study, Role.RESEARCHER),
        "error": error,
        "gender_tags": GenderTag.choices,
        "merged": codebook.codes.filter(active=False).select_related("merged_into"),
        "items": generation.study_items(request.study).order_by("toolkit__name", "number")[:500],
    }


@study_role_required(VIEWER)
@require_safe
def codebook_detail(request, study_id, codebook_id):
    codebook = _codebook(request, codebook_id)
    return render(request, "annotation/codebook.html", _codebook_context(request, codebook))


def _code_or_none(codebook, pk):
    if not pk:
        return None
    return Code.objects.filter(pk=pk, codebook=codebook).select_related("parent").first() or _raise(
        "That code is not in this codebook."
    )


def _raise(message):
    raise services.AnnotationError(message)


@study_role_required(Role.RESEARCHER)
@require_POST
def codebook_edit(request, study_id, codebook_id):
    """One endpoint for the codebook page's forms (htmx): returns the re-rendered tree panel."""
    codebook = _codebook(request, codebook_id)
    op = request.POST.get("op")
    error = ""
    try:
        if op == "create":
            item = None
            if request.POST.get("item"):
                item = generation.study_item(request.study, request.POST["item"]) or _raise(
                    "That prompt item is not in this study."
                )
            services.create_code(
                codebook,
                actor=request.user,
                name=request.POST.get("name"),
                parent=_code_or_none(codebook, request.POST.get("parent")),
                codable="on" in request.POST.getlist("codable"),
                color=request.POST.get("color") or "#4c6ef5",
                gender_tag=request.POST.get("gender_tag", ""),
                kind=request.POST.get("kind") or "a_priori",
                shortcut=request.POST.get("shortcut", ""),
                description=request.POST.get("description", ""),
                stereotype=request.POST.get("stereotype", ""),
                item=item,
            )
        elif op == "update":
            code = _code_or_none(codebook, request.POST.get("code")) or _raise("Choose a code.")
            fields = {
                k: request.POST.get(k, "")
                for k in ("name", "color", "gender_tag", "shortcut", "description", "stereotype")
                if k in request.POST
            }
            services.update_code(code, actor=request.user, **fields)
        elif op == "merge":
            sources = [_code_or_none(codebook, pk) for pk in request.POST.getlist("sources") if pk]
            target = _code_or_none(codebook, request.POST.get("target"))
            services.merge_codes(
                codebook,
                sources,
                target=target,
                new_name=request.POST.get("new_name"),
                new_parent=_code_or_none(codebook, request.POST.get("new_parent")),
                actor=request.user,
            )
        elif op == "move":
            codes = [_code_or_none(codebook, pk) for pk in request.POST.getlist("sources") if pk]
            services.move_codes(
                codebook, codes, new_parent=_code_or_none(codebook, request.POST.get("new_parent")), actor=request.user
            )
        elif op == "undo":
            operation = get_object_or_404(CodeOperation, pk=request.POST.get("operation") or 0, codebook=codebook)
            note = services.undo_operation(operation, actor=request.user)
            error = note
        elif op == "lock":
            services.CODEBOOKS.lock_by_hand(codebook, actor=request.user)
        elif op == "new_version":
            copy = services.CODEBOOKS.new_version(codebook, actor=request.user)
            response = HttpResponse(status=204)
            response["HX-Redirect"] = reverse("annotation-codebook", args=[request.study.pk, copy.pk])
            return response
        else:
            error = "Unknown action."
    except services.AnnotationError as exc:
        error = str(exc)
    codebook.refresh_from_db()
    context = _codebook_context(request, codebook, error)
    if not request.htmx:
        if error:
            messages.error(request, error)
        return redirect("annotation-codebook", request.study.pk, codebook.pk)
    return render(request, "annotation/_codebook_panel.html", context)


@study_role_required(VIEWER)
@require_safe
def codebook_export(request, study_id, codebook_id):
    codebook = _codebook(request, codebook_id)
    kind = request.GET.get("file_format", "qdc")
    if kind not in ("qdc", "csv", "json"):
        raise Http404("Unknown format.")
    return codebook_download(codebook, kind)


@study_role_required(Role.RESEARCHER)
@require_safe
def codings_export(request, study_id, codebook_id):
    codebook = _codebook(request, codebook_id)
    kind = request.GET.get("file_format", "csv")
    if kind not in ("csv", "jsonl"):
        raise Http404("Unknown format.")
    return codings_download(request.study, codebook, kind, request.GET.get("include_text") == "1")


# --- frequencies ---------------------------------------------------------------------------------------


@study_role_required(VIEWER)
@require_safe
def frequencies(request, study_id, codebook_id):
    codebook = _codebook(request, codebook_id)
    level = request.GET.get("level", "code")
    by = request.GET.get("by", "")
    if level not in selectors.LEVELS or by not in selectors.BREAKDOWNS:
        level, by = "code", ""
    table = selectors.frequency_table(codebook, level=level, by=by, user=request.user)
    if request.GET.get("file_format") == "csv":
        columns, rows = selectors.frequency_table_rows(table)
        return table_download(columns, rows, f"code-frequencies-{codebook.pk}-{level}{'-' + by if by else ''}.csv")
    peak = max([r["total"] for r in table["rows"]] + [1])
    for row in table["rows"]:
        row["bar"] = round(100 * row["total"] / peak, 1)
        row["cell_list"] = [row["cells"].get(c, 0) for c in table["columns"]]
    context = {
        "study": request.study,
        "codebook": codebook,
        "table": table,
        "level": level,
        "by": by,
        "breakdowns": [
            ("", "none"),
            ("model", "model"),
            ("item", "item"),
            ("dimension", "dimension"),
            ("gender_tag", "gender tag"),
            ("coder", "coder"),
        ],
    }
    template = "annotation/_frequency_table.html" if request.htmx else "annotation/frequencies.html"
    return render(request, template, context)


# --- assignments ---------------------------------------------------------------------------------------


def _plan_request(request, study, codebook):
    """The assignment form as keyword arguments of services.create_assignments / preview_assignments."""
    User = get_user_model()
    post = request.POST
    coders = list(User.objects.filter(pk__in=whole_numbers(post.getlist("coders"))))
    run_ids = whole_numbers(post.getlist("runs"))
    sample_size = post.get("sample_size", "").strip() or None
    runs = list(generation.study_runs(study, run_ids)) if run_ids or sample_size else None
    return {
        "outputs": services.outputs_of(study).filter(status="done"),
        "coders": coders,
        "k": post.get("k") or 1,
        "strategy": post.get("strategy", "random_balanced"),
        "seed": post.get("seed") or 0,
        "mode": post.get("mode", CodingMode.BLIND),
        "sample_size": sample_size,
        "runs": runs,
    }


def _form_values(post):
    """The submitted form, to fill it again under its preview (and to carry into the create button)."""
    ints = lambda name: whole_numbers(post.getlist(name))  # noqa: E731
    return {
        "coders": ints("coders"),
        "runs": ints("runs"),
        **{key: post.get(key, "") for key in ("k", "strategy", "seed", "mode", "sample_size")},
    }


def _preview_context(study, plan):
    """The plan as the page shows it: stories, the sample per stratum, new assignments per coder."""
    runs = generation.study_runs(study, plan["run_ids"]).order_by("created_at")
    return {
        **plan,
        "run_names": [r.name for r in runs],
        "n_stories": len(plan["stories"]),
        "n_assignments": len(plan["pairs"]),
        "per_coder": sorted(plan["per_coder"].items()),
        "coder_ids": [c.pk for c in plan["coders"]],
        "mode_label": CodingMode(plan["mode"]).label,
        "strategy_label": STRATEGIES.get(plan["strategy"], plan["strategy"]),
    }


def _assignment_post(request, study, codebook):
    """Reassign, remove or create; returns the preview to show instead of redirecting, or None."""
    User = get_user_model()
    op = request.POST.get("op")
    if op == "reassign":
        assignment = get_object_or_404(Assignment, pk=request.POST.get("assignment") or 0, codebook=codebook)
        coder = User.objects.filter(pk=request.POST.get("coder") or 0).first() or _raise("Choose a coder.")
        services.reassign_assignment(assignment, coder=coder, actor=request.user)
        messages.success(request, f"Story {assignment.output_id} now goes to {coder.username}.")
    elif op == "remove":
        assignment = get_object_or_404(Assignment, pk=request.POST.get("assignment") or 0, codebook=codebook)
        services.delete_assignment(assignment, actor=request.user)
        messages.success(request, "Assignment removed.")
    elif op == "preview":
        return _preview_context(
            study, services.preview_assignments(study, codebook, **_plan_request(request, study, codebook))
        )
    else:
        created = services.create_assignments(
            study, codebook, **_plan_request(request, study, codebook), actor=request.user
        )
        stories = len({a.output_id for a in created})
        messages.success(request, f"{len(created)} assignments created ({stories} stories).")
    return None


@study_role_required(Role.RESEARCHER)
def assignments(request, study_id, codebook_id):
    study = request.study
    codebook = _codebook(request, codebook_id)
    preview = None
    if request.method == "POST":
        try:
            preview = _assignment_post(request, study, codebook)
        except services.AnnotationError as exc:
            messages.error(request, str(exc))
        if preview is None:
            return redirect("annotation-assignments", study.pk, codebook.pk)
    coders = [m.user for m in Membership.objects.filter(study=study).select_related("user").order_by("user__username")]
    rows = selectors.progress_by_output(codebook)
    page = Paginator(rows, 100).get_page(request.GET.get("page"))
    assignment_ids = {}
    for a in Assignment.objects.filter(codebook=codebook, output_id__in=[r["output_id"] for r in page]).select_related(
        "coder"
    ):
        assignment_ids.setdefault(a.output_id, []).append(a)
    for row in page:
        row["assignments"] = assignment_ids.get(row["output_id"], [])
    return render(
        request,
        "annotation/assignments.html",
        {
            "study": study,
            "codebook": codebook,
            "coders": coders,
            "by_coder": selectors.progress_by_coder(codebook),
            "page": page,
            "strategies": STRATEGIES.items(),
            "modes": CodingMode.choices,
            "runs": generation.study_runs(study),
            "preview": preview,
            "form": _form_values(request.POST) if preview else {"k": 2, "seed": 0},
        },
    )


# --- workspace ----------------------------------------------------------------------------------------


def story_html(text, codings):
    """The story as spans, one per stretch between coding boundaries; every character escaped."""
    by_id = {c.pk: c for c in codings}
    pieces = []
    for start, end, keys in segments(text, [(c.pk, c.start, c.end) for c in codings if c.start is not None]):
        chunk = text[start:end]
        if not keys:
            pieces.append(format_html('<span class="seg" data-s="{}" data-e="{}">{}</span>', start, end, chunk))
            continue
        colors = [by_id[k].code.color for k in keys]
        if len(colors) == 1:
            style = f"background:{colors[0]}40"
        else:
            step = 100 / len(colors)
            bands = ", ".join(f"{c}55 {i * step:.1f}% {(i + 1) * step:.1f}%" for i, c in enumerate(colors))
            style = f"background:linear-gradient(to bottom, {bands})"
        title = "; ".join(by_id[k].code.name for k in keys)
        pieces.append(
            format_html(
                '<span class="seg hl{}" data-s="{}" data-e="{}" data-c="{}" style="{}" title="{}">{}</span>',
                " overlap" if len(keys) > 1 else "",
                start,
                end,
                " ".join(str(k) for k in keys),
                style,
                title,
                chunk,
            )
        )
    return format_html_join("", "{}", ((p,) for p in pieces))


def code_panel_html(panel, post_url):
    """The code panel's items: a button per codable code (its key, its memos), a heading per group, indented by depth.
    One string built in Python, byte for byte what the template loop made: that loop was 5 of the page's 7 ms of
    rendering (53 codes, a dozen lookups each)."""
    esc = conditional_escape
    url = esc(post_url)
    items = []
    for node in panel:
        chip = f'<span class="chip" style="background: {esc(node.color)}"></span>{esc(node.name)}'
        if node.codable:
            key = esc(node.shortcut) if node.shortcut else ""
            head = (
                f'<button type="button" class="code-btn" data-code="{node.pk}" '
                + (f'data-shortcut="{key}"' if key else "")
                + f'\n              hx-post="{url}" hx-vals=\'{{"op": "code", "code": "{node.pk}"}}\' '
                + 'hx-include="#sel-start, #sel-end"\n              hx-target="#ws" hx-swap="outerHTML" '
                + f'title="{esc(node.description)}">{chip}'
                + (f" <kbd>{key}</kbd>" if key else "")
                + "</button>\n            "
            )
        else:
            head = f'<span class="group-name">{chip}</span>'
        memos = "".join(f'<div class="memo small">📝 {esc(m.text)}</div>' for m in node.memo_list)
        items.append(
            f'<li class="{"" if node.codable else "group"}" style="margin-left: {node.depth}rem">\n            '
            f"{head}\n            {memos}</li>"
        )
    return mark_safe("".join(items))


def _options(pairs):
    """<option>s of (id, label) pairs, every label escaped: the bytes of format_html_join, in one join."""
    return mark_safe("".join(f'<option value="{v}">{escape(str(label))}</option>' for v, label in pairs))


def _code_paths(flat):
    """Each code's path ("Dimension/Group/Code"), from the tree's reading order: a parent's path is known before its
    children's (Code.path() walks the ancestors again for every code)."""
    paths = {}
    for code in flat:
        paths[code.pk] = f"{paths[code.parent_id]}/{code.name}" if code.parent_id in paths else code.path()
    return paths


def _workspace_context(request, codebook, output, error="", notice="", queue_nav=True, fragments=False):
    """What the workspace renders. The queue's progress and previous/next come in one query that does not grow with
    the queue (selectors.queue_navigation); `queue_nav=False` (an edit that leaves the queue as it was: a coding, a
    memo) skips even that and renders their region for htmx to keep from the page (hx-preserve). `fragments=True`:
    only what a saved coding changes (_ws_saved.html: the story, the codings, the variables, the messages)."""
    user = request.user
    study = request.study
    is_researcher = has_role(user, study, Role.RESEARCHER)
    if hasattr(request, "coding_assignment"):
        assignment = request.coding_assignment
    else:
        assignment = services.assignment_for(codebook, output, user)
    show_all = is_researcher and request.GET.get("all", request.POST.get("all")) == "1"
    consensus = assignment is not None and assignment.mode == CodingMode.CONSENSUS
    codings = list(services.visible_codings(codebook, output, user, show_all=show_all, assignment=assignment))
    if consensus or show_all:
        memo_qs = selectors.visible_memos(user, study)
    else:  # one's own memos only: all of them visible, so no blind-mode subquery to build
        memo_qs = Memo.objects.filter(study=study, author=user)
    on = Q(coding__in=[c.pk for c in codings])
    if not fragments:  # the fragments show the codings' memos alone
        on |= Q(code__codebook=codebook) | Q(output=output)
    memos = list(memo_qs.select_related("author").filter(on))
    coding_memos = _grouped(memos, "coding_id")
    for coding in codings:
        coding.memo_list = coding_memos.get(coding.pk, [])
    tree = selectors.code_tree(codebook)
    flat = list(selectors.flat_codes(tree))
    codable = [c for c in flat if c.codable]
    chosen = {c.code.parent_id: c.code_id for c in codings if c.start is None and c.coder_id == user.pk}
    # A story variable's values are shown once, as the variable's radios: not as code buttons, reassign options or
    # "Whole story" options, which the variable would always refuse ("takes one value per story").
    story_variables = [g for g in flat if g.variable_scope == VariableScope.STORY and not g.codable]
    variable_ids = {g.pk for g in story_variables}
    value_ids = {c.pk for c in flat if c.parent_id in variable_ids and c.codable}
    variables = []
    for g in story_variables:
        values = [c for c in flat if c.parent_id == g.pk and c.codable]
        for position, value in enumerate(values, start=1):
            value.key = value.shortcut or (str(position) if position <= 9 else "")
        variables.append({"group": g, "chosen": chosen.get(g.pk), "values": values})
    panel = [c for c in flat if c.pk not in variable_ids and c.pk not in value_ids]
    codable = [c for c in codable if c.pk not in value_ids]
    code_keys = {c.shortcut.lower() for c in codable if c.shortcut}
    post_url = reverse("annotation-workspace-edit", args=[study.pk, codebook.pk, output.pk]) + (
        "?all=1" if show_all else ""
    )
    context = {
        "variables": variables,
        "variable_jump_key": "v" if variables and "v" not in code_keys else "",
        "study": study,
        "codebook": codebook,
        "output": output,
        "assignment": assignment,
        "codings": codings,
        "span_codings": [c for c in codings if c.start is not None],
        # one's own variable values are the checked radios; other coders' (consensus, all) stay listed here
        "doc_codings": [
            c for c in codings if c.start is None and not (c.code_id in value_ids and c.coder_id == user.pk)
        ],
        "story": story_html(output.text, codings),
        "codable": codable,
        "code_options": _options((c.pk, c.name) for c in codable),
        "mode": "consensus" if consensus else ("all" if show_all else "blind"),
        "show_all": show_all,
        "is_researcher": is_researcher,
        "error": error,
        "notice": notice,
        "post_url": post_url,
    }
    if not fragments:
        context.update(
            _page_context(request, codebook, output, assignment, memos, tree, flat, panel, codable, queue_nav, post_url)
        )
    return context


def _grouped(memos, field):
    """{id: [memo]} of the memos attached to something by `field` (coding_id, code_id), in their order."""
    found = {}
    for memo in memos:
        key = getattr(memo, field)
        if key:
            found.setdefault(key, []).append(memo)
    return found


def _page_context(request, codebook, output, assignment, memos, tree, flat, panel, codable, queue_nav, post_url):
    """The rest of the whole workspace: the code panel and its memos, the forms' options, the queue, the subject."""
    user, study = request.user, request.study
    code_memos = _grouped(memos, "code_id")
    for code in flat:
        code.memo_list = code_memos.get(code.pk, [])
    nav = {"total": 0, "done": 0, "next": None, "previous": None}
    if queue_nav:
        nav = selectors.queue_navigation(codebook, user, assignment)
        if nav["next"] == output.pk:
            nav["next"] = None
    paths = _code_paths(flat)
    return {
        "tree": tree,
        "flat": panel,
        "code_panel": code_panel_html(panel, post_url),
        "story_memos": [m for m in memos if m.output_id == output.pk],
        "code_path_options": _options((c.pk, paths[c.pk]) for c in codable),
        "memo_code_options": _options((c.pk, paths[c.pk]) for c in flat if c.codable),
        "queue_nav": queue_nav,
        "queue_total": nav["total"],
        "queue_done": nav["done"],
        "queue_percent": round(100 * nav["done"] / nav["total"]) if nav["total"] else 0,
        "next_output_id": nav["next"],
        "previous_output_id": nav["previous"],
        "attribution": GenderAttribution.objects.filter(output=output, coder=user).first(),
        "genders": AttributedGender.choices,
        "gender_tags": GenderTag.choices,
        "groups": [c for c in panel if not c.codable],
        "can_add_codes": not codebook.locked,
        "self_url": reverse("annotation-workspace", args=[study.pk, codebook.pk, output.pk]),
    }


def _workspace_objects(request, codebook_id, output_id):
    codebook = _codebook(request, codebook_id)
    output = _found(generation.study_output(request.study, output_id), "No such story in this study.")
    request.coding_assignment = services.assignment_for(codebook, output, request.user)
    if request.coding_assignment is None and not has_role(request.user, request.study, Role.RESEARCHER):
        raise Http404("This story is not in your queue.")
    return codebook, output


@study_role_required(Role.CODER)
@require_safe
def workspace(request, study_id, codebook_id, output_id):
    codebook, output = _workspace_objects(request, codebook_id, output_id)
    context = _workspace_context(request, codebook, output)
    if request.htmx and request.htmx.target == "ws":
        return render(request, "annotation/_workspace.html", context)
    return render(request, "annotation/workspace.html", context)


@study_role_required(Role.CODER)
@require_safe
def queue_next(request, study_id, codebook_id):
    codebook = _codebook(request, codebook_id)
    nxt = services.next_assignment(codebook, request.user)
    if nxt is None:
        messages.info(request, "Your queue for this codebook is done.")
        return redirect("coding", request.study.pk)
    return redirect("annotation-workspace", request.study.pk, codebook.pk, nxt.output_id)


def _coding_of(request, codebook, pk):
    coding = Coding.objects.filter(pk=pk or 0, codebook=codebook).select_related("codebook__study").first()
    if coding is None:
        raise services.AnnotationError("That coding no longer exists.")
    return coding


@study_role_required(Role.CODER)
@require_POST
def workspace_edit(request, study_id, codebook_id, output_id):
    """Every workspace edit (htmx POST); answers with the re-rendered workspace, saved at once."""
    codebook, output = _workspace_objects(request, codebook_id, output_id)
    study, user, post = request.study, request.user, request.POST
    op = post.get("op")
    error = notice = ""
    try:
        if op == "code":
            code = _code_or_none(codebook, post.get("code")) or _raise("Choose a code.")
            if post.get("start", "") == "" and post.get("whole") != "1":
                raise services.AnnotationError(
                    "Select some text first (or use “Whole story” for a document-level code)."
                )
            start, end = (None, None) if post.get("whole") == "1" else (post.get("start"), post.get("end"))
            services.create_coding(
                study=study,
                codebook=codebook,
                output=output,
                code=code,
                coder=user,
                start=start,
                end=end,
                assignment=request.coding_assignment,
            )
        elif op == "value":
            variable = _code_or_none(codebook, post.get("variable")) or _raise("Choose a variable.")
            value = _code_or_none(codebook, post.get("code")) or _raise("Choose a value.")
            if value.parent_id != variable.pk:
                raise services.AnnotationError(f"“{value.name}” is not a value of “{variable.name}”.")
            services.create_coding(
                study=study,
                codebook=codebook,
                output=output,
                code=value,
                coder=user,
                assignment=request.coding_assignment,
            )
        elif op == "new_code":
            if post.get("start", "") == "":
                raise services.AnnotationError("Select the text the new code stands for first.")
            services.create_code_from_selection(
                study=study,
                codebook=codebook,
                output=output,
                coder=user,
                start=post.get("start"),
                end=post.get("end"),
                name=post.get("name"),
                parent=_code_or_none(codebook, post.get("parent")),
                gender_tag=post.get("gender_tag", ""),
                color=post.get("color") or "#f08c00",
            )
        elif op == "delete":
            services.delete_coding(_coding_of(request, codebook, post.get("coding")), user=user)
        elif op == "reassign":
            coding = _coding_of(request, codebook, post.get("coding"))
            services.reassign_coding(
                coding, _code_or_none(codebook, post.get("code")) or _raise("Choose a code."), user=user
            )
        elif op == "memo":
            target = post.get("target")
            kwargs = {}
            if target == "coding":
                kwargs["coding"] = _coding_of(request, codebook, post.get("target_id"))
            elif target == "code":
                kwargs["code"] = _code_or_none(codebook, post.get("target_id")) or _raise("Choose a code.")
            else:
                kwargs["output"] = output
            services.add_memo(study, author=user, text=post.get("text"), **kwargs)
        elif op == "delete_memo":
            memo = Memo.objects.filter(pk=post.get("memo") or 0, study=study).first() or _raise(
                "That memo no longer exists."
            )
            services.delete_memo(memo, user=user)
        elif op == "gender":
            services.set_gender_attribution(
                output, coder=user, gender=post.get("gender", ""), character=post.get("character", "")
            )
        elif op in ("done", "undone"):
            assignment = request.coding_assignment or _raise("This story is not in your queue.")
            services.set_assignment_status(assignment, user=user, done=op == "done")
            if op == "done" and post.get("next") == "1":
                nxt = services.next_assignment(codebook, user, after=assignment)
                response = HttpResponse(status=204)
                response["HX-Redirect"] = (
                    reverse("annotation-workspace", args=[study.pk, codebook.pk, nxt.output_id])
                    if nxt
                    else reverse("coding", args=[study.pk])
                )
                return response
        else:
            error = "Unknown action."
    except services.AnnotationError as exc:
        error = str(exc)
    return _edit_answer(request, codebook, output, op, error, notice)


# The edits that answer with the fragments they change (a coding saved, reassigned or removed; a variable's value).
FRAGMENT_OPS = frozenset({"code", "value", "reassign", "delete"})


def _edit_answer(request, codebook, output, op, error, notice):
    """The answer to a workspace edit. A saved coding answers with only what it changes (the story's highlights, the
    codings, the variables, the messages), each swapped out of band while the answer itself swaps nothing: the code
    panel, the forms and the queue are neither rendered nor sent. Anything else, and any error, re-renders the
    workspace; so does a coding change whose "Whole story" list might appear or go (a codebook with no code to
    apply there shows that list only while it holds a coding)."""
    if request.htmx and not error and op in FRAGMENT_OPS:
        context = _workspace_context(request, codebook, output, notice=notice, queue_nav=False, fragments=True)
        if op == "value" or context["codable"]:
            # a value is never listed under "Whole story" (it is the variable's checked radio)
            context.update(oob=True, doc_fragment=op != "value")
            return reswap(render(request, "annotation/_ws_saved.html", context), "none")
    # only Done/Reopen change the queue; after any other edit the page keeps its progress and previous/next links
    context = _workspace_context(request, codebook, output, error, notice, queue_nav=op in ("done", "undone"))
    return render(request, "annotation/_workspace.html", context)


# --- AI-assisted code discovery -------------------------------------------------------------------------


def _discovery_context(study, codebook, d):
    """What a discovery's card needs: its requests with their calls, counts, and its batches."""

    requests = list(d.requests.select_related("endpoint", "provider_call").order_by("number"))
    d.request_rows = requests
    d.counts = selectors.discovery_counts(requests)
    d.batch_info = batches.summary(services.DISCOVERY_JOB.name, d.pk)
    d.live = jobs.is_live(d)
    return d


def _discovery_card(request, study, codebook, d, status=200):
    return render(
        request,
        "annotation/_discovery.html",
        {
            "study": study,
            "codebook": codebook,
            "d": _discovery_context(study, codebook, d),
            "groups": [c for c in selectors.flat_codes(selectors.code_tree(codebook)) if not c.codable],
            "gender_tags": GenderTag.choices,
            "can_run": True,
        },
        status=status,
    )


@study_role_required(Role.RESEARCHER)
def discover(request, study_id, codebook_id):

    study = request.study
    codebook = _codebook(request, codebook_id)
    if request.method == "GET" and request.GET.get("discovery"):
        discovery = get_object_or_404(CodeDiscovery, pk=request.GET["discovery"], codebook=codebook)
        return _discovery_card(request, study, codebook, discovery)
    if request.method == "POST":
        op = request.POST.get("op")
        try:
            if op in ("start", "estimate"):
                settings = _discovery_settings(request, study)
                if op == "estimate":
                    estimate = services.estimate_discovery(study, codebook, **settings)
                    return _discover_page(request, study, codebook, estimate=estimate, form=request.POST)
                discovery = services.start_discovery(study, codebook, **settings, actor=request.user)
                messages.success(
                    request,
                    "Asked the model for code suggestions."
                    if discovery.execution_mode == ExecutionMode.LIVE
                    else "Submitting the requests as batches; the provider answers within 24 hours.",
                )
                return redirect("annotation-discovery", study.pk, codebook.pk, discovery.pk)
            elif op in ("accept", "reject"):
                suggestion = get_object_or_404(
                    CodeSuggestion, pk=request.POST.get("suggestion") or 0, discovery__codebook=codebook
                )
                services.decide_suggestion(
                    suggestion,
                    accept=op == "accept",
                    actor=request.user,
                    name=request.POST.get("name"),
                    description=request.POST.get("description"),
                    gender_tag=request.POST.get("gender_tag"),
                    parent=_code_or_none(codebook, request.POST.get("parent")),
                )
                if request.htmx:
                    return _discovery_card(request, study, codebook, suggestion.discovery)
        except services.AnnotationError as exc:
            if request.htmx:
                return HttpResponse(format_html('<p class="error" role="alert">{}</p>', str(exc)))
            messages.error(request, str(exc))
        return redirect("annotation-discover", study.pk, codebook.pk)
    return _discover_page(request, study, codebook)


def _discovery_settings(request, study):
    """A discovery's settings from the form (start and estimate read the same ones)."""

    wanted = [v for v in request.POST.getlist("endpoints") + request.POST.getlist("endpoint") if v]
    endpoints = generation.endpoints_by_id(study, wanted)
    if len(endpoints) != len(set(wanted)):
        raise services.AnnotationError("Choose a model endpoint of this study.")
    return {
        "endpoints": endpoints,
        "item": generation.study_item(study, request.POST.get("item")),
        "sample_size": request.POST.get("sample_size") or 5,
        "seed": request.POST.get("seed") or 0,
        "story_groups": request.POST.get("story_groups") or 1,
        "execution_mode": request.POST.get("execution_mode") or ExecutionMode.LIVE,
    }


def _discover_page(request, study, codebook, estimate=None, form=None):
    """The discovery page; after "Estimate cost" it shows the estimate and keeps the form's values."""

    form = form or {}
    endpoints = list(generation.study_endpoints(study, callable_only=True))
    chosen = {str(v) for v in form.getlist("endpoints")} if form else set()
    if not chosen and endpoints:
        chosen = {str(endpoints[0].pk)}
    discoveries = list(
        CodeDiscovery.objects.filter(codebook=codebook)
        .select_related("item__toolkit")
        .prefetch_related("suggestions__code", "endpoints")[:20]
    )
    return render(
        request,
        "annotation/discover.html",
        {
            "study": study,
            "codebook": codebook,
            "endpoints": endpoints,
            "chosen_endpoints": chosen,
            "batch_endpoints": [e.pk for e in endpoints if e.batch_enabled and e.provider in BATCH_PROVIDERS],
            "modes": ExecutionMode.choices,
            "items": generation.study_items(study).order_by(
                "toolkit__name", "-toolkit__version", "toolkit_id", "number"
            ),  # grouped by version, newest first
            "discoveries": [_discovery_context(study, codebook, d) for d in discoveries],
            "groups": [c for c in selectors.flat_codes(selectors.code_tree(codebook)) if not c.codable],
            "gender_tags": GenderTag.choices,
            "can_run": True,
            "estimate": estimate,
            "form": {
                "item": str(form.get("item", "")),
                "sample_size": form.get("sample_size") or 5,
                "story_groups": form.get("story_groups") or 1,
                "seed": form.get("seed") or 0,
                "execution_mode": form.get("execution_mode") or ExecutionMode.LIVE,
            },
        },
    )


@study_role_required(Role.RESEARCHER)
@require_safe
def discovery_detail(request, study_id, codebook_id, discovery_id):
    """One discovery's job page: progress, requests with their calls and cost, batches, actions, suggestions."""

    study = request.study
    codebook = _codebook(request, codebook_id)
    discovery = get_object_or_404(
        CodeDiscovery.objects.select_related("item__toolkit").prefetch_related("endpoints"),
        pk=discovery_id,
        codebook=codebook,
    )
    return render(
        request,
        "annotation/discovery.html",
        {
            "study": study,
            "codebook": codebook,
            "d": _discovery_context(study, codebook, discovery),
            "groups": [c for c in selectors.flat_codes(selectors.code_tree(codebook)) if not c.codable],
            "gender_tags": GenderTag.choices,
            "can_run": True,
        },
    )


DISCOVERY_ACTIONS = {
    "cancel": (services.cancel_discovery, "Cancel requested; open batches are cancelled at the provider."),
    "resume": (services.resume_discovery, "Discovery resumed: only its pending requests are asked."),
    "retry": (services.retry_discovery, "The failed requests are being asked again."),
}


@study_role_required(Role.RESEARCHER)
@require_POST
def discovery_action(request, study_id, codebook_id, discovery_id, what):

    codebook = _codebook(request, codebook_id)
    discovery = get_object_or_404(CodeDiscovery, pk=discovery_id, codebook=codebook)
    if what not in DISCOVERY_ACTIONS:
        messages.error(request, "Unknown action.")
    else:
        action, done = DISCOVERY_ACTIONS[what]
        try:
            action(discovery, actor=request.user)
            messages.success(request, done)
        except services.AnnotationError as exc:
            messages.error(request, str(exc))
    return redirect("annotation-discovery", request.study.pk, codebook.pk, discovery.pk)


@study_role_required(Role.RESEARCHER)
def split_code_page(request, study_id, codebook_id, code_id):
    """List a code's codings; the ticked ones move to a new (or another) code."""
    codebook = _codebook(request, codebook_id)
    code = get_object_or_404(Code, pk=code_id, codebook=codebook, active=True)
    if request.method == "POST":
        try:
            target = _code_or_none(codebook, request.POST.get("target"))
            new_code, _ = services.split_code(
                code,
                whole_numbers(request.POST.getlist("codings")),
                target=target,
                new_name=request.POST.get("new_name"),
                actor=request.user,
            )
            messages.success(request, f"Moved the chosen codings to “{new_code.name}”. Undo it from the history.")
            return redirect("annotation-codebook", request.study.pk, codebook.pk)
        except services.AnnotationError as exc:
            messages.error(request, str(exc))
    codings = Paginator(code.codings.select_related("coder", "output").order_by("output_id", "start", "id"), 200)
    page = codings.get_page(request.GET.get("page"))
    others = [c for c in selectors.flat_codes(selectors.code_tree(codebook)) if c.codable and c.pk != code.pk]
    return render(
        request,
        "annotation/split.html",
        {"study": request.study, "codebook": codebook, "code": code, "page": page, "others": others},
    )
