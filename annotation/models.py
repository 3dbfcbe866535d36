"""Codebooks (code trees, merge history), codings, memos, assignments and gender attributions."""

import uuid

from django.conf import settings
from django.db import models
from django.utils import timezone

from generation.models import ExecutionMode, GenerationRun, Output, PromptItem
from stereoscope.bulk import KeptCounts
from stereoscope.jobs.models import Job
from stereoscope.models import Study
from stereoscope.versioning import VersionedModel


class Codebook(VersionedModel):
    """A versioned code system. Locked versions are read-only; edits then go to a new version."""

    guid = models.UUIDField(default=uuid.uuid4, editable=False, help_text="REFI-QDA project-level identity.")


class GenderTag(models.TextChoices):
    NONE = "", "—"
    FEMALE = "F", "F"
    MALE = "M", "M"


class CodeKind(models.TextChoices):
    A_PRIORI = "a_priori", "A priori"
    INDUCTIVE = "inductive", "Inductive"


class VariableScope(models.TextChoices):
    NONE = "", "—"
    STORY = "story", "One value per story"
    SPAN = "span", "One value per span"


class Code(models.Model):
    codebook = models.ForeignKey(Codebook, on_delete=models.CASCADE, related_name="codes")
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.CASCADE, related_name="children")
    name = models.CharField(max_length=300)
    description = models.TextField(blank=True)
    color = models.CharField(max_length=7, default="#4c6ef5")
    gender_tag = models.CharField(max_length=1, choices=GenderTag.choices, default="", blank=True)
    kind = models.CharField(max_length=20, choices=CodeKind.choices, default=CodeKind.A_PRIORI)
    codable = models.BooleanField(default=True, help_text="False for dimensions and groups.")
    item = models.ForeignKey(PromptItem, null=True, blank=True, on_delete=models.SET_NULL, related_name="codes")
    stereotype = models.TextField(blank=True)
    shortcut = models.CharField(max_length=1, blank=True)
    order = models.PositiveIntegerField(default=0)
    merged_into = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.SET_NULL, related_name="merged_from"
    )
    active = models.BooleanField(default=True, help_text="False after being merged away; undo re-activates.")
    guid = models.UUIDField(default=uuid.uuid4, unique=True, help_text="Stable REFI-QDA GUID.")
    frequency_reference = models.PositiveIntegerField(
        null=True, blank=True, help_text="Published frequency (built-ins)."
    )
    # A group with a scope is one categorical variable whose values are its codable children.
    variable_scope = models.CharField(max_length=5, choices=VariableScope.choices, default="", blank=True)
    variable_ordered = models.BooleanField(default=False, help_text="The variable's values are ordered (by position).")
    gold_rule = models.CharField(
        max_length=10,
        choices=[("majority", "strict majority"), ("plurality", "plurality")],
        default="majority",
        help_text="A variable's gold label: strict majority (more than half of the raters) or plurality.",
    )
    gold_min_raters = models.PositiveSmallIntegerField(
        default=2, help_text="A variable's gold label needs at least this many coders on the unit."
    )
    exclude_value = models.BooleanField(
        default=False,
        help_text="A value such as 'uncertain': any rater choosing it drops the unit from agreement and contrasts.",
    )
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["codebook", "order", "id"]
        indexes = [models.Index(fields=["codebook", "parent"])]

    def __str__(self):
        return self.name

    def ancestors(self) -> list["Code"]:
        """Parents from the root down, excluding self (uses the loaded parent chain)."""
        chain, node, seen = [], self.parent, set()
        while node is not None and node.pk not in seen:
            seen.add(node.pk)
            chain.append(node)
            node = node.parent
        return list(reversed(chain))

    def dimension(self):
        """The top-level ancestor when it is a non-codable root, else None."""
        chain = self.ancestors() + [self]
        root = chain[0]
        if root.parent_id is None and not root.codable:
            return root
        return None

    @property
    def is_variable(self):
        return bool(self.variable_scope) and not self.codable

    def path(self):
        return "/".join(c.name for c in self.ancestors() + [self])


