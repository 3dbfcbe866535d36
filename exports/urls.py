from django.urls import path

from . import views

urlpatterns = [
    path("exports/", views.exports_page, name="exports"),
    path("exports/jobs/", views.jobs_partial, name="export-jobs"),
    path("exports/<int:job_id>/download/", views.download, name="export-download"),
    path("exports/<int:job_id>/delete/", views.delete, name="export-delete"),
    path("exports/<int:job_id>/<str:action>/", views.job_action, name="export-job-action"),
]
