"""Lexicons (versioned per study), measure runs, per-output and per-sentence measures, and stored contrasts.

Measures only read other apps' tables (outputs, slot values, gender attributions); everything it writes is here.
"""

from django.conf import settings
from django.db import models
from django.utils import timezone

from generation.models import GenerationRun, Output
from stereoscope.jobs.models import RunJob
from stereoscope.models import Study
from stereoscope.versioning import VersionedModel

from .lexical import COUNT_POLICIES, DIRECTIONS, MODES, OR_CONVENTIONS, ZERO_POLICIES
from .sentence_pack import SentenceRow, unpack


class Lexicon(VersionedModel):
    """A versioned set of word-list categories. Read-only once a measure run uses it; edits make a new version."""

    source = models.CharField(max_length=300, blank=True)
    count_policy = models.CharField(
        max_length=20,
        choices=[(p, p) for p in COUNT_POLICIES],
        default="per_token",
        help_text="per_entry: each list entry counts its matches (Jung); per_token: a word counts once per category.",
    )


class Direction(models.TextChoices):
    MALE = "male", "Male-typed"
    FEMALE = "female", "Female-typed"
    NONE = "none", "None"


class MatchMode(models.TextChoices):
    PREFIX = "prefix", "Prefix with a leading word boundary (Jung)"
    WHOLE_WORD = "whole_word", "Whole word"
    SUBSTRING = "substring", "Substring (anywhere)"
    REGEX = "regex", "Regular expression"


assert set(Direction.values) == set(DIRECTIONS) and set(MatchMode.values) == set(MODES)


class LexiconCategory(models.Model):
    lexicon = models.ForeignKey(Lexicon, on_delete=models.CASCADE, related_name="categories")
    key = models.SlugField(max_length=60)
    name = models.CharField(max_length=200)
    description = models.TextField(blank=True)
    direction = models.CharField(max_length=10, choices=Direction.choices, default=Direction.NONE)
    language = models.CharField(
        max_length=10, blank=True, default="en", help_text="Applied to outputs in this language; blank = any."
    )
    match_mode = models.CharField(max_length=20, choices=MatchMode.choices, default=MatchMode.PREFIX)
    words = models.JSONField(default=list, blank=True, help_text="Entries in order; duplicates are kept.")
    color = models.CharField(max_length=7, default="#4c6ef5")
    order = models.PositiveIntegerField(default=0)
    source = models.CharField(max_length=300, blank=True)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["lexicon", "key"], name="unique_lexicon_category_key")]
        ordering = ["lexicon", "order", "key"]
        verbose_name_plural = "lexicon categories"

    def __str__(self):
        return f"{self.lexicon.name}: {self.name}"