class Coding(models.Model):
    """A code applied to a span of an output (code-point offsets into Output.text) or to the whole output."""

    output = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="codings")
    code = models.ForeignKey(Code, on_delete=models.CASCADE, related_name="codings")
    coder = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="codings")
    codebook = models.ForeignKey(Codebook, on_delete=models.CASCADE, related_name="codings")
    start = models.PositiveIntegerField(null=True, blank=True)
    end = models.PositiveIntegerField(null=True, blank=True)
    quote = models.TextField(blank=True)
    guid = models.UUIDField(default=uuid.uuid4, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["output", "start", "id"]
        indexes = [
            models.Index(fields=["output", "coder"]),
            models.Index(fields=["code"]),
            # a coder's codings; a blind coder's frequency table (counts and distinct stories per code) from the
            # index alone, already in code order (issue 36: a sort of 500k rows spilled to disk, 1.6 s)
            models.Index(fields=["codebook", "coder", "code", "output"], name="coding_coder_frequency_idx"),
            # frequency tables: counts and distinct stories per code from the index alone
            models.Index(fields=["codebook", "code", "output"], name="coding_frequency_idx"),
        ]

    def __str__(self):
        where = "document" if self.start is None else f"{self.start}-{self.end}"
        return f"{self.code} @ {where}"

    @property
    def is_document_level(self):
        return self.start is None and self.end is None


class Memo(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="memos")
    author = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="memos")
    coding = models.ForeignKey(Coding, null=True, blank=True, on_delete=models.CASCADE, related_name="memos")
    code = models.ForeignKey(Code, null=True, blank=True, on_delete=models.CASCADE, related_name="memos")
    output = models.ForeignKey(Output, null=True, blank=True, on_delete=models.CASCADE, related_name="memos")
    text = models.TextField()
    guid = models.UUIDField(default=uuid.uuid4, unique=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["created_at", "id"]
        constraints = [
            models.CheckConstraint(
                condition=(
                    models.Q(coding__isnull=False, code__isnull=True, output__isnull=True)
                    | models.Q(coding__isnull=True, code__isnull=False, output__isnull=True)
                    | models.Q(coding__isnull=True, code__isnull=True, output__isnull=False)
                ),
                name="memo_exactly_one_target",
            )
        ]

    def __str__(self):
        return self.text[:60]


class OperationKind(models.TextChoices):
    MERGE = "merge", "Merge"
    MOVE = "move", "Move"
    SPLIT = "split", "Split"
    RENAME = "rename", "Rename"
    CREATE = "create", "Create"


class CodeOperation(models.Model):
    """One merge / move / split / rename / create, with enough in `payload` to undo it exactly."""

    codebook = models.ForeignKey(Codebook, on_delete=models.CASCADE, related_name="operations")
    kind = models.CharField(max_length=20, choices=OperationKind.choices)
    actor = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    payload = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)
    undone_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"{self.kind} #{self.pk}"


class AssignmentStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    DONE = "done", "Done"


class CodingMode(models.TextChoices):
    BLIND = "blind", "Blind (own codings only)"
    CONSENSUS = "consensus", "Consensus (everyone's codings)"


