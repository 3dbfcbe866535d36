from django.urls import path

from . import views, views_trained

urlpatterns = [
    path("measures/", views.index, name="measures"),
    path("measures/lexicons/new/", views.lexicon_new, name="measures-lexicon-new"),
    path("measures/lexicons/import/", views.lexicon_import, name="measures-lexicon-import"),
    path("measures/lexicons/<int:lexicon_id>/", views.lexicon_detail, name="measures-lexicon"),
    path("measures/lexicons/<int:lexicon_id>/export/", views.lexicon_export, name="measures-lexicon-export"),
    path("measures/lexicons/<int:lexicon_id>/copy/", views.lexicon_copy, name="measures-lexicon-copy"),
    path("measures/lexicons/<int:lexicon_id>/preview/", views.lexicon_preview, name="measures-lexicon-preview"),
    path("measures/lexicons/<int:lexicon_id>/categories/new/", views.category_edit, name="measures-category-new"),
    path(
        "measures/lexicons/<int:lexicon_id>/categories/<int:category_id>/",
        views.category_edit,
        name="measures-category",
    ),
    path(
        "measures/lexicons/<int:lexicon_id>/categories/<int:category_id>/delete/",
        views.category_delete,
        name="measures-category-delete",
    ),
    path("measures/lexicons/<int:lexicon_id>/exclusions/", views.exclusion_add, name="measures-exclusion-add"),
    path(
        "measures/lexicons/<int:lexicon_id>/exclusions/<int:exclusion_id>/delete/",
        views.exclusion_delete,
        name="measures-exclusion-delete",
    ),
    path("measures/outputs/<int:output_id>/layer/", views.output_layer, name="measures-output-layer"),
    path("measures/classifiers/", views_trained.classifiers, name="measures-classifiers"),
    path("measures/runs/new/", views.run_new, name="measures-run-new"),
    path("measures/runs/<int:run_id>/", views.run_detail, name="measures-run"),
    path("measures/runs/<int:run_id>/progress/", views.run_progress, name="measures-run-progress"),
    path("measures/runs/<int:run_id>/report/", views.run_report, name="measures-report"),
    path("measures/runs/<int:run_id>/pairs/", views.run_pairs, name="measures-pairs"),
    path("measures/runs/<int:run_id>/outputs/<int:output_id>/", views.run_output, name="measures-output"),
    path("measures/runs/<int:run_id>/<str:action>/", views.run_action, name="measures-run-action"),
    path("measures/runs/<int:run_id>/csv/<str:kind>/", views.run_csv, name="measures-csv"),
]
