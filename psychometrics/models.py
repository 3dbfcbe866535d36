"""Instruments (versioned, with parallel forms), persona and context sets, questionnaire runs, responses and
extraction audits."""

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from generation.models import ExecutionMode, ModelEndpoint
from stereoscope.jobs.models import Job
from stereoscope.models import Study
from stereoscope.versioning import VersionedModel

from .spec import InstrumentSpec, ItemSpec, OptionSpec, Scale

BARE_CONTEXT_KEY = "none"  # the one implicit empty context of a run without a context set


class Instrument(VersionedModel):
    """A versioned questionnaire form. Locked once a run uses it; edits make a new version."""

    label = models.CharField(max_length=30, blank=True, help_text="The version label from the file, e.g. '1'.")
    source = models.TextField(blank=True)
    instruction = models.TextField(blank=True, help_text="Questionnaire instruction ({instruction} in templates).")
    scale_min = models.FloatField(null=True, blank=True)
    scale_max = models.FloatField(null=True, blank=True)
    scale_labels = models.JSONField(default=dict, blank=True)
    continuous = models.BooleanField(default=False, help_text="Continuous scores (imported human data), not options.")
    subscales = models.JSONField(default=list, blank=True)
    scoring = models.CharField(max_length=10, choices=[("mean", "Mean"), ("sum", "Sum")], default="mean")
    missing_policy = models.JSONField(default=dict, blank=True)
    parallel_of = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="parallel_forms",
        help_text="The form this one is an alternate (parallel) form of.",
    )

    def to_spec(self) -> InstrumentSpec:

        items = [
            ItemSpec(
                i.item_id,
                i.text,
                i.subscale,
                i.reverse,
                i.parallel.item_id if i.parallel_id else None,
                [OptionSpec(o["text"], o["weight"]) for o in i.options or []],
            )
            for i in self.items.select_related("parallel").order_by("position")
        ]
        return InstrumentSpec(
            name=self.name,
            version=self.label or str(self.version),
            scale=Scale(
                self.scale_min,
                self.scale_max,
                {int(k): v for k, v in (self.scale_labels or {}).items()},
                self.continuous,
            ),
            subscales=list(self.subscales or []),
            items=items,
            description=self.description,
            source=self.source,
            instruction=self.instruction,
            scoring=self.scoring,
            missing=dict(self.missing_policy or {"method": "prorate", "min_fraction": 0.5}),
            parallel_form={
                "name": self.parallel_of.name,
                "version": self.parallel_of.label or str(self.parallel_of.version),
            }
            if self.parallel_of_id
            else None,
        )


class InstrumentItem(models.Model):
    instrument = models.ForeignKey(Instrument, on_delete=models.CASCADE, related_name="items")
    item_id = models.CharField(max_length=50)
    position = models.PositiveIntegerField(default=0)
    text = models.TextField()
    subscale = models.CharField(max_length=100, blank=True)
    reverse = models.BooleanField(default=False)
    options = models.JSONField(
        default=list, blank=True, help_text="The item's own answer options [{text, weight}]; empty: the scale."
    )
    parallel = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="parallel_items",
        help_text="The linked item in the parallel form.",
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["instrument", "item_id"], name="unique_instrument_item")]
        ordering = ["instrument", "position"]

    def __str__(self):
        return f"{self.item_id}{'*' if self.reverse else ''} {self.text[:60]}"


class PersonaSet(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="persona_sets")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    template = models.CharField(
        max_length=500, blank=True, help_text="e.g. '{title} {surname}' for generated personas."
    )
    attributes = models.JSONField(
        default=dict, blank=True, help_text="Attribute lists the personas were generated from."
    )
    builtin_key = models.CharField(max_length=100, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["study", "name"], name="unique_persona_set_name")]
        ordering = ["study", "name"]

    def __str__(self):
        return self.name


class Persona(models.Model):
    persona_set = models.ForeignKey(PersonaSet, on_delete=models.CASCADE, related_name="personas")
    key = models.CharField(max_length=200)
    text = models.TextField()
    attributes = models.JSONField(default=dict, blank=True)
    order = models.PositiveIntegerField(default=0)
    included = models.BooleanField(default=True)
    exclude_reason = models.CharField(max_length=300, blank=True)
    twin = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Gender-swapped counterfactual twin.",
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["persona_set", "key"], name="unique_persona_key")]
        ordering = ["persona_set", "order", "key"]

    def __str__(self):
        return self.text[:80]


