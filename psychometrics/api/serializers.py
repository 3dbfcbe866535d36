"""The serializers of the psychometrics API (the viewsets are in views.py)."""

from rest_framework import serializers

from generation import selectors as generation
from stereoscope.api_bases import JobSerializer, VersionedSerializer

from .. import extraction, prompts, runs
from ..models import Context, ContextSet, Instrument, InstrumentItem, PersonaSet, QuestionnaireRun, Response


class InstrumentItemSerializer(serializers.ModelSerializer):
    parallel_item = serializers.CharField(source="parallel.item_id", read_only=True, default=None)

    class Meta:
        model = InstrumentItem
        fields = ["item_id", "position", "text", "subscale", "reverse", "parallel_item"]


class InstrumentSerializer(VersionedSerializer):
    items = InstrumentItemSerializer(many=True, read_only=True)
    builtin = serializers.BooleanField(source="study.is_library", read_only=True)

    class Meta:
        model = Instrument
        fields = [
            "label",
            "source",
            "instruction",
            "scale_min",
            "scale_max",
            "scale_labels",
            "continuous",
            "subscales",
            "scoring",
            "missing_policy",
            "parallel_of",
            "builtin",
            "items",
        ]


class InstrumentImportSerializer(serializers.Serializer):
    spec = serializers.JSONField(help_text="The instrument JSON (see the minimal file in the docs).")


class PersonaSetSerializer(serializers.ModelSerializer):
    personas = serializers.SerializerMethodField()

    class Meta:
        model = PersonaSet
        fields = ["id", "name", "description", "template", "attributes", "created_at", "personas"]

    def get_personas(self, obj) -> list[dict]:
        return list(obj.personas.values("id", "key", "text", "attributes", "included", "exclude_reason", "twin_id"))


class PersonaSetCreateSerializer(serializers.Serializer):
    name = serializers.CharField()
    template = serializers.CharField(required=False, help_text="Generate: e.g. '{title} {surname}'.")
    attributes = serializers.JSONField(required=False, help_text="Generate: attribute lists.")
    personas = serializers.ListField(
        child=serializers.DictField(), required=False, help_text="Or: [{key?, text, ...}]."
    )


class QuestionnaireContextSerializer(serializers.ModelSerializer):
    class Meta:
        model = Context
        fields = ["id", "key", "persona", "turns", "attributes", "included", "exclude_reason", "twin"]


class ContextSetSerializer(serializers.ModelSerializer):
    contexts = QuestionnaireContextSerializer(many=True, read_only=True)

    class Meta:
        model = ContextSet
        fields = ["id", "name", "description", "source", "seed", "created_at", "contexts"]


class ContextSetCreateSerializer(serializers.Serializer):
    name = serializers.CharField()
    persona_set = serializers.IntegerField(required=False, help_text="Build from this persona set…")
    contexts = serializers.ListField(
        child=serializers.DictField(),
        required=False,
        help_text="…or from [{key?, persona?, turns: [{role, content}]}].",
    )
    n = serializers.IntegerField(required=False, allow_null=True, min_value=1, help_text="Seeded random sample size.")
    seed = serializers.IntegerField(required=False, default=0)


class IncludeSerializer(serializers.Serializer):
    context = serializers.IntegerField()
    included = serializers.BooleanField()
    reason = serializers.CharField(required=False, allow_blank=True, default="")


class QuestionnaireRunSerializer(JobSerializer):
    endpoints = serializers.PrimaryKeyRelatedField(many=True, queryset=generation.every_endpoint())
    instrument = serializers.PrimaryKeyRelatedField(queryset=Instrument.objects.all())
    context_set = serializers.PrimaryKeyRelatedField(
        queryset=ContextSet.objects.all(),
        allow_null=True,
        required=False,
        default=None,
        help_text="Empty (null): the bare questionnaire, each item in a fresh chat with no persona.",
    )
    template_key = serializers.ChoiceField(choices=list(prompts.TEMPLATES) + ["custom"], default="jung2025")
    extractors = serializers.ListField(child=serializers.ChoiceField(choices=extraction.EXTRACTORS), required=False)
    judge_endpoint = serializers.PrimaryKeyRelatedField(
        queryset=generation.every_endpoint(),
        allow_null=True,
        required=False,
        default=None,
        help_text="The judge model of the chain's last step (llm): reads answers the rules leave open.",
    )
    seeds = serializers.ListField(
        child=serializers.IntegerField(),
        required=False,
        default=list,
        help_text="One provider seed per repetition; empty: the endpoint's seed.",
    )
    counts = serializers.SerializerMethodField()

    class Meta:
        model = QuestionnaireRun
        fields = [
            "name",
            "instrument",
            "context_set",
            "endpoints",
            "repetitions",
            "seeds",
            "template_key",
            "custom_user",
            "custom_system",
            "option_format",
            "option_order",
            "option_numbering",
            "order_seed",
            "extractors",
            "judge_endpoint",
            "refusal_policy",
            "json_field",
            "param_overrides",
            "audit_per_model",
            "execution_mode",
            "counts",
        ]

    def get_counts(self, run) -> dict:
        return runs.counts(run)["overall"]


class QuestionnaireResponseSerializer(serializers.ModelSerializer):
    item = serializers.CharField(source="item.item_id")
    context = serializers.CharField(source="context_key", read_only=True)
    status = serializers.CharField(read_only=True, help_text="pending, done or failed")
    extraction = serializers.CharField(
        read_only=True, help_text="ok, refused, inconclusive, not_present, or empty while pending"
    )

    class Meta:
        model = Response
        fields = [
            "id",
            "run",
            "item",
            "context",
            "endpoint",
            "model_name",
            "repetition",
            "seed",
            "options",
            "permutation",
            "status",
            "raw_text",
            "extraction",
            "extracted_code",
            "value",
            "extraction_method",
            "extraction_detail",
            "error",
            "audit_sampled",
            "completed_at",
        ]


class ExtractionAuditInputSerializer(serializers.Serializer):
    correct = serializers.BooleanField()
    corrected_value = serializers.FloatField(required=False, allow_null=True)
    note = serializers.CharField(required=False, allow_blank=True, default="")
