"""Export jobs: one background export of a study to a file, run by the one job engine (stereoscope.jobs)."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from stereoscope.jobs.models import Job, JobStatus


class ExportFormat(models.TextChoices):
    CSV = "csv", "CSV (ZIP of one file per dataset)"
    JSONL = "jsonl", "JSON Lines (ZIP of one file per dataset)"
    XLSX = "xlsx", "Excel workbook (in a ZIP)"
    QDPX = "qdpx", "REFI-QDA project (.qdpx)"
    REPORT = "report", "Study report (PDF)"  # written by the reports app (services.documents())


# The formats this app writes from the study's data; the others are documents another app writes (services.documents)
DATA_FORMATS = (ExportFormat.CSV, ExportFormat.JSONL, ExportFormat.XLSX, ExportFormat.QDPX)

ExportStatus = JobStatus  # the engine's one status enum


class ExportJob(Job):
    """One export of a study. Its units (see services.ExportJobKind) are staged into a folder of the job's own,
    then bundled into a temporary file renamed into place: the final path never holds a half-written file."""

    study = models.ForeignKey("stereoscope.Study", on_delete=models.CASCADE, related_name="export_jobs")
    format = models.CharField(max_length=10, choices=ExportFormat.choices)
    datasets = models.JSONField(default=list, blank=True, help_text="Dataset keys; empty for a .qdpx project.")
    options = models.JSONField(default=dict, blank=True, help_text="Filters and pseudonymisation, as chosen.")
    file_name = models.CharField(max_length=300, blank=True, help_text="Relative to EXPORT_ROOT once completed.")
    size_bytes = models.BigIntegerField(null=True, blank=True)
    sha256 = models.CharField(max_length=64, blank=True)
    manifest = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        db_table = "stereoscope_exportjob"  # the table predates the exports app
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"export {self.pk} ({self.format}) of {self.study}"
