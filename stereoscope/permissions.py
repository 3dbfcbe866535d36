"""The one permission layer. Views, API endpoints and exports all ask it.

Levels: viewer < coder < researcher < admin. Coders annotate; researchers configure and launch;
study admins manage members and export. Site staff act as admin everywhere. Signed-in users may read
the built-in library study. Anyone else gets 404, so a study's existence does not leak.
"""
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import Http404
from django.shortcuts import get_object_or_404
from rest_framework import permissions as drf_permissions

from .models import Membership, Role, Study

VIEWER = "viewer"
LEVELS = {VIEWER: 0, Role.CODER: 1, Role.RESEARCHER: 2, Role.ADMIN: 3}


def role_for(user, study):
    """The user's effective role in a study, or None."""
    if not user or not user.is_authenticated:
        return None
    if user.is_staff or user.is_superuser:
        return Role.ADMIN
    cache = getattr(user, "_study_role_cache", None)
    if cache is None:
        cache = user._study_role_cache = {}
    if study.pk not in cache:
        role = Membership.objects.filter(study=study, user=user).values_list("role", flat=True).first()
        if role is None and study.is_library:
            role = VIEWER
        cache[study.pk] = role
    return cache[study.pk]


def has_role(user, study, minimum):
    role = role_for(user, study)
    return role is not None and LEVELS[role] >= LEVELS[minimum]


def check_role(user, study, minimum):
    """Raise 404 for outsiders and 403 for members below the minimum role."""
    role = role_for(user, study)
    if role is None:
        raise Http404("No such study.")
    if LEVELS[role] < LEVELS[minimum]:
        raise PermissionDenied(f"This needs the {minimum} role in this study; you are {role}.")
    return role


LIBRARY_READ_ONLY = ("The built-in library is read-only: nothing but load_builtin writes it. "
                     "Copy what you need into your own study and change it there.")
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def check_library_write(request, study, read_actions=()):
    """Refuse every write through a page or the API to the built-in library study, even by site staff. A view may
    name POST actions that only read (`read_actions`)."""
    if study.is_library and request.method not in SAFE_METHODS:
        action = getattr(request, "library_action", None)
        if action is None or action not in read_actions:
            raise PermissionDenied(LIBRARY_READ_ONLY)


def studies_for(user):
    """The studies a user may see."""
    if not user.is_authenticated:
        return Study.objects.none()
    if user.is_staff or user.is_superuser:
        return Study.objects.all()
    from django.db.models import Q

    return Study.objects.filter(Q(memberships__user=user) | Q(is_library=True)).distinct()


def study_role_required(minimum=VIEWER, study_kwarg="study_id"):
    """View decorator: loads the study named in the URL, checks the role, sets request.study/study_role."""

    def decorator(view):
        @login_required
        @wraps(view)
        def wrapper(request, *args, **kwargs):
            study = get_object_or_404(Study, pk=kwargs[study_kwarg])
            if role_for(request.user, study) is not None:
                request.study = study  # members refused for their role still get the study's layout on the 403 page
            request.study_role = check_role(request.user, study, minimum)
            check_library_write(request, study)
            request.study = study
            return view(request, *args, **kwargs)

        wrapper.study_minimum_role = minimum  # read by the navigation to hide links a role cannot use
        return wrapper

    return decorator


class StudyRolePermission(drf_permissions.BasePermission):
    """DRF permission for views with `get_study()`: reads need `read_role`, writes `write_role`.

    A view may set `action_roles = {"action": role}` for finer control.
    """

    def has_permission(self, request, view):
        if not request.user or not request.user.is_authenticated:
            return False
        study = view.get_study()
        if study is None:
            return True
        minimum = self.required_role(request, view)
        view.study_role = check_role(request.user, study, minimum)
        request.library_action = getattr(view, "action", None)
        check_library_write(request, study, getattr(view, "library_read_actions", ()))
        return True

    @staticmethod
    def required_role(request, view):
        action = getattr(view, "action", None)
        action_roles = getattr(view, "action_roles", {}) or {}
        if action in action_roles:
            return action_roles[action]
        if request.method in drf_permissions.SAFE_METHODS:
            return getattr(view, "read_role", VIEWER)
        return getattr(view, "write_role", Role.RESEARCHER)
