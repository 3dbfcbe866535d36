"""Studies, memberships and roles; plus the small shared records (activity, worker heartbeats, built-ins)."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from .jobs.models import JobChunk  # noqa: F401  (the job engine's table belongs to this app)


class Role(models.TextChoices):
    CODER = "coder", "Coder"
    RESEARCHER = "researcher", "Researcher"
    ADMIN = "admin", "Study admin"


class Study(models.Model):
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    is_library = models.BooleanField(
        default=False,
        help_text="The built-in library study: readable by every signed-in user, written by load_builtin.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, through="Membership", related_name="studies")

    class Meta:
        ordering = ["-is_library", "name"]
        verbose_name_plural = "studies"

    def __str__(self):
        return self.name


class Membership(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="memberships")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memberships")
    role = models.CharField(max_length=20, choices=Role.choices, default=Role.CODER)
    added_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["study", "user"], name="unique_membership")]
        ordering = ["study", "user__username"]

    def __str__(self):
        return f"{self.user} · {self.role} · {self.study}"


class ActivityEvent(models.Model):
    """A line in a study's recent-activity feed."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="activity")
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    verb = models.CharField(max_length=200)
    target = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now, db_index=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"{self.actor} {self.verb} {self.target}"


class WorkerHeartbeat(models.Model):
    """Written by every Celery worker every few seconds; /healthz counts the fresh ones."""

    hostname = models.CharField(max_length=255, unique=True)
    pid = models.IntegerField()
    broker = models.CharField(max_length=50, blank=True)
    started_at = models.DateTimeField(default=timezone.now)
    last_seen = models.DateTimeField(default=timezone.now, db_index=True)
    # this worker start's id: the job engine's lease tokens name it, so a dead worker's leases are free at once
    instance = models.CharField(max_length=32, blank=True, default="")

    def __str__(self):
        return self.hostname


class BuiltinRecord(models.Model):
    """One loaded version of a built-in toolkit, codebook, instrument or lexicon."""

    kind = models.CharField(max_length=50)
    key = models.CharField(max_length=100)
    version = models.CharField(max_length=30)
    content_hash = models.CharField(max_length=64)
    object_id = models.BigIntegerField(null=True, blank=True)
    loaded_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["kind", "key", "version"], name="unique_builtin_version")]
        ordering = ["kind", "key", "version"]

    def __str__(self):
        return f"{self.kind}:{self.key}@{self.version}"
