"""Studies, memberships and roles; plus the small shared records (activity, worker heartbeats, built-ins)."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from .jobs.models import JobChunk  # noqa: F401  (the job engine's table belongs to this app)


class Role(models.TextChoices):
    CODER = "coder", "Coder"
    RESEARCHER = "researcher", "Researcher"
    ADMIN = "admin", "Study admin"


class LiveStudyManager(models.Manager):
    """Studies not in the trash: what every page, API and query sees (`Study.all_objects` includes the trash)."""

    def get_queryset(self):
        return super().get_queryset().filter(trashed_at__isnull=True)


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
    spending_cap_usd = models.DecimalField(
        max_digits=12,
        decimal_places=2,
        null=True,
        blank=True,
        help_text="The study's budget in USD over all its provider calls, set by its admins; empty: no cap.",
    )
    spending_cap_limit_usd = models.DecimalField(
        max_digits=12,
        decimal_places=2,
        null=True,
        blank=True,
        help_text="Set by site staff: the highest cap the study's admins may set; empty: the site default.",
    )
    trashed_at = models.DateTimeField(
        null=True,
        blank=True,
        db_index=True,
        help_text="Set when the study went to the trash: hidden, restorable by its admins, purged after "
        "settings.TRASH_RETENTION_DAYS (stereoscope/trash.py).",
    )
    trashed_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )

    objects = LiveStudyManager()
    all_objects = models.Manager()

    class Meta:
        ordering = ["-is_library", "name"]
        verbose_name_plural = "studies"
        base_manager_name = "all_objects"

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


class Invitation(models.Model):
    """Which study created a pending account (one without a password yet). Only that study's admins may issue the
    account's one-time link; adding the person anywhere else adds a membership and gives no link."""

    user = models.OneToOneField(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="invitation")
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="invitations")
    invited_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    accepted_at = models.DateTimeField(null=True, blank=True)

    def __str__(self):
        return f"{self.user} invited to {self.study}"


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
