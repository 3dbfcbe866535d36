from django.urls import path

from . import views

urlpatterns = [
    path("questionnaires/", views.index, name="questionnaires"),
    path("questionnaires/instruments/import/", views.instrument_import, name="psych-instrument-import"),
    path("questionnaires/instruments/<int:instrument_id>/", views.instrument_detail, name="psych-instrument"),
    path("questionnaires/instruments/<int:instrument_id>/export.json", views.instrument_export, name="psych-instrument-export"),
    path("questionnaires/personas/", views.personas, name="psych-personas"),
    path("questionnaires/personas/import/", views.persona_import, name="psych-persona-import"),
    path("questionnaires/personas/generate/", views.persona_generate, name="psych-persona-generate"),
    path("questionnaires/personas/<int:set_id>/", views.persona_set_detail, name="psych-persona-set"),
    path("questionnaires/personas/<int:set_id>/twins/", views.persona_set_twins, name="psych-persona-twins"),
    path("questionnaires/include/<str:kind>/<int:pk>/", views.toggle_include, name="psych-include"),
    path("questionnaires/contexts/from-personas/", views.context_from_personas, name="psych-context-from-personas"),
    path("questionnaires/contexts/import/", views.context_import, name="psych-context-import"),
    path("questionnaires/contexts/<int:set_id>/", views.context_set_detail, name="psych-context-set"),
    path("questionnaires/contexts/<int:set_id>/twins/", views.context_set_twins, name="psych-context-twins"),
    path("questionnaires/contexts/<int:set_id>/generate/", views.context_set_generate, name="psych-context-generate"),
    path("questionnaires/runs/new/", views.run_new, name="psych-run-new"),
    path("questionnaires/runs/from-file/", views.run_from_file, name="psych-run-from-file"),
    path("questionnaires/runs/compare/", views.run_compare, name="psych-compare"),
    path("questionnaires/validation/", views.validation, name="psych-validation"),
    path("questionnaires/runs/<int:run_id>/", views.run_detail, name="psych-run"),
    path("questionnaires/runs/<int:run_id>/progress/", views.run_progress, name="psych-run-progress"),
    path("questionnaires/runs/<int:run_id>/report/", views.run_report, name="psych-run-report"),
    path("questionnaires/runs/<int:run_id>/responses/", views.run_responses, name="psych-run-responses"),
    path("questionnaires/runs/<int:run_id>/audit/", views.run_audit, name="psych-run-audit"),
    path("questionnaires/runs/<int:run_id>/collect/", views.run_collect, name="psych-run-collect"),
    path("questionnaires/runs/<int:run_id>/export/<str:fmt>", views.run_export, name="psych-run-export"),
    path("questionnaires/runs/<int:run_id>/<str:action>/", views.run_action, name="psych-run-action"),
]
