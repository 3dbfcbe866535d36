"""The serializers of the annotation API (the viewsets: codebooks.py, views.py, discovery.py)."""

from drf_spectacular.utils import extend_schema_field, inline_serializer
from rest_framework import serializers

from generation import selectors as generation
from generation.models import ExecutionMode
from generation.runs import batches
from stereoscope.api_bases import JobSerializer, VersionedSerializer

from .. import services
from ..assigning import STRATEGIES
from ..models import (
    Assignment,
    Code,
    Codebook,
    CodeDiscovery,
    CodeOperation,
    CodeSuggestion,
    Coding,
    CodingMode,
    DiscoveryRequest,
    GenderAttribution,
    Memo,
)


class CodebookSerializer(VersionedSerializer):
    code_count = serializers.SerializerMethodField()

    class Meta:
        model = Codebook
        fields = ["guid", "code_count"]
        read_only_fields = ["guid"]

    def get_code_count(self, codebook) -> int:
        return codebook.codes.filter(active=True, codable=True).count()


class AnnotationCodeSerializer(serializers.ModelSerializer):
    path = serializers.SerializerMethodField()
    dimension = serializers.SerializerMethodField()

    class Meta:
        model = Code
        fields = [
            "id",
            "codebook",
            "parent",
            "name",
            "description",
            "color",
            "gender_tag",
            "kind",
            "codable",
            "item",
            "stereotype",
            "shortcut",
            "order",
            "merged_into",
            "active",
            "guid",
            "frequency_reference",
            "path",
            "dimension",
        ]
        read_only_fields = ["merged_into", "active", "guid", "frequency_reference"]

    def get_path(self, code) -> str:
        return code.path()

    def get_dimension(self, code) -> int | None:
        dim = code.dimension()
        return dim.pk if dim else None


class CodeOperationSerializer(serializers.ModelSerializer):
    actor = serializers.CharField(source="actor.username", default=None, read_only=True)

    class Meta:
        model = CodeOperation
        fields = ["id", "codebook", "kind", "actor", "payload", "created_at", "undone_at"]


class CodingSerializer(serializers.ModelSerializer):
    coder = serializers.CharField(source="coder.username", read_only=True)
    code_name = serializers.CharField(source="code.name", read_only=True)
    offset_unit = serializers.ChoiceField(
        choices=["codepoint", "utf16"],
        write_only=True,
        required=False,
        help_text="Units of start/end on input; stored offsets are always code points.",
    )

    class Meta:
        model = Coding
        fields = [
            "id",
            "output",
            "code",
            "code_name",
            "codebook",
            "coder",
            "start",
            "end",
            "quote",
            "guid",
            "created_at",
            "updated_at",
            "offset_unit",
        ]
        read_only_fields = ["codebook", "quote", "guid", "created_at", "updated_at"]
        extra_kwargs = {"output": {"queryset": generation.every_output()}, "code": {"queryset": Code.objects.all()}}


class MemoSerializer(serializers.ModelSerializer):
    author = serializers.CharField(source="author.username", read_only=True)

    class Meta:
        model = Memo
        fields = ["id", "author", "coding", "code", "output", "text", "guid", "created_at", "updated_at"]
        read_only_fields = ["guid", "created_at", "updated_at"]


class AssignmentSerializer(serializers.ModelSerializer):
    coder = serializers.CharField(source="coder.username", read_only=True)

    class Meta:
        model = Assignment
        fields = ["id", "codebook", "output", "coder", "status", "mode", "position", "created_at", "completed_at"]
        read_only_fields = ["codebook", "output", "coder", "mode", "position", "created_at", "completed_at"]


class AssignmentPlanSerializer(serializers.Serializer):
    codebook = serializers.IntegerField()
    coders = serializers.ListField(child=serializers.CharField(), help_text="Usernames.")
    k = serializers.IntegerField(min_value=1, default=1)
    strategy = serializers.ChoiceField(choices=list(STRATEGIES), default="random_balanced")
    seed = serializers.IntegerField(default=0)
    mode = serializers.ChoiceField(choices=CodingMode.values, default=CodingMode.BLIND)
    run_ids = serializers.ListField(child=serializers.IntegerField(), required=False)
    output_ids = serializers.ListField(child=serializers.IntegerField(), required=False)
    sample_size = serializers.IntegerField(
        required=False,
        allow_null=True,
        help_text="N: a sample of N stories of the runs (run_ids), stratified by model × prompt; empty: every story.",
    )
    sample_seed = serializers.IntegerField(required=False, allow_null=True, help_text="Default: seed.")
    preview = serializers.BooleanField(default=False, help_text="Return the plan without creating anything.")


class GenderAttributionSerializer(serializers.ModelSerializer):
    coder = serializers.CharField(source="coder.username", read_only=True)

    class Meta:
        model = GenderAttribution
        fields = ["id", "output", "coder", "gender", "character", "created_at"]
        read_only_fields = ["created_at"]
        extra_kwargs = {"output": {"queryset": generation.every_output()}}


class CodeSuggestionSerializer(serializers.ModelSerializer):
    class Meta:
        model = CodeSuggestion
        fields = [
            "id",
            "request",
            "order",
            "name",
            "description",
            "gender_tag",
            "example",
            "status",
            "code",
            "decided_at",
        ]


class DiscoveryRequestSerializer(serializers.ModelSerializer):
    class Meta:
        model = DiscoveryRequest
        fields = [
            "id",
            "number",
            "endpoint",
            "group",
            "output_ids",
            "messages",
            "status",
            "error",
            "response_text",
            "provider_call",
            "finished_at",
        ]
        read_only_fields = fields


class CodeDiscoverySerializer(JobSerializer):
    """A discovery job: its requests (one per endpoint and group of stories), suggestions and batches."""

    requests = DiscoveryRequestSerializer(many=True, read_only=True)
    suggestions = CodeSuggestionSerializer(many=True, read_only=True)
    batches = serializers.SerializerMethodField(help_text="Provider batches (batch mode).")
    batch_cost = serializers.SerializerMethodField(help_text="Estimated and actual cost of the batches.")

    class Meta:
        model = CodeDiscovery
        fields = [
            "codebook",
            "endpoints",
            "item",
            "sample_size",
            "story_groups",
            "seed",
            "execution_mode",
            "requests",
            "suggestions",
            "batches",
            "batch_cost",
        ]
        read_only_fields = fields

    def _batches(self, obj):

        cache = self.context.setdefault("_batches", {})
        if obj.pk not in cache:
            cache[obj.pk] = batches.summary_data(services.DISCOVERY_JOB.name, obj.pk)
        return cache[obj.pk]

    @extend_schema_field(serializers.ListField(child=serializers.DictField()))
    def get_batches(self, obj):
        return self._batches(obj)["batches"]

    @extend_schema_field(serializers.DictField())
    def get_batch_cost(self, obj):
        return self._batches(obj)["batch_cost"]


DISCOVERY_START = inline_serializer(
    "CodeDiscoveryStart",
    {
        "codebook": serializers.IntegerField(),
        "item": serializers.IntegerField(),
        "endpoints": serializers.ListField(child=serializers.IntegerField(), required=False),
        "endpoint": serializers.IntegerField(required=False, help_text="One endpoint (or give endpoints)."),
        "sample_size": serializers.IntegerField(required=False, default=5),
        "story_groups": serializers.IntegerField(required=False, default=1),
        "seed": serializers.IntegerField(required=False, default=0),
        "execution_mode": serializers.ChoiceField(choices=ExecutionMode.choices, required=False, default="live"),
    },
)