class AssignmentPlan(models.Model):
    """One planning of assignments (form, API or recipe): what was asked, so a recipe can say what the study did."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="assignment_plans")
    codebook = models.ForeignKey(Codebook, on_delete=models.CASCADE, related_name="assignment_plans")
    runs = models.ManyToManyField(GenerationRun, blank=True, related_name="+", help_text="The runs sampled from.")
    coders = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="+")
    k = models.PositiveIntegerField(help_text="Coders per story (the overlap) as planned.")
    strategy = models.CharField(max_length=30)
    seed = models.IntegerField(default=0)
    mode = models.CharField(max_length=10, choices=CodingMode.choices, default=CodingMode.BLIND)
    sample_size = models.PositiveIntegerField(null=True, blank=True, help_text="N stories; empty: every story.")
    sample_seed = models.IntegerField(null=True, blank=True)
    stratify = models.CharField(max_length=20, blank=True, default="model_item")
    stories = models.PositiveIntegerField(default=0)
    assignments_made = models.PositiveIntegerField(default=0)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["codebook", "created_at", "id"]

    def __str__(self):
        return f"{self.codebook} · plan {self.pk}"


class Assignment(models.Model):
    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="assignments")
    codebook = models.ForeignKey(Codebook, on_delete=models.CASCADE, related_name="assignments")
    output = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="assignments")
    coder = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments")
    status = models.CharField(max_length=10, choices=AssignmentStatus.choices, default=AssignmentStatus.PENDING)
    mode = models.CharField(max_length=10, choices=CodingMode.choices, default=CodingMode.BLIND)
    position = models.PositiveIntegerField(default=0, help_text="Order in the coder's queue.")
    plan = models.ForeignKey(
        AssignmentPlan, null=True, blank=True, on_delete=models.SET_NULL, related_name="assignments"
    )
    created_at = models.DateTimeField(default=timezone.now)
    completed_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["codebook", "output", "coder"], name="unique_assignment")]
        ordering = ["codebook", "coder", "position", "id"]
        indexes = [
            models.Index(fields=["study", "coder", "status"]),
            models.Index(fields=["codebook", "coder", "status", "position"], name="assignment_queue_idx"),
            models.Index(fields=["codebook", "coder", "position"], name="assignment_order_idx"),
            # a coder's consensus assignments (few): decides whether blind reads need the consensus subquery
            models.Index(
                fields=["coder", "codebook", "output"],
                condition=models.Q(mode="consensus"),
                name="assignment_consensus_idx",
            ),
        ]

    def __str__(self):
        return f"{self.coder} · {self.output_id} · {self.status}"


class QueueProgress(models.Model):
    """A coder's queue for one codebook in two numbers: stories assigned and stories done, so the workspace shows
    progress without counting the queue (a count over 100k assignments on every open, issue 36).

    Database triggers on annotation_assignment keep it (QUEUE_PROGRESS below, stereoscope.bulk.keep_counts): every
    insert, update and delete, whoever writes it (services, bulk inserts, queryset updates, COPY, cascades). Nothing
    else writes it. Annotation installs the triggers after every migrate (apps.py), and counts afresh when it has to
    install them: a new database, one built from the models (the tests'), SQLite rebuilding annotation_assignment
    in a migration (which drops its triggers). tests/annotation/test_queue_progress.py checks every kind of write."""

    codebook = models.ForeignKey(Codebook, on_delete=models.CASCADE, related_name="+")
    coder = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    total = models.IntegerField(default=0)
    done = models.IntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["codebook", "coder"], name="unique_queue_progress")]
        verbose_name_plural = "queue progress"

    def __str__(self):
        return f"{self.coder} · {self.codebook_id}: {self.done} / {self.total}"


QUEUE_PROGRESS = KeptCounts(
    name="annotation_queue_progress",
    source=Assignment._meta.db_table,
    target=QueueProgress._meta.db_table,
    keys=("codebook_id", "coder_id"),
    counts=(("total", "TRUE"), ("done", f"{{row}}.status = '{AssignmentStatus.DONE.value}'")),
)


class AttributedGender(models.TextChoices):
    FEMALE = "F", "Female"
    MALE = "M", "Male"
    NON_BINARY = "nonbinary", "Non-binary"
    MIXED = "mixed", "Mixed"
    UNCLEAR = "unclear", "Unclear"


class GenderAttribution(models.Model):
    """A coder's judgement of the gender of the story's subject."""

    output = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="gender_attributions")
    coder = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="gender_attributions")
    gender = models.CharField(max_length=10, choices=AttributedGender.choices)
    character = models.CharField(max_length=200, blank=True, help_text="Which character, e.g. the name in the story.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["output", "coder"], name="unique_gender_attribution")]

    def __str__(self):
        return f"{self.output_id} · {self.coder} · {self.gender}"


class DiscoveryStatus(models.TextChoices):
    """The status of one discovery request (the job's own status is the engine's)."""

    PENDING = "pending", "Pending"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class CodeDiscovery(Job):
    """One LLM-assisted code discovery, a job on the one engine: models read a prompt, its target stereotype and
    sampled stories and propose codes. Its units are its requests: one per endpoint and group of stories."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="code_discoveries")
    codebook = models.ForeignKey(Codebook, on_delete=models.CASCADE, related_name="discoveries")
    endpoints = models.ManyToManyField("generation.ModelEndpoint", related_name="code_discoveries")
    item = models.ForeignKey(
        PromptItem, null=True, blank=True, on_delete=models.SET_NULL, related_name="code_discoveries"
    )
    sample_size = models.PositiveIntegerField(default=5, help_text="Stories per request.")
    story_groups = models.PositiveIntegerField(
        default=1, help_text="Groups of sampled stories (no story in two groups); each endpoint reads each group."
    )
    seed = models.IntegerField(default=0)
    execution_mode = models.CharField(max_length=10, choices=ExecutionMode.choices, default=ExecutionMode.LIVE)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self):
        return f"discovery #{self.pk}"


