from django.urls import path

from . import views

urlpatterns = [
    path("judging/", views.overview, name="judging"),
    path("judging/templates/new/", views.template_new, name="judging-template-new"),
    path("judging/templates/<int:template_id>/", views.template_detail, name="judging-template"),
    path("judging/rounds/new/", views.round_new, name="judging-round-new"),
    path("judging/rounds/<int:round_id>/", views.round_detail, name="judging-round"),
    path("judging/rounds/<int:round_id>/progress/", views.round_progress, name="judging-round-progress"),
    path("judging/rounds/<int:round_id>/do/<str:what>/", views.round_action, name="judging-round-action"),
    path("judging/rounds/<int:round_id>/verdicts/<int:verdict_id>/", views.verdict_detail, name="judging-verdict"),
    path("judging/rounds/<int:round_id>/report/", views.round_report, name="judging-round-report"),
    path(
        "judging/rounds/<int:round_id>/verdicts.<str:fmt>",
        views.round_verdicts_export,
        name="judging-round-verdicts-export",
    ),
    path("judging/rounds/<int:round_id>/verification/", views.round_verification, name="judging-round-verification"),
    path("judging/weights/", views.weights, name="judging-weights"),
    path("judging/verify/", views.verify, name="judging-verify"),
]