class LexiconExclusion(models.Model):
    """The manual review list: false matches to drop (a phrase at a word start, or a regex)."""

    lexicon = models.ForeignKey(Lexicon, on_delete=models.CASCADE, related_name="exclusions")
    category = models.ForeignKey(
        LexiconCategory,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="exclusions",
        help_text="Blank: applies to every category.",
    )
    phrase = models.CharField(max_length=300)
    is_regex = models.BooleanField(default=False)
    note = models.CharField(max_length=300, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["lexicon", "phrase"]

    def __str__(self):
        return self.phrase


class ClassifierKind(models.TextChoices):
    NONE = "", "No classifier"
    VADER = "vader", "VADER sentiment"
    TRANSFORMERS = "transformers", "transformers text classification (model on disk)"
    TRAINED = "trained", "A classifier trained here on gold labels"


class ClassifierUnit(models.TextChoices):
    SENTENCE = "sentence", "Each sentence"
    DOCUMENT = "document", "Whole document"


class TrainedClassifier(models.Model):
    """A linear classifier trained on a categorical variable's gold labels, with its cross-validation, training data,
    folds and seed. Versioned by name; never changed after training (retraining makes a new version)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="trained_classifiers")
    name = models.CharField(max_length=200)
    version = models.PositiveIntegerField(default=1)
    variable = models.ForeignKey(
        "annotation.Code",
        null=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The categorical variable whose gold labels it learned.",
    )
    labels = models.JSONField(default=list)
    features = models.CharField(max_length=50, default="tfidf")
    params = models.JSONField(default=dict, blank=True)
    k = models.PositiveIntegerField(default=5)
    seed = models.IntegerField(default=0)
    training_data = models.JSONField(default=list, help_text="[[output id, gold label], ...] in training order.")
    folds = models.JSONField(default=list, help_text="Per fold: train/test positions, accuracy, macro-F1.")
    metrics = models.JSONField(default=dict, help_text="Mean accuracy and macro-F1 over folds, confusion matrix.")
    model_blob = models.BinaryField(editable=False)
    library_versions = models.JSONField(default=dict, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["study", "name", "version"], name="unique_trained_classifier")]
        ordering = ["study", "name", "-version"]

    def __str__(self):
        return f"{self.name} v{self.version}"


class MeasureRun(RunJob):
    """Lexicons and an optional classifier applied to a study's outputs (all, or those of chosen generation runs)."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="measure_runs")
    lexicons = models.ManyToManyField(Lexicon, blank=True, related_name="measure_runs")
    source_runs = models.ManyToManyField(
        GenerationRun, blank=True, related_name="measure_runs", help_text="Empty: every finished output of the study."
    )
    classifier = models.CharField(max_length=20, choices=ClassifierKind.choices, blank=True, default="")
    classifier_path = models.CharField(max_length=500, blank=True, help_text="Folder of a transformers model on disk.")
    classifier_model_id = models.CharField(max_length=300, blank=True, help_text="Its name, e.g. sasha/regardv3.")
    classifier_unit = models.CharField(max_length=10, choices=ClassifierUnit.choices, default=ClassifierUnit.SENTENCE)
    trained_classifier = models.ForeignKey(
        TrainedClassifier, null=True, blank=True, on_delete=models.PROTECT, related_name="measure_runs"
    )
    classifier_info = models.JSONField(default=dict, blank=True, help_text="Model id, revision and label map, as run.")
    gender_sources = models.JSONField(
        default=list, blank=True, help_text='Order of sources, e.g. ["slots", "coders", "pronouns"].'
    )
    name_genders = models.JSONField(default=dict, blank=True, help_text='Extra given names, e.g. {"Anna": "F"}.')
    zero_policy = models.CharField(max_length=10, choices=[(p, p) for p in ZERO_POLICIES], default="exclude")
    or_orientation = models.CharField(
        max_length=20,
        choices=[(k, v) for k, v in OR_CONVENTIONS.items()],
        default="per_category",
        help_text="How category odds ratios are oriented.",
    )
    success_filter = models.BooleanField(default=False, help_text="Measure only successful generations (Wan et al.).")
    success_keywords = models.JSONField(default=list, blank=True, help_text='e.g. ["recommend"]')
    nli_path = models.CharField(max_length=500, blank=True, help_text="Folder of a local NLI model (hallucination).")
    nli_model_id = models.CharField(max_length=300, blank=True, help_text="Its name, e.g. the nli preset's model.")
    context_slot = models.CharField(
        max_length=100, blank=True, help_text="The slot holding each letter's source biography (context-based letters)."
    )
    nli_info = models.JSONField(default=dict, blank=True, help_text="NLI model id, revision and label map, as run.")
    # name, created_by, created_at and the order (newest first) come from RunJob; status, progress, leases, cancel
    # flag, message, started_by and timestamps from the job engine's Job.


class OutputMeasure(models.Model):
    run = models.ForeignKey(MeasureRun, on_delete=models.CASCADE, related_name="output_measures")
    output = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="measures")
    language = models.CharField(max_length=10, blank=True)
    word_count = models.PositiveIntegerField(default=0)
    sentence_count = models.PositiveIntegerField(default=0)
    gender = models.CharField(max_length=1, blank=True, help_text="Subject gender: F, M or blank (unknown).")
    gender_source = models.CharField(max_length=10, default="none")
    gender_detail = models.JSONField(default=dict, blank=True)
    category_counts = models.JSONField(default=dict, blank=True, help_text="{category id: matches}")
    label_shares = models.JSONField(default=dict, blank=True, help_text="{label: share of sentences}")
    doc_label = models.CharField(max_length=100, blank=True)
    doc_score = models.FloatField(null=True, blank=True)
    mean_score = models.FloatField(null=True, blank=True)
    hallucination_share = models.FloatField(
        null=True, blank=True, help_text="Share of sentences not entailed by the context slot (NLI)."
    )
    success_reason = models.CharField(
        max_length=20,
        blank=True,
        help_text="Why the success filter failed the output (empty, repetitive, "
        "no keyword); blank = passed or no filter. Failed outputs get "
        "no measures.",
    )
    created_at = models.DateTimeField(default=timezone.now)
    sentences_packed = models.BinaryField(
        default=b"",
        blank=True,
        editable=False,
        help_text="Each sentence's offsets and the classifier's label, score and scores (measures/sentence_pack.py); "
        "read with sentence_rows().",
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "output"], name="unique_output_measure")]
        ordering = ["run", "output_id"]

    def __str__(self):
        return f"{self.run} · output {self.output_id}"

    def sentence_rows(self) -> list[SentenceRow]:
        """[SentenceRow(index, start, end, label, score, scores)] of a per-sentence classifier, in sentence order."""
        return unpack(self.sentences_packed)


class WordCounts(models.Model):
    """The word counts of one batch of a run's scored outputs of one subject gender (success filter passed),
    written with their measures. Wan's per-word odds ratios add these up instead of reading and splitting every text
    again; they fall back to the texts when the batches do not cover exactly the run's outputs."""

    run = models.ForeignKey(MeasureRun, on_delete=models.CASCADE, related_name="word_counts")
    gender = models.CharField(max_length=1)
    output_ids = models.JSONField(default=list)
    counts = models.JSONField(default=dict, help_text="{lower-cased word: occurrences}")

    def __str__(self):
        return f"{self.run} · {self.gender} · {len(self.output_ids)} outputs"


class ContrastResult(models.Model):
    """One stored comparison (female vs male, twins, or a fairness check) of a measure run."""

    run = models.ForeignKey(MeasureRun, on_delete=models.CASCADE, related_name="contrasts")
    kind = models.CharField(max_length=30)  # category_or, context_score, word_or, welch, chi2, paired, fairness
    measure = models.CharField(max_length=200)
    grouping = models.CharField(max_length=100, default="overall")
    group = models.CharField(max_length=300, blank=True)
    result = models.JSONField(default=dict)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["run", "kind", "grouping", "group", "measure"]
        indexes = [models.Index(fields=["run", "kind"])]

    def __str__(self):
        return f"{self.kind} {self.measure} ({self.grouping}={self.group})"
