"""Gold labels from adjudication: a researcher's value for one story and one target (code, dimension, stereotype)."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from stereoscope.models import Study


class GoldLabel(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="gold_labels")
    target = models.CharField(max_length=50, help_text="code:<id>, dimension:<id> or stereotype")
    code = models.ForeignKey(
        "annotation.Code",
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="gold_labels",
        help_text="The code or dimension of the target (empty for stereotype).",
    )
    output = models.ForeignKey("generation.Output", on_delete=models.CASCADE, related_name="gold_labels")
    value = models.IntegerField()
    note = models.TextField(blank=True)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        db_table = "annotation_goldlabel"  # the table predates the agreement app (moved without copying data)
        constraints = [models.UniqueConstraint(fields=["study", "target", "output"], name="unique_gold_label")]
        ordering = ["study", "target", "output_id"]

    def __str__(self):
        return f"{self.target} · story {self.output_id} = {self.value}"
