"""The sections a study's report shows, saved with the study so a report built again after more data arrives has
the same structure."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from stereoscope.models import Study


class ReportSettings(models.Model):
    study = models.OneToOneField(Study, on_delete=models.CASCADE, related_name="report_settings")
    sections = models.JSONField(default=list, help_text="Keys of the sections the report shows, in the report's order.")
    updated_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    updated_at = models.DateTimeField(default=timezone.now)

    def __str__(self):
        return f"report sections of {self.study}"
