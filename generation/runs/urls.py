from django.urls import path

from . import views as v
from . import views_connections

urlpatterns = [
    path("endpoints/", v.endpoint_list, name="endpoints"),
    path("spending/", views_connections.study_spending, name="study-spending"),
    path("endpoints/new/", v.endpoint_create, name="endpoint-create"),
    path("endpoints/<int:endpoint_id>/edit/", v.endpoint_edit, name="endpoint-edit"),
    path("endpoints/<int:endpoint_id>/delete/", v.endpoint_delete, name="endpoint-delete"),
    path("runs/", v.run_list, name="runs"),
    path("runs/new/", v.run_create, name="run-create"),
    path("runs/import/", v.output_import, name="output-import"),
    path("runs/<int:run_id>/", v.run_detail, name="run-detail"),
    path("runs/<int:run_id>/plan/", v.run_plan, name="run-plan"),
    path("runs/<int:run_id>/progress/", v.run_progress, name="run-progress"),
    path("runs/<int:run_id>/collect/", v.run_collect, name="run-collect"),
    path("runs/<int:run_id>/collect.<str:fmt>", v.run_collect_sheet, name="run-collect-sheet"),  # csv or xlsx
    path("runs/<int:run_id>/<str:action>/", v.run_action, name="run-action"),
    path("outputs/", v.output_list, name="outputs"),
    path("outputs/<int:output_id>/", v.output_detail, name="output-detail"),
]
