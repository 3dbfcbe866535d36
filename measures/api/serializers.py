"""The serializers of the measures API (the viewsets are in views.py)."""

from rest_framework import serializers

from stereoscope.api_bases import JobSerializer, VersionedSerializer

from .. import scoring, services
from ..lexical import OR_CONVENTIONS
from ..models import (
    ContrastResult,
    Lexicon,
    LexiconCategory,
    LexiconExclusion,
    MeasureRun,
    OutputMeasure,
    TrainedClassifier,
)


class LexiconCategorySerializer(serializers.ModelSerializer):
    warnings = serializers.SerializerMethodField()

    class Meta:
        model = LexiconCategory
        fields = [
            "id",
            "lexicon",
            "key",
            "name",
            "description",
            "direction",
            "language",
            "match_mode",
            "words",
            "color",
            "order",
            "source",
            "warnings",
        ]
        read_only_fields = ["lexicon", "order"]

    def get_warnings(self, obj) -> list[str]:
        return services.category_warnings(obj)


class LexiconExclusionSerializer(serializers.ModelSerializer):
    class Meta:
        model = LexiconExclusion
        fields = ["id", "lexicon", "category", "phrase", "is_regex", "note", "created_at"]
        read_only_fields = ["created_at"]


class LexiconSerializer(VersionedSerializer):
    categories = LexiconCategorySerializer(many=True, read_only=True)
    exclusions = LexiconExclusionSerializer(many=True, read_only=True)

    class Meta:
        model = Lexicon
        fields = ["source", "count_policy", "is_builtin", "categories", "exclusions"]


class LexiconImportSerializer(serializers.Serializer):
    """The lexicon JSON format (see measures/services.py)."""

    name = serializers.CharField()
    description = serializers.CharField(required=False, allow_blank=True)
    source = serializers.CharField(required=False, allow_blank=True)
    count_policy = serializers.CharField(required=False)
    categories = serializers.ListField(child=serializers.DictField())
    exclusions = serializers.ListField(child=serializers.DictField(), required=False)


class HighlightRequestSerializer(serializers.Serializer):
    text = serializers.CharField(max_length=200_000, allow_blank=True, trim_whitespace=False)
    language = serializers.CharField(required=False, allow_blank=True)


class HighlightMatchSerializer(serializers.Serializer):
    category = serializers.IntegerField()
    category_name = serializers.CharField()
    color = serializers.CharField()
    entry = serializers.CharField()
    start = serializers.IntegerField()
    end = serializers.IntegerField()
    text = serializers.CharField()


class MeasureRunSerializer(JobSerializer):
    progress_summary = serializers.SerializerMethodField()

    class Meta:
        model = MeasureRun
        fields = [
            "name",
            "lexicons",
            "source_runs",
            "classifier",
            "classifier_path",
            "classifier_model_id",
            "classifier_unit",
            "trained_classifier",
            "classifier_info",
            "gender_sources",
            "name_genders",
            "zero_policy",
            "or_orientation",
            "success_filter",
            "success_keywords",
            "nli_path",
            "nli_model_id",
            "context_slot",
            "nli_info",
            "progress_summary",
        ]
        read_only_fields = ["classifier_info", "nli_info"]

    def get_progress_summary(self, obj) -> dict:
        return scoring.progress_of(obj)


class MeasureRunCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    lexicons = serializers.ListField(child=serializers.IntegerField(), required=False)
    source_runs = serializers.ListField(child=serializers.IntegerField(), required=False)
    classifier = serializers.ChoiceField(choices=["", "vader", "transformers", "trained"], required=False, default="")
    trained_classifier = serializers.IntegerField(
        required=False, allow_null=True, default=None, help_text="With classifier 'trained': a trained classifier's id."
    )
    classifier_path = serializers.CharField(required=False, allow_blank=True, default="")
    classifier_model_id = serializers.CharField(required=False, allow_blank=True, default="")
    classifier_unit = serializers.ChoiceField(choices=["sentence", "document"], required=False, default="sentence")
    gender_sources = serializers.ListField(child=serializers.CharField(), required=False)
    name_genders = serializers.DictField(child=serializers.CharField(), required=False)
    zero_policy = serializers.ChoiceField(choices=["exclude", "smooth"], required=False, default="exclude")
    or_orientation = serializers.ChoiceField(choices=list(OR_CONVENTIONS), required=False, default="per_category")
    success_filter = serializers.BooleanField(required=False, default=False)
    success_keywords = serializers.ListField(child=serializers.CharField(allow_blank=True), required=False)
    nli_path = serializers.CharField(required=False, allow_blank=True, default="")
    nli_model_id = serializers.CharField(required=False, allow_blank=True, default="")
    context_slot = serializers.CharField(required=False, allow_blank=True, default="")
    start = serializers.BooleanField(required=False, default=False)


class OutputMeasureSerializer(serializers.ModelSerializer):
    model_name = serializers.CharField(source="output.model_name", read_only=True)

    class Meta:
        model = OutputMeasure
        fields = [
            "id",
            "output",
            "model_name",
            "language",
            "word_count",
            "sentence_count",
            "gender",
            "gender_source",
            "gender_detail",
            "category_counts",
            "label_shares",
            "doc_label",
            "doc_score",
            "mean_score",
            "hallucination_share",
            "success_reason",
        ]


class ContrastResultSerializer(serializers.ModelSerializer):
    class Meta:
        model = ContrastResult
        fields = ["id", "kind", "measure", "grouping", "group", "result", "created_at"]


class TrainedClassifierSerializer(serializers.ModelSerializer):
    class Meta:
        model = TrainedClassifier
        fields = [
            "id",
            "name",
            "version",
            "variable",
            "labels",
            "features",
            "params",
            "k",
            "seed",
            "training_data",
            "folds",
            "metrics",
            "library_versions",
            "created_at",
        ]
        read_only_fields = fields


class TrainClassifierSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    variable = serializers.IntegerField(help_text="A categorical variable (code group) of this study.")
    k = serializers.IntegerField(required=False, default=5, help_text="Folds of the stratified cross-validation.")
    seed = serializers.IntegerField(required=False, default=0)
    features = serializers.ChoiceField(
        choices=["auto", "tfidf", "embedding"],
        required=False,
        default="auto",
        help_text="auto: the local sentence-embedding model when one is configured.",
    )