class ContextSet(models.Model):
    """The individuals a run asks: each context is an optional persona (system message) and optional prior turns."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="context_sets")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    source = models.CharField(max_length=300, blank=True, help_text="How it was built: persona set, sample, import.")
    seed = models.IntegerField(null=True, blank=True, help_text="Seed of the random sample, if sampled.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["study", "name"], name="unique_context_set_name")]
        ordering = ["study", "name"]

    def __str__(self):
        return self.name


class Context(models.Model):
    context_set = models.ForeignKey(ContextSet, on_delete=models.CASCADE, related_name="contexts")
    key = models.CharField(max_length=200)
    persona = models.TextField(blank=True, help_text="System persona, e.g. 'a retired CEO'.")
    source_persona = models.ForeignKey(
        Persona, null=True, blank=True, on_delete=models.SET_NULL, related_name="contexts"
    )
    turns = models.JSONField(default=list, blank=True, help_text="Prior turns: [{role: user|assistant, content}].")
    attributes = models.JSONField(default=dict, blank=True)
    order = models.PositiveIntegerField(default=0)
    included = models.BooleanField(default=True)
    exclude_reason = models.CharField(max_length=300, blank=True)
    twin = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")

    class Meta:
        constraints = [models.UniqueConstraint(fields=["context_set", "key"], name="unique_context_key")]
        ordering = ["context_set", "order", "key"]

    def __str__(self):
        return self.key


class QuestionnaireRun(Job):
    """An instrument form × a context set × endpoints × repetitions; one Response per unit."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="questionnaire_runs")
    name = models.CharField(max_length=200)
    instrument = models.ForeignKey(Instrument, on_delete=models.RESTRICT, related_name="runs")
    context_set = models.ForeignKey(
        ContextSet,
        null=True,
        blank=True,
        on_delete=models.RESTRICT,
        related_name="runs",
        help_text="Empty: the bare questionnaire, one implicit empty context ('none').",
    )
    endpoints = models.ManyToManyField(ModelEndpoint, related_name="questionnaire_runs")
    repetitions = models.PositiveIntegerField(default=1)
    seeds = models.JSONField(
        default=list,
        blank=True,
        help_text="One provider seed per repetition (R.U.Psycho's grid); empty: the endpoint's.",
    )
    template_key = models.CharField(max_length=50, default="jung2025")
    custom_user = models.TextField(blank=True)
    custom_system = models.TextField(blank=True)
    option_format = models.CharField(max_length=10, default="lines")
    option_order = models.CharField(
        max_length=10, default="fixed", choices=[(m, m) for m in ("fixed", "reversed", "permuted")]
    )
    option_numbering = models.CharField(
        max_length=10, default="position", choices=[("position", "position"), ("original", "original")]
    )
    order_seed = models.IntegerField(default=0)
    extractors = models.JSONField(default=list)
    judge_endpoint = models.ForeignKey(
        ModelEndpoint,
        null=True,
        blank=True,
        on_delete=models.RESTRICT,
        related_name="+",
        help_text="The model judge of the extraction chain's last step (llm).",
    )
    refusal_policy = models.CharField(max_length=10, default="fallback")
    json_field = models.CharField(max_length=50, default="answer")
    param_overrides = models.JSONField(default=dict, blank=True)
    audit_per_model = models.PositiveIntegerField(default=100)
    execution_mode = models.CharField(max_length=10, choices=ExecutionMode.choices, default=ExecutionMode.LIVE)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)
    # status, progress, leases, cancel flag, message, started_by and timestamps come from the job engine's Job.

    class Meta:
        ordering = ["-created_at"]

    def __str__(self):
        return self.name


class ResponseStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class Extracted(models.TextChoices):
    OK = "ok", "Extracted"
    REFUSED = "refused", "Refused"
    INCONCLUSIVE = "inconclusive", "Inconclusive"
    NOT_PRESENT = "not_present", "Not present"


class Response(models.Model):
    run = models.ForeignKey(QuestionnaireRun, on_delete=models.CASCADE, related_name="responses")
    item = models.ForeignKey(InstrumentItem, on_delete=models.RESTRICT, related_name="responses")
    context = models.ForeignKey(
        Context,
        null=True,
        blank=True,
        on_delete=models.RESTRICT,
        related_name="responses",
        help_text="Empty in a bare run (no context set): the implicit context 'none'.",
    )
    endpoint = models.ForeignKey(ModelEndpoint, on_delete=models.RESTRICT, related_name="questionnaire_responses")
    model_name = models.CharField(max_length=300)
    repetition = models.PositiveIntegerField(default=1)
    seed = models.IntegerField(null=True, blank=True, help_text="The provider seed this unit was sent with.")
    options = models.JSONField(default=list, help_text="Options as presented: [{code, label, value}] in shown order.")
    permutation = models.JSONField(default=list, help_text="Original scale values in presented order.")
    messages = models.JSONField(default=list)
    status = models.CharField(
        max_length=20, choices=ResponseStatus.choices, default=ResponseStatus.PENDING, db_index=True
    )
    raw_text = models.TextField(blank=True)
    extraction = models.CharField(max_length=20, choices=Extracted.choices, blank=True)
    extracted_code = models.CharField(max_length=20, blank=True)
    value = models.FloatField(null=True, blank=True, help_text="The answer on the original scale (before recoding).")
    extraction_method = models.CharField(max_length=30, blank=True)
    extraction_detail = models.CharField(max_length=300, blank=True)
    error = models.TextField(blank=True)
    audit_sampled = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=timezone.now)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "item", "context", "endpoint", "repetition"], name="unique_response_unit"
            ),
            models.UniqueConstraint(
                fields=["run", "item", "endpoint", "repetition"],
                condition=Q(context__isnull=True),
                name="unique_bare_response_unit",
            ),
        ]
        indexes = [models.Index(fields=["run", "status"]), models.Index(fields=["run", "endpoint"])]
        ordering = ["run", "endpoint", "context", "repetition", "item__position"]

    @property
    def context_key(self):
        return self.context.key if self.context_id else BARE_CONTEXT_KEY

    def __str__(self):
        return f"{self.model_name} · {self.context_key} · item {self.item_id}"


class ExtractionAudit(models.Model):
    """A person's check of one extraction (Jung audited 100 per model)."""

    response = models.ForeignKey(Response, on_delete=models.CASCADE, related_name="audits")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    correct = models.BooleanField()
    corrected_value = models.FloatField(null=True, blank=True)
    note = models.CharField(max_length=300, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["response", "user"], name="unique_audit_per_user")]
