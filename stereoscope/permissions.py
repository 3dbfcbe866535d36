"""The one permission layer. Views, API endpoints and exports all ask it.

Levels: viewer < coder < researcher < admin. Coders annotate; researchers configure and launch;
study admins manage members and export. Site staff act as admin everywhere. Signed-in users may read
the built-in library study. Anyone else gets 404, so a study's existence does not leak.
"""

from __future__ import annotations

from collections.abc import Callable, Collection
from functools import wraps
from typing import Any, cast

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponseBase
from django.shortcuts import get_object_or_404
from rest_framework import permissions as drf_permissions
from rest_framework.request import Request
from rest_framework.views import APIView

from .models import Membership, Role, Study
from .user_types import SiteUser

VIEWER = "viewer"
# a Django view function (the views take the URL's keyword arguments)
View = Callable[..., HttpResponseBase]
LEVELS = {VIEWER: 0, Role.CODER: 1, Role.RESEARCHER: 2, Role.ADMIN: 3}


class StudyRequest(HttpRequest):
    """For the type checker: the request a `study_role_required` view gets (the decorator sets these)."""

    study: Study
    study_role: str


def role_for(user: SiteUser | None, study: Study) -> str | None:
    """The user's effective role in a study, or None."""
    if not user or not user.is_authenticated:
        return None
    if user.is_staff or user.is_superuser:
        return Role.ADMIN
    cache: dict[int, str | None] | None = getattr(user, "_study_role_cache", None)
    if cache is None:
        cache = user._study_role_cache = {}  # type: ignore[attr-defined]  # a per-request cache kept on the user
    if study.pk not in cache:
        role = Membership.objects.filter(study=study, user=user).values_list("role", flat=True).first()
        if role is None and study.is_library:
            role = VIEWER
        cache[study.pk] = role
    return cache[study.pk]


def has_role(user: SiteUser | None, study: Study, minimum: str) -> bool:
    role = role_for(user, study)
    return role is not None and LEVELS[role] >= LEVELS[minimum]


def check_role(user: SiteUser | None, study: Study, minimum: str) -> str:
    """Raise 404 for outsiders and 403 for members below the minimum role."""
    role = role_for(user, study)
    if role is None:
        raise Http404("No such study.")
    if LEVELS[role] < LEVELS[minimum]:
        raise PermissionDenied(f"This needs the {minimum} role in this study; you are {role}.")
    return role


LIBRARY_READ_ONLY = (
    "The built-in library is read-only: nothing but load_builtin writes it. "
    "Copy what you need into your own study and change it there."
)
SAFE_METHODS = ("GET", "HEAD", "OPTIONS")


def check_library_write(request: HttpRequest | Request, study: Study, read_actions: Collection[str] = ()) -> None:
    """Refuse every write through a page or the API to the built-in library study, even by site staff. A view may
    name POST actions that only read (`read_actions`)."""
    if study.is_library and request.method not in SAFE_METHODS:
        action = getattr(request, "library_action", None)
        if action is None or action not in read_actions:
            raise PermissionDenied(LIBRARY_READ_ONLY)


def studies_for(user: SiteUser) -> QuerySet[Study]:
    """The studies a user may see."""
    if not user.is_authenticated:
        return Study.objects.none()
    if user.is_staff or user.is_superuser:
        return Study.objects.all()
    from django.db.models import Q

    return Study.objects.filter(Q(memberships__user=user) | Q(is_library=True)).distinct()


def study_role_required(minimum: str = VIEWER, study_kwarg: str = "study_id") -> Callable[[View], View]:
    """View decorator: loads the study named in the URL, checks the role, sets request.study/study_role."""

    def decorator(view: View) -> View:
        @login_required
        @wraps(view)
        def wrapper(request: StudyRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
            study = get_object_or_404(Study, pk=kwargs[study_kwarg])
            if role_for(request.user, study) is not None:
                request.study = study  # members refused for their role still get the study's layout on the 403 page
            request.study_role = check_role(request.user, study, minimum)
            check_library_write(request, study)
            request.study = study
            return view(request, *args, **kwargs)

        # read by the navigation to hide links a role cannot use (a function attribute: no type says it)
        wrapper.study_minimum_role = minimum  # type: ignore[attr-defined]
        return wrapper

    return decorator


class StudyRolePermission(drf_permissions.BasePermission):
    """DRF permission for views with `get_study()`: reads need `read_role`, writes `write_role`.

    A view may set `action_roles = {"action": role}` for finer control.
    """

    def has_permission(self, request: Request, view: APIView) -> bool:
        if not request.user or not request.user.is_authenticated:
            return False
        # the views this permission guards have get_study() and take study_role (see the class docstring);
        # the request carries library_action on to check_library_write
        study: Study | None = view.get_study()  # type: ignore[attr-defined]
        if study is None:
            return True
        minimum = self.required_role(request, view)
        view.study_role = check_role(request.user, study, minimum)  # type: ignore[attr-defined]
        request.library_action = getattr(view, "action", None)  # type: ignore[attr-defined]
        check_library_write(request, study, getattr(view, "library_read_actions", ()))
        return True

    @staticmethod
    def required_role(request: Request, view: APIView) -> str:
        action = getattr(view, "action", None)
        action_roles: dict[str, str] = getattr(view, "action_roles", {}) or {}
        if action in action_roles:
            return action_roles[action]
        if request.method in drf_permissions.SAFE_METHODS:
            return cast(str, getattr(view, "read_role", VIEWER))
        return cast(str, getattr(view, "write_role", Role.RESEARCHER))
