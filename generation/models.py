"""Toolkits, prompt items, model endpoints, generation runs, outputs, and the provenance of every LLM call."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from stereoscope.jobs.models import JobStatus, RunJob
from stereoscope.models import Study
from stereoscope.versioning import VersionedModel

from .runs.key_variables import key_value


class Toolkit(VersionedModel):
    """A versioned set of prompt items grouped into dimensions. Read-only once a run uses it."""

    language = models.CharField(max_length=10, default="en")
    # Slots shared by all items, e.g. {"name": ["Kelly", "Joseph"], "age": ["20", "40", "60"]}.
    slots = models.JSONField(default=dict, blank=True)
    # Optional explicit combinations instead of the Cartesian product: [{"name": "Kelly", "gender": "woman"}, ...]
    combinations = models.JSONField(null=True, blank=True)


class Dimension(models.Model):
    toolkit = models.ForeignKey(Toolkit, on_delete=models.CASCADE, related_name="dimensions")
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    order = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["toolkit", "name"], name="unique_dimension_name")]
        ordering = ["toolkit", "order", "name"]

    def __str__(self):
        return self.name


class PromptItem(models.Model):
    toolkit = models.ForeignKey(Toolkit, on_delete=models.CASCADE, related_name="items")
    number = models.PositiveIntegerField()
    text = models.TextField(help_text="May contain {slot} placeholders.")
    dimension = models.ForeignKey(Dimension, null=True, blank=True, on_delete=models.SET_NULL, related_name="items")
    target_stereotype = models.TextField(blank=True, help_text="What judges look for, e.g. 'protected / sheltered'.")
    gender_mapping = models.CharField(
        max_length=300, blank=True, help_text="e.g. F = protected/sheltered, M = challenged/tested"
    )
    reversed_order = models.BooleanField(default=False, help_text="Counterbalanced / reversed-order item.")
    source_reference = models.CharField(max_length=300, blank=True)
    notes = models.TextField(blank=True)
    slots = models.JSONField(default=dict, blank=True, help_text="Item-level slot values; override the toolkit's.")
    combinations = models.JSONField(null=True, blank=True)
    counterfactual_of = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="counterfactuals"
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["toolkit", "number"], name="unique_item_number")]
        ordering = ["toolkit", "number"]

    def __str__(self):
        return f"{self.number}. {self.text[:60]}"


class Provider(models.TextChoices):
    OPENAI = "openai", "OpenAI"
    OPENAI_COMPATIBLE = "openai_compatible", "OpenAI-compatible server (vLLM, Ollama, llama.cpp, LM Studio)"
    ANTHROPIC = "anthropic", "Anthropic"
    TRANSFORMERS = "transformers", "Local Hugging Face transformers"
    MANUAL = "manual", "Manual (pasted from a chat interface)"


class ConnectionStatus(models.TextChoices):
    APPROVED = "approved", "Approved"
    PENDING = "pending", "Pending approval by staff"


class ProviderConnection(models.Model):
    """Where a provider key may go, decided by site staff: a provider kind, a fixed base URL and the name of the
    environment variable that holds the key. A study's endpoints pick a connection and a model; they never name a
    host or a key variable themselves. Optional: the models it serves, limits, the studies it is open to, and a
    monthly spending cap over all studies."""

    name = models.CharField(max_length=200, unique=True)
    provider = models.CharField(max_length=30, choices=Provider.choices)
    base_url = models.URLField(
        blank=True, help_text="Empty: the provider's official host (OpenAI, Anthropic). Fixed for every endpoint."
    )
    api_key_env = models.CharField(
        max_length=100,
        blank=True,
        help_text="The NAME of the environment variable holding the key (one of PROVIDER_KEY_VARIABLES); "
        "empty for keyless local servers.",
    )
    allowed_models = models.JSONField(
        default=list, blank=True, help_text="Model ids endpoints may use on this connection; empty: any."
    )
    max_concurrency = models.PositiveIntegerField(
        null=True, blank=True, help_text="At most this many calls at once over every endpoint of the connection."
    )
    requests_per_minute = models.PositiveIntegerField(null=True, blank=True)
    tokens_per_minute = models.PositiveIntegerField(null=True, blank=True)
    all_studies = models.BooleanField(default=True, help_text="Open to every study (else only to those chosen).")
    studies = models.ManyToManyField(Study, blank=True, related_name="provider_connections")
    monthly_cap_usd = models.DecimalField(
        max_digits=12,
        decimal_places=2,
        null=True,
        blank=True,
        help_text="USD per calendar month (UTC) over all studies; empty: no cap.",
    )
    status = models.CharField(max_length=20, choices=ConnectionStatus.choices, default=ConnectionStatus.PENDING)
    status_reason = models.CharField(max_length=500, blank=True, help_text="Why it waits for approval.")
    approved_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    approved_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["name"]

    def __str__(self):
        return self.name

    @property
    def is_approved(self):
        return self.status == ConnectionStatus.APPROVED

    @property
    def key_is_set(self):

        return bool(key_value(self.api_key_env))


class ModelEndpoint(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="endpoints")
    name = models.CharField(max_length=200)
    provider = models.CharField(max_length=30, choices=Provider.choices)
    model_id = models.CharField(
        max_length=300, help_text="Provider model id, a local path, or the declared model for manual entry."
    )
    model_family = models.CharField(
        max_length=100, blank=True, help_text="Provider family, e.g. openai, anthropic, google."
    )
    connection = models.ForeignKey(
        ProviderConnection,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="endpoints",
        help_text="Where calls go and with which key: chosen among the connections staff approved.",
    )
    default_params = models.JSONField(
        default=dict, blank=True, help_text="temperature, top_p, max_tokens, seed, stop, ..."
    )
    max_concurrency = models.PositiveIntegerField(default=8)
    requests_per_minute = models.PositiveIntegerField(null=True, blank=True)
    tokens_per_minute = models.PositiveIntegerField(null=True, blank=True)
    timeout_seconds = models.FloatField(default=120)
    max_attempts = models.PositiveIntegerField(default=5)
    backoff_base_s = models.FloatField(
        default=1.0, help_text="First retry waits about this long; each retry doubles it."
    )
    backoff_max_s = models.FloatField(
        default=60.0, help_text="Longest wait between attempts (Retry-After may ask for more)."
    )
    input_price_per_mtok = models.DecimalField(
        max_digits=10,
        decimal_places=4,
        null=True,
        blank=True,
        help_text="USD per million input tokens, for cost estimates.",
    )
    output_price_per_mtok = models.DecimalField(
        max_digits=10, decimal_places=4, null=True, blank=True, help_text="USD per million output tokens."
    )
    batch_enabled = models.BooleanField(
        default=False,
        help_text="Runs may use the provider's batch API "
        "(OpenAI, Anthropic, OpenAI-compatible servers that implement it).",
    )
    batch_input_price_per_mtok = models.DecimalField(
        max_digits=10,
        decimal_places=4,
        null=True,
        blank=True,
        help_text="USD per million input tokens in batch mode (empty: half the normal price).",
    )
    batch_output_price_per_mtok = models.DecimalField(
        max_digits=10,
        decimal_places=4,
        null=True,
        blank=True,
        help_text="USD per million output tokens in batch mode (empty: half the normal price).",
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["study", "name"], name="unique_endpoint_name")]
        ordering = ["study", "name"]

    def __str__(self):
        return f"{self.name} ({self.model_id})"

    @property
    def model_identity(self):
        """Who wrote an output, for the no-self-judging rule: the model, not the endpoint."""
        return self.model_id.strip().lower()

    @property
    def base_url(self):
        """The connection's fixed host ("" for the provider's official one): an endpoint never has its own."""
        return self.connection.base_url if self.connection_id else ""

    @property
    def api_key_env(self):
        """The connection's key variable: an endpoint never names one itself."""
        return self.connection.api_key_env if self.connection_id else ""

    @property
    def key_is_set(self):

        return bool(key_value(self.api_key_env))


