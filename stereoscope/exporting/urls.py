from django.urls import path

from . import views

urlpatterns = [
    path("", views.exports_page, name="exports"),
    path("jobs/", views.jobs_partial, name="export-jobs"),
    path("<int:job_id>/download/", views.download, name="export-download"),
    path("<int:job_id>/delete/", views.delete, name="export-delete"),
    path("refi-import/", views.refi_import, name="export-refi-import"),
    path("codebooks/<int:codebook_id>.qdc", views.codebook_qdc, name="export-codebook-qdc"),
]
