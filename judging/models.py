"""Judge templates, judge rounds (who judges whose outputs), verdicts and human verification checks."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from generation.models import ExecutionMode, GenerationRun, ModelEndpoint, Output
from stereoscope.jobs.models import RunJob
from stereoscope.models import Study
from stereoscope.versioning import VersionedModel


class TemplateKind(models.TextChoices):
    SEED_BINARY = "seed_binary", "Seed prompt (free-text yes/no per story)"
    STRUCTURED_JSON = "structured_json", "Structured JSON with delimiters and ids"
    LIKERT = "likert", "Likert 0-4 per story (JSON)"
    CATEGORICAL = "categorical", "One of N labels per story (JSON)"
    CUSTOM = "custom", "Custom"


class JudgeTemplate(VersionedModel):
    """A versioned judge prompt with {target_stereotype} and {stories} slots. Read-only once a round uses it."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="judge_templates")
    kind = models.CharField(max_length=20, choices=TemplateKind.choices, default=TemplateKind.STRUCTURED_JSON)
    text = models.TextField(help_text="Must contain {target_stereotype} and {stories}.")
    scale_min = models.IntegerField(default=0)
    scale_max = models.IntegerField(default=1)
    # For Likert templates: values >= this count as "detected" when computing detection rates.
    detect_threshold = models.IntegerField(default=1)
    # For categorical templates: the labels the judge chooses from; a verdict's value is the label's index.
    labels = models.JSONField(default=list, blank=True)


class JudgePolicy(models.TextChoices):
    ROTATION = "rotation", "Rotation (each output judged by one other model)"
    PANEL = "panel", "Panel (every other model judges every output)"
    K_OF_N = "k_of_n", "k of n (k other models per output)"


class JudgeRound(RunJob):
    """Judges × outputs of a source run under an assignment policy; a judge never rates its own model's outputs."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="judge_rounds")
    template = models.ForeignKey(JudgeTemplate, on_delete=models.RESTRICT, related_name="rounds")
    source_run = models.ForeignKey(
        GenerationRun, null=True, blank=True, on_delete=models.SET_NULL, related_name="judge_rounds"
    )
    judges = models.ManyToManyField(ModelEndpoint, related_name="judge_rounds")
    policy = models.CharField(max_length=20, choices=JudgePolicy.choices, default=JudgePolicy.ROTATION)
    k = models.PositiveIntegerField(null=True, blank=True, help_text="Judges per output for k-of-n.")
    forbid_same_family = models.BooleanField(
        default=False, help_text="Also forbid judges of the writer's provider family."
    )
    batch_size = models.PositiveIntegerField(default=5, help_text="Stories per judge call.")
    temperature = models.FloatField(null=True, blank=True)
    seed = models.IntegerField(default=0, help_text="Seeds the assignment and the story order in each batch.")
    reask_missing = models.BooleanField(
        default=True, help_text="Ask once more, one story alone, when a verdict is missing."
    )
    execution_mode = models.CharField(max_length=10, choices=ExecutionMode.choices, default=ExecutionMode.LIVE)
    # Optional narrowing of the source outputs: {"output_ids": [...], "item_numbers": [...], "models": [...]}.
    output_filter = models.JSONField(default=dict, blank=True)
    plan = models.JSONField(default=dict, blank=True)
    # name, created_by, created_at and the order (newest first) come from RunJob; status, progress, leases, cancel
    # flag, message, started_by and timestamps from the job engine's Job.


class VerdictStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    OK = "ok", "OK"
    MISSING = "missing", "Missing from the answer"
    UNPARSEABLE = "unparseable", "Unparseable"
    FAILED = "failed", "Call failed"


class Verdict(models.Model):
    round = models.ForeignKey(JudgeRound, on_delete=models.CASCADE, related_name="verdicts")
    output = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="verdicts")
    judge_endpoint = models.ForeignKey(
        ModelEndpoint, null=True, blank=True, on_delete=models.SET_NULL, related_name="verdicts"
    )
    judge_model = models.CharField(max_length=300, help_text="Model identity (lower-cased model id) of the judge.")
    value = models.IntegerField(null=True, blank=True, help_text="0/1 (binary) or 0..4 (Likert); null when missing.")
    label = models.CharField(max_length=200, blank=True, help_text="The chosen label (categorical templates).")
    status = models.CharField(
        max_length=20, choices=VerdictStatus.choices, default=VerdictStatus.PENDING, db_index=True
    )
    rationale = models.TextField(blank=True)
    raw_text = models.TextField(blank=True)
    batch_ref = models.CharField(max_length=200, blank=True)
    position = models.PositiveIntegerField(
        null=True, blank=True, help_text="1-based position of the story in its batch."
    )
    question = models.TextField(blank=True, help_text="The target stereotype the judge was asked about.")
    reasked = models.BooleanField(default=False, help_text="Asked again alone after a missing/unparseable answer.")
    error = models.TextField(blank=True, help_text="Why the call or the parse failed.")
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["round", "output", "judge_model"], name="unique_verdict")]
        indexes = [models.Index(fields=["round", "status"])]
        ordering = ["round", "output_id", "judge_model"]

    def __str__(self):
        return f"{self.judge_model} on output {self.output_id}: {self.value}"


class HumanCheck(models.Model):
    """A person's own answer to a verdict's question, to verify the judge."""

    verdict = models.ForeignKey(Verdict, on_delete=models.CASCADE, related_name="human_checks")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="judge_checks")
    value = models.IntegerField()
    note = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["verdict", "user"], name="unique_human_check")]
        ordering = ["verdict", "user"]


class VerificationRequest(models.Model):
    """A judged output sent to a coder as a yes/no question: is the target stereotype present?"""

    verdict = models.ForeignKey(Verdict, on_delete=models.CASCADE, related_name="verification_requests")
    coder = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="judge_verification_requests"
    )
    requested_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["verdict", "coder"], name="unique_verification_request")]
        ordering = ["created_at", "pk"]


class ItemWeight(models.Model):
    """A prompt detection weight attached to an item of a toolkit version (computed here or imported from a file)."""

    toolkit = models.ForeignKey("generation.Toolkit", on_delete=models.CASCADE, related_name="item_weights")
    item = models.ForeignKey("generation.PromptItem", on_delete=models.CASCADE, related_name="weights")
    weight = models.FloatField()
    rate = models.FloatField(null=True, blank=True)
    ci_low = models.FloatField(null=True, blank=True)
    ci_high = models.FloatField(null=True, blank=True)
    n = models.PositiveIntegerField(null=True, blank=True)
    method = models.CharField(max_length=30, blank=True)
    flags = models.JSONField(default=list, blank=True)
    source = models.JSONField(
        default=dict, blank=True, help_text="Where the weight came from: rounds, panel, template, date."
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["toolkit", "item"], name="unique_item_weight")]
        ordering = ["toolkit", "item__number"]