RunStatus = JobStatus  # the one status enum of every job
BATCH_PROVIDERS = (Provider.OPENAI, Provider.OPENAI_COMPATIBLE, Provider.ANTHROPIC)


class ExecutionMode(models.TextChoices):
    LIVE = "live", "Live (one call at a time, results within minutes)"
    BATCH = "batch", "Batch (provider batch API: about half the price, results within 24 hours)"


class GenerationRun(RunJob):
    """A toolkit version × endpoints × trials. Each unit (item, slot values, endpoint, trial) yields one Output."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="generation_runs")
    toolkit = models.ForeignKey(Toolkit, null=True, blank=True, on_delete=models.RESTRICT, related_name="runs")
    endpoints = models.ManyToManyField(ModelEndpoint, related_name="runs")
    trials = models.PositiveIntegerField(default=1)
    param_overrides = models.JSONField(default=dict, blank=True)
    system_prompt = models.TextField(blank=True)
    contexts = models.JSONField(
        default=list,
        blank=True,
        help_text="Contexts the prompts are asked in: [{key, persona, turns}]; empty: none. "
        "Each unit is context × prompt; the persona is the system message.",
    )
    context_source = models.CharField(max_length=300, blank=True, help_text="Where the contexts came from, e.g. a set.")
    is_import = models.BooleanField(default=False, help_text="Holds outputs imported from elsewhere.")
    execution_mode = models.CharField(max_length=10, choices=ExecutionMode.choices, default=ExecutionMode.LIVE)
    # name, created_by and created_at (newest first) come from RunJob; status, progress, leases, cancel flag,
    # message, started_by and timestamps from the job engine's Job.


class OutputStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    IN_FLIGHT = "in_flight", "In flight"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class Output(models.Model):
    """One story or answer: the result of one unit of a run, or an imported text."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="outputs")
    run = models.ForeignKey(GenerationRun, on_delete=models.CASCADE, related_name="outputs")
    item = models.ForeignKey(PromptItem, null=True, blank=True, on_delete=models.RESTRICT, related_name="outputs")
    endpoint = models.ForeignKey(
        ModelEndpoint, null=True, blank=True, on_delete=models.RESTRICT, related_name="outputs"
    )
    model_name = models.CharField(
        max_length=300, help_text="The model that wrote it (declared for manual/imported text)."
    )
    trial = models.PositiveIntegerField(default=1)
    context_key = models.CharField(max_length=200, default="", blank=True, help_text="The run context it was asked in.")
    variant_key = models.CharField(
        max_length=500, default="", blank=True, help_text="Canonical slot values; '' without slots."
    )
    slot_values = models.JSONField(default=dict, blank=True)
    prompt_text = models.TextField(blank=True, help_text="The rendered prompt.")
    text = models.TextField(
        blank=True, help_text="Plain text; line endings normalised to \\n. Offsets count code points."
    )
    external_id = models.CharField(max_length=200, blank=True, help_text="Id in the source it was imported from.")
    status = models.CharField(max_length=20, choices=OutputStatus.choices, default=OutputStatus.PENDING, db_index=True)
    error = models.TextField(blank=True)
    finish_reason = models.CharField(max_length=50, blank=True)
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    provenance = models.JSONField(
        default=dict, blank=True, help_text="Where the text came from: source, file, who entered it."
    )
    created_at = models.DateTimeField(default=timezone.now)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "item", "variant_key", "endpoint", "trial", "context_key"],
                name="unique_output_unit_in_context",
            ),
        ]
        indexes = [
            models.Index(fields=["run", "status"]),
            models.Index(fields=["study", "item"]),
            models.Index(fields=["study", "model_name"], name="output_study_model"),
            models.Index(fields=["study", "-run", "id"], name="output_viewer_order"),
        ]
        ordering = ["run", "item__number", "endpoint", "variant_key", "trial"]

    def __str__(self):
        return f"{self.model_name} · item {self.item.number if self.item_id else '-'} · trial {self.trial}"

    @property
    def model_identity(self):
        return self.model_name.strip().lower()


