"""The recipes applied to a study: what a study was built from, for its exported recipe and export manifests."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from stereoscope.models import Study


class AppliedRecipe(models.Model):
    """One applied recipe that differed from the one before (applying the same recipe again adds no row)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="applied_recipes")
    recipe = models.JSONField(help_text="The recipe as applied (endpoints name key variables, never keys).")
    sha256 = models.CharField(max_length=64)
    applied_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    applied_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["study", "-applied_at", "-id"]

    def __str__(self):
        return f"recipe {self.sha256[:8]} applied to {self.study}"
