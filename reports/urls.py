from django.urls import path

from . import views

urlpatterns = [
    path("report/", views.report_page, name="report"),
    path("report/sections/", views.report_sections, name="report-sections"),
    path("report/pdf/", views.report_pdf, name="report-pdf"),
    path("report/download.<str:fmt>", views.report_download, name="report-download"),
]