class CallOutcome(models.TextChoices):
    UNKNOWN = "unknown", "Unknown (sent, no answer recorded)"
    OK = "ok", "Answered"
    ERROR = "error", "Error"


class ProviderCall(models.Model):
    """One attempt of one LLM call, from any step (generation, judging, psychometrics, code discovery).

    Written before the request is sent (outcome unknown, estimated tokens and cost) and completed after, so a worker
    that dies mid-call leaves an attempt that still counts in the totals."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="provider_calls")
    endpoint = models.ForeignKey(ModelEndpoint, null=True, blank=True, on_delete=models.SET_NULL, related_name="calls")
    purpose = models.CharField(max_length=30, db_index=True)  # generation, judging, psychometrics, discovery
    unit_ref = models.CharField(max_length=200, blank=True, help_text="e.g. output:123, verdict-batch:45")
    output = models.ForeignKey(Output, null=True, blank=True, on_delete=models.CASCADE, related_name="calls")
    provider = models.CharField(max_length=30)
    model = models.CharField(max_length=300)
    messages = models.JSONField(default=list)
    params = models.JSONField(default=dict)
    attempt = models.PositiveIntegerField(default=1)
    ok = models.BooleanField(default=False)
    response_text = models.TextField(blank=True)
    raw_response = models.JSONField(null=True, blank=True)
    finish_reason = models.CharField(max_length=50, blank=True)
    input_tokens = models.PositiveIntegerField(null=True, blank=True)
    output_tokens = models.PositiveIntegerField(null=True, blank=True)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    latency_ms = models.PositiveIntegerField(null=True, blank=True)
    http_status = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    retry_after_s = models.FloatField(null=True, blank=True)
    backoff_s = models.FloatField(null=True, blank=True, help_text="Wait before the next attempt.")
    outcome = models.CharField(max_length=10, choices=CallOutcome.choices, default=CallOutcome.UNKNOWN, db_index=True)
    started_at = models.DateTimeField(default=timezone.now)
    completed_at = models.DateTimeField(null=True, blank=True)
    batch_id = models.CharField(max_length=200, blank=True, help_text="The provider's batch id (batch mode).")
    custom_id = models.CharField(max_length=200, blank=True, help_text="The request's custom_id in its batch.")

    class Meta:
        ordering = ["-started_at"]
        indexes = [models.Index(fields=["study", "purpose"])]

    def __str__(self):
        return f"{self.purpose} {self.model} attempt {self.attempt}"


class SpendingLedger(models.Model):
    """Tokens and cost of every provider call, per study, connection and calendar month (UTC).

    `cost_usd` is the sum of the attempt rows' costs (an open attempt counts at its estimate until it closes);
    `reserved_usd` holds submitted batches' estimates until their answers are collected. Caps compare
    cost + reserved with the study's and the connection's caps before each call."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="spending")
    connection = models.ForeignKey(ProviderConnection, on_delete=models.PROTECT, related_name="spending")
    month = models.DateField(help_text="The first day of the month.")
    calls = models.IntegerField(default=0)  # not Positive: a correction row may carry -1 (PostgreSQL checks it)
    input_tokens = models.BigIntegerField(default=0)
    output_tokens = models.BigIntegerField(default=0)
    cost_usd = models.DecimalField(max_digits=16, decimal_places=6, default=0)
    reserved_usd = models.DecimalField(max_digits=16, decimal_places=6, default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["study", "connection", "month"], name="unique_spending_month")]
        ordering = ["study", "month", "connection"]

    def __str__(self):
        return f"{self.study} · {self.connection} · {self.month:%Y-%m}: ${self.cost_usd}"


