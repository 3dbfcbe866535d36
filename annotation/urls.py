from django.urls import path

from . import views, views_refi

urlpatterns = [
    path("coding/", views.coding_home, name="coding"),
    path("coding/codebooks/new/", views.codebook_create, name="annotation-codebook-create"),
    path("coding/codebooks/<int:codebook_id>/", views.codebook_detail, name="annotation-codebook"),
    path("coding/codebooks/<int:codebook_id>/edit/", views.codebook_edit, name="annotation-codebook-edit"),
    path("coding/codebooks/<int:codebook_id>/export/", views.codebook_export, name="annotation-codebook-export"),
    path("coding/codebooks/<int:codebook_id>/codings.export/", views.codings_export, name="annotation-codings-export"),
    path("coding/codebooks/<int:codebook_id>/frequencies/", views.frequencies, name="annotation-frequencies"),
    path("coding/codebooks/<int:codebook_id>/assignments/", views.assignments, name="annotation-assignments"),
    path("coding/codebooks/<int:codebook_id>/next/", views.queue_next, name="annotation-next"),
    path("coding/codebooks/<int:codebook_id>/discover/", views.discover, name="annotation-discover"),
    path(
        "coding/codebooks/<int:codebook_id>/discover/<int:discovery_id>/",
        views.discovery_detail,
        name="annotation-discovery",
    ),
    path(
        "coding/codebooks/<int:codebook_id>/discover/<int:discovery_id>/<slug:what>/",
        views.discovery_action,
        name="annotation-discovery-action",
    ),
    path(
        "coding/codebooks/<int:codebook_id>/codes/<int:code_id>/split/", views.split_code_page, name="annotation-split"
    ),
    path("coding/codebooks/<int:codebook_id>/stories/<int:output_id>/", views.workspace, name="annotation-workspace"),
    path(
        "coding/codebooks/<int:codebook_id>/stories/<int:output_id>/edit/",
        views.workspace_edit,
        name="annotation-workspace-edit",
    ),
    # REFI-QDA, offered on the Exports page
    path("exports/refi-import/", views_refi.refi_import, name="export-refi-import"),
    path("exports/codebooks/<int:codebook_id>.qdc", views_refi.codebook_qdc, name="export-codebook-qdc"),
]