class DiscoveryRequest(models.Model):
    """One request of a discovery (the job's unit): one endpoint reads one group of sampled stories."""

    discovery = models.ForeignKey(CodeDiscovery, on_delete=models.CASCADE, related_name="requests")
    number = models.PositiveIntegerField(default=1)
    endpoint = models.ForeignKey(
        "generation.ModelEndpoint", null=True, on_delete=models.SET_NULL, related_name="discovery_requests"
    )
    group = models.PositiveIntegerField(default=1)
    output_ids = models.JSONField(default=list, blank=True, help_text="The sampled stories, in prompt order.")
    messages = models.JSONField(default=list, blank=True)
    status = models.CharField(max_length=10, choices=DiscoveryStatus.choices, default=DiscoveryStatus.PENDING)
    error = models.TextField(blank=True)
    response_text = models.TextField(blank=True)
    provider_call = models.ForeignKey(
        "generation.ProviderCall", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["discovery", "number", "id"]
        constraints = [models.UniqueConstraint(fields=["discovery", "number"], name="unique_discovery_request")]

    @property
    def unit_ref(self):
        return f"discovery-request:{self.pk}"

    def __str__(self):
        return f"discovery #{self.discovery_id} request {self.number}"


class SuggestionStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    ACCEPTED = "accepted", "Accepted"
    REJECTED = "rejected", "Rejected"


class CodeSuggestion(models.Model):
    discovery = models.ForeignKey(CodeDiscovery, on_delete=models.CASCADE, related_name="suggestions")
    request = models.ForeignKey(
        DiscoveryRequest, null=True, blank=True, on_delete=models.CASCADE, related_name="suggestions"
    )
    order = models.PositiveIntegerField(default=0)
    name = models.CharField(max_length=300)
    description = models.TextField(blank=True)
    gender_tag = models.CharField(max_length=1, choices=GenderTag.choices, default="", blank=True)
    example = models.TextField(blank=True, help_text="A quote the model gave as an example.")
    status = models.CharField(max_length=10, choices=SuggestionStatus.choices, default=SuggestionStatus.PENDING)
    code = models.ForeignKey(Code, null=True, blank=True, on_delete=models.SET_NULL, related_name="suggestions")
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["discovery", "request", "order", "id"]

    def __str__(self):
        return self.name
