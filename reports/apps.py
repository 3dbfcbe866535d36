from django.apps import AppConfig


class ReportsConfig(AppConfig):
    default_auto_field = "django.db.models.BigAutoField"
    name = "reports"
    verbose_name = "Study reports (from study to paper)"

    def export_documents(self):
        """The study report as an export format: a PDF is made by an export job, never in a web request."""
        from exports.services import Document  # lazy: apps.py loads before the app registry is ready

        from . import builder, render  # lazy: they import models, which apps.py may not

        return {"report": Document("pdf", "application/pdf", builder.write_pdf, render.pdf_problem)}
