"""URLs. Every app contributes study-scoped pages (`<app>/urls.py`, mounted under /studies/<id>/) and
study-scoped API routes (`api_routes` of each `<app>.api`, mounted under /api/studies/<study_pk>/)."""

import importlib

from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.contrib.auth.decorators import login_required
from django.urls import include, path
from drf_spectacular.views import SpectacularAPIView, SpectacularSwaggerView
from rest_framework.routers import DefaultRouter, SimpleRouter

from . import account_views, api, views
from .app_names import PROJECT_APPS
from .schema_api import schema_urls
from .token_view import obtain_auth_token

installed = [app for app in PROJECT_APPS if app in settings.INSTALLED_APPS]


class WholeNumberIds:
    """Detail routes take ASCII digits only, unless a viewset names its own `lookup_value_regex`: DRF's default
    `[^/.]+` let Django read the id with int(), which takes any Unicode digit (/exports/١/ was export 1)."""

    def get_lookup_regex(self, viewset, lookup_prefix=""):
        lookup_url_kwarg = getattr(viewset, "lookup_url_kwarg", None) or getattr(viewset, "lookup_field", "pk")
        value = getattr(viewset, "lookup_value_regex", "[0-9]+")
        return f"(?P<{lookup_prefix}{lookup_url_kwarg}>{value})"


class Router(WholeNumberIds, DefaultRouter):
    pass


class StudyRouter(WholeNumberIds, SimpleRouter):
    pass


router = Router()
router.register("studies", api.StudyViewSet, basename="api-study")
router.register("trash", api.TrashViewSet, basename="api-trash")

study_router = StudyRouter()
study_router.register("members", api.MembershipViewSet, basename="api-study-member")
extra_api_urls = []
for app in installed:
    module = importlib.import_module(f"{app}.api")
    for prefix, viewset, basename in getattr(module, "api_routes", []):
        study_router.register(prefix, viewset, basename=basename)
    extra_api_urls += getattr(module, "api_urls", [])

study_pages = [path("", include(f"{app}.urls")) for app in installed]
# Site-level pages an app may offer (e.g. provider connections for site staff): `site_urlpatterns` in its urls.
site_pages = [p for app in installed for p in getattr(importlib.import_module(f"{app}.urls"), "site_urlpatterns", [])]

urlpatterns = [
    path("", views.study_list, name="home"),
    path("accounts/login/", account_views.LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("accounts/password/", login_required(account_views.PasswordChangeView.as_view()), name="password-change"),
    path(
        "accounts/invitation/<uidb64>/<token>/", account_views.InvitationAcceptView.as_view(), name="invitation-accept"
    ),
    path("healthz", views.healthz, name="healthz"),
    path("admin/", admin.site.urls),
    path("studies/", views.study_list, name="study-list"),
    path("work/", views.my_work_page, name="my-work"),
    path("studies/<int:study_id>/", views.study_dashboard, name="study-dashboard"),
    path("studies/<int:study_id>/members/", views.study_members, name="study-members"),
    path("studies/<int:study_id>/trash/", views.study_trash, name="study-trash"),
    path("trash/", views.trash_list, name="trash"),
    path("trash/<int:study_id>/restore/", views.trash_restore, name="trash-restore"),
    path("trash/<int:study_id>/purge/", views.trash_purge, name="trash-purge"),
    path(
        "studies/<int:study_id>/members/<int:membership_id>/remove/",
        views.study_member_remove,
        name="study-member-remove",
    ),
    path("studies/<int:study_id>/", include(study_pages)),
    path("settings/", include(site_pages)),
    path("api/", include(router.urls)),
    path("api/studies/<int:study_pk>/", include(study_router.urls)),
    path("api/", include(extra_api_urls)),
    path("api/", include(schema_urls())),  # /api/<format>-schema/ for every input format (after the apps' imports)
    path("api/health/", api.health, name="api-health"),
    path("api/token/", obtain_auth_token, name="api-token"),
    path("api/schema/", SpectacularAPIView.as_view(), name="api-schema"),
    path("api/docs/", SpectacularSwaggerView.as_view(url_name="api-schema"), name="api-docs"),
]

handler403 = "stereoscope.error_views.permission_denied"
handler404 = "stereoscope.error_views.page_not_found"