class BatchStatus(models.TextChoices):
    SUBMITTING = "submitting", "Submitting"
    SUBMITTED = "submitted", "Submitted"
    IN_PROGRESS = "in_progress", "In progress"
    CANCELLING = "cancelling", "Cancelling"
    ENDED = "ended", "Ended"
    EXPIRED = "expired", "Expired"
    CANCELLED = "cancelled", "Cancelled"
    FAILED = "failed", "Failed"


OPEN_BATCH = (BatchStatus.SUBMITTING, BatchStatus.SUBMITTED, BatchStatus.IN_PROGRESS, BatchStatus.CANCELLING)


class ProviderBatch(models.Model):
    """One batch submitted to a provider's batch API for the units of one job (any job kind).

    The row is written before the upload (status submitting, with its units), so a crash never leaves a batch
    the database does not know; resume finds open batches by their provider ids and never submits a unit twice."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="provider_batches")
    job_kind = models.CharField(max_length=50)
    job_id = models.PositiveBigIntegerField()
    endpoint = models.ForeignKey(ModelEndpoint, null=True, on_delete=models.SET_NULL, related_name="batches")
    provider = models.CharField(max_length=30)
    number = models.PositiveIntegerField(default=1)
    provider_batch_id = models.CharField(max_length=200, blank=True)
    input_file_id = models.CharField(max_length=200, blank=True)
    status = models.CharField(max_length=20, choices=BatchStatus.choices, default=BatchStatus.SUBMITTING)
    provider_status = models.CharField(max_length=30, blank=True)
    units = models.JSONField(default=list, help_text="[[custom_id, unit key], ...] of the requests in the batch.")
    request_count = models.PositiveIntegerField(default=0)
    size_bytes = models.PositiveBigIntegerField(default=0)
    counts = models.JSONField(default=dict, blank=True, help_text="Request counts from the provider.")
    succeeded = models.PositiveIntegerField(default=0)
    errored = models.PositiveIntegerField(default=0)
    estimated_cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    cost_usd = models.DecimalField(max_digits=12, decimal_places=6, null=True, blank=True)
    error = models.TextField(blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    submitted_at = models.DateTimeField(null=True, blank=True)
    ended_at = models.DateTimeField(null=True, blank=True)
    polled_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["job_kind", "job_id", "number"]
        indexes = [
            models.Index(fields=["job_kind", "job_id"], name="batch_job"),
            models.Index(fields=["status"], name="batch_status"),
        ]

    def __str__(self):
        return f"{self.provider} batch {self.provider_batch_id or '(submitting)'}"

    @property
    def is_open(self):
        return self.status in OPEN_BATCH
