from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import JsonResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST, require_safe

from . import invitations, my_work, services, trash
from .dashboard import blind_reader, study_activity, study_counts
from .forms import MemberForm, StudyForm
from .health import health_report
from .models import Membership, Role, Study
from .permissions import VIEWER, has_role, studies_for, study_role_required


@login_required
def study_list(request):
    studies = studies_for(request.user).prefetch_related("memberships")
    can_create = services.may_create_study(request.user)
    form = StudyForm(request.POST or None) if can_create else None
    if request.method == "POST" and not can_create:
        raise PermissionDenied("On this installation only site staff create studies; ask them for an invitation.")
    if request.method == "POST" and form.is_valid():
        study = services.create_study(created_by=request.user, **form.cleaned_data)
        messages.success(request, f"Study “{study.name}” created. You are its admin.")
        return redirect("study-dashboard", study.pk)
    has_trash = trash.trashed_for(request.user).exists()
    return render(
        request,
        "stereoscope/study_list.html",
        {"studies": studies, "form": form, "can_create": can_create, "has_trash": has_trash},
    )


@login_required
@require_safe
def my_work_page(request):
    """My work: the signed-in person's queues across the studies they are a member of, with progress."""
    studies = Study.objects.filter(memberships__user=request.user).distinct()
    queues = my_work.queues_for(request.user, studies)
    return render(
        request,
        "stereoscope/my_work.html",
        {"queues": queues, "open": [q for q in queues if not q["finished"]], "studies": studies.order_by("name")},
    )


@study_role_required(VIEWER)
@require_safe
def study_dashboard(request, study_id):
    study = request.study
    only_user = request.user if blind_reader(request.user, study) else None  # blind mode: one's own work only
    if only_user is not None:  # a coder: their queue and progress, not the study's row counts
        return render(
            request,
            "stereoscope/dashboard.html",
            {
                "study": study,
                "queues": my_work.queues_for(request.user, Study.objects.filter(pk=study.pk)),
                "coder_view": True,
                "activity": study_activity(study, only_user=only_user),
                "can_manage": False,
            },
        )
    return render(
        request,
        "stereoscope/dashboard.html",
        {
            "study": study,
            "counts": study_counts(study, only_user=only_user),
            "activity": study_activity(study, only_user=only_user),
            "can_manage": has_role(request.user, study, Role.ADMIN),
            "retention_days": trash.retention_days(),
        },
    )


@study_role_required(Role.ADMIN)
@require_POST
def study_trash(request, study_id):
    """Move the study to the trash (refused, with why, while a job of it is queued or running)."""
    try:
        study = trash.trash_study(request.study, actor=request.user)
    except trash.TrashError as exc:
        messages.error(request, str(exc))
        return redirect("study-dashboard", study_id)
    messages.success(request, f"“{study.name}” is in the trash; its admins can restore it from there.")
    return redirect("study-list")


@login_required
@require_safe
def trash_list(request):
    rows = [{"study": s, "purge_after": trash.purge_after(s)} for s in trash.trashed_for(request.user)]
    return render(request, "stereoscope/trash.html", {"rows": rows, "retention_days": trash.retention_days()})


@login_required
@require_POST
def trash_restore(request, study_id):
    study = get_object_or_404(trash.trashed_for(request.user), pk=study_id)
    try:
        trash.restore_study(study, actor=request.user)
    except trash.TrashError as exc:
        messages.error(request, str(exc))
        return redirect("trash")
    messages.success(request, f"“{study.name}” is restored with everything in it.")
    return redirect("study-dashboard", study.pk)


@login_required
@require_POST
def trash_purge(request, study_id):
    """Site staff purge a trashed study for good before its retention period ends."""
    study = get_object_or_404(trash.trashed_for(request.user), pk=study_id)
    if not request.user.is_staff:
        raise PermissionDenied("Only site staff purge the trash.")
    try:
        trash.purge_study(study, actor=request.user)
    except trash.TrashError as exc:
        messages.error(request, str(exc))
        return redirect("trash")
    messages.success(request, f"“{study.name}” is purged for good.")
    return redirect("trash")


@study_role_required(Role.ADMIN)
def study_members(request, study_id):
    study = request.study
    form = MemberForm(request.POST or None)
    invitation = None
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        try:
            membership, path = invitations.add_or_invite_member(study=study, actor=request.user, **data)
        except services.MembershipError as exc:
            form.add_error(None, str(exc))
        else:
            if path is None:  # one answer whether or not the account exists: no probing for usernames
                messages.success(request, invitations.added_message(data["username"].strip(), data["role"]))
                return redirect("study-members", study.pk)
            # The link is shown on this response only; it is not stored anywhere.
            url = request.build_absolute_uri(path)
            invitation = {
                "user": membership.user,
                "url": url,
                "mailed": invitations.mail_invitation(membership.user, study, url),
            }
            form = MemberForm()
    members = study.memberships.select_related("user")
    return render(
        request,
        "stereoscope/members.html",
        {"study": study, "members": members, "form": form, "invitation": invitation},
        status=400 if form.errors else 200,
    )


@study_role_required(Role.ADMIN)
@require_POST
def study_member_remove(request, study_id, membership_id):
    membership = get_object_or_404(Membership, pk=membership_id, study=request.study)
    try:
        services.remove_member(membership=membership, actor=request.user)
        messages.success(request, f"Removed {membership.user.username}.")
    except services.MembershipError as exc:
        messages.error(request, str(exc))
    return redirect("study-members", request.study.pk)


@require_safe
def healthz(request):
    report = health_report()
    status = 200 if report["ok"] else 503
    wants_json = request.GET.get("format") == "json" or "application/json" in request.headers.get("Accept", "")
    if wants_json:
        return JsonResponse(report, status=status)
    return render(request, "stereoscope/healthz.html", {"report": report}, status=status)
