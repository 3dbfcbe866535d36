"""Export jobs: one background export of a study to a file."""
from django.conf import settings
from django.db import models
from django.utils import timezone


class ExportFormat(models.TextChoices):
    CSV = "csv", "CSV (ZIP of one file per dataset)"
    JSONL = "jsonl", "JSON Lines (ZIP of one file per dataset)"
    XLSX = "xlsx", "Excel workbook (in a ZIP)"
    QDPX = "qdpx", "REFI-QDA project (.qdpx)"


class ExportStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    COMPLETED = "completed", "Completed"
    FAILED = "failed", "Failed"


class ExportJob(models.Model):
    """One export of a study: runs in the background, streams to a temporary file, then is renamed into place."""

    study = models.ForeignKey("stereoscope.Study", on_delete=models.CASCADE, related_name="export_jobs")
    format = models.CharField(max_length=10, choices=ExportFormat.choices)
    datasets = models.JSONField(default=list, blank=True, help_text="Dataset keys; empty for a .qdpx project.")
    options = models.JSONField(default=dict, blank=True, help_text="Filters and pseudonymisation, as chosen.")
    status = models.CharField(max_length=20, choices=ExportStatus.choices, default=ExportStatus.QUEUED,
                              db_index=True)
    progress = models.JSONField(default=dict, blank=True)
    file_name = models.CharField(max_length=300, blank=True, help_text="Relative to EXPORT_ROOT once completed.")
    size_bytes = models.BigIntegerField(null=True, blank=True)
    sha256 = models.CharField(max_length=64, blank=True)
    manifest = models.JSONField(default=dict, blank=True)
    message = models.TextField(blank=True)
    lease_token = models.CharField(max_length=64, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL,
                                   related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        db_table = "stereoscope_exportjob"  # the table predates the exports app
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"export {self.pk} ({self.format}) of {self.study}"
