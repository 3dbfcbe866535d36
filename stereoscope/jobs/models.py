"""The job engine's tables: the abstract job every long job kind extends, its one status enum, and the chunks
(leasable slices of a job's pending units) that let any number of workers share one job."""

from typing import ClassVar, Self

from django.conf import settings
from django.db import models
from django.utils import timezone


class JobStatus(models.TextChoices):
    DRAFT = "draft", "Draft"
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    WAITING = "waiting", "Waiting"  # held until a reason clears (a connection's approval, a spending cap)
    COMPLETED = "completed", "Completed"
    CANCELLED = "cancelled", "Cancelled"
    FAILED = "failed", "Failed"


ACTIVE = (JobStatus.QUEUED, JobStatus.RUNNING)
TERMINAL = (JobStatus.COMPLETED, JobStatus.CANCELLED, JobStatus.FAILED)


class Job(models.Model):
    """Columns every long job has. `lease_expires_at` says until when some worker (any of them) is on the job."""

    status = models.CharField(max_length=20, choices=JobStatus.choices, default=JobStatus.DRAFT)
    cancel_requested = models.BooleanField(default=False)
    # Live figures over all workers: in_flight, rate, eta_s, remaining, workers, heartbeat.
    progress = models.JSONField(default=dict, blank=True)
    lease_token = models.CharField(max_length=64, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    message = models.TextField(blank=True, help_text="The last status message (e.g. why a job stopped).")
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    objects: ClassVar["models.Manager[Self]"]  # for the type checker: every concrete job model has its `objects`

    class Meta:
        abstract = True


class RunJob(Job):
    """A job someone creates, names and starts (a generation run, a judge round, a measure run): its name,
    author and creation time, newest first. Each model keeps its own `study` (its reverse name differs)."""

    name = models.CharField(max_length=200)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        abstract = True
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name


class ChunkStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    DONE = "done", "Done"


class JobChunk(models.Model):
    """A slice of one job's pending units, leased by one worker at a time (token + expiry, renewed while working)."""

    kind = models.CharField(max_length=50)
    job_id = models.PositiveBigIntegerField()
    number = models.PositiveIntegerField()
    units = models.JSONField(default=list, help_text="The unit keys of this chunk, as the job kind names them.")
    size = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    status = models.CharField(max_length=10, choices=ChunkStatus.choices, default=ChunkStatus.PENDING)
    lease_token = models.CharField(max_length=64, blank=True)
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    worker = models.CharField(max_length=255, blank=True)
    leased_times = models.PositiveIntegerField(default=0)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        app_label = "stereoscope"
        constraints = [models.UniqueConstraint(fields=["kind", "job_id", "number"], name="unique_job_chunk")]
        indexes = [models.Index(fields=["kind", "job_id", "status"], name="job_chunk_pending")]
        ordering = ["kind", "job_id", "number"]

    def __str__(self) -> str:
        return f"{self.kind} {self.job_id} chunk {self.number}"
