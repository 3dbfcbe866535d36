"""The serializers of the judging API (the viewsets are in views.py)."""

from rest_framework import serializers

from generation import selectors as generation
from stereoscope.api_bases import JobSerializer, VersionedSerializer

from .. import rounds
from ..models import JudgeRound, JudgeTemplate, Verdict


class JudgeTemplateSerializer(VersionedSerializer):
    class Meta:
        model = JudgeTemplate
        fields = ["kind", "text", "scale_min", "scale_max", "detect_threshold", "labels", "is_builtin"]
        extra_kwargs = {"kind": {"default": JudgeTemplate._meta.get_field("kind").default}}


class JudgeRoundSerializer(JobSerializer):
    judges = serializers.PrimaryKeyRelatedField(many=True, queryset=generation.every_endpoint())
    counts = serializers.SerializerMethodField()

    class Meta:
        model = JudgeRound
        fields = [
            "name",
            "template",
            "source_run",
            "judges",
            "policy",
            "k",
            "forbid_same_family",
            "batch_size",
            "temperature",
            "seed",
            "reask_missing",
            "output_filter",
            "execution_mode",
            "plan",
            "counts",
        ]
        read_only_fields = ["plan"]

    def get_counts(self, obj) -> dict:
        return rounds.status_counts(obj)


class VerdictSerializer(serializers.ModelSerializer):
    item_number = serializers.IntegerField(source="output.item.number", read_only=True, allow_null=True)
    generator_model = serializers.CharField(source="output.model_identity", read_only=True)

    class Meta:
        model = Verdict
        fields = [
            "id",
            "round",
            "output",
            "item_number",
            "generator_model",
            "judge_endpoint",
            "judge_model",
            "value",
            "status",
            "rationale",
            "raw_text",
            "error",
            "batch_ref",
            "position",
            "question",
            "reasked",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class HumanCheckAnswerSerializer(serializers.Serializer):
    value = serializers.IntegerField(min_value=0, max_value=1)
    note = serializers.CharField(required=False, allow_blank=True, default="")


class JudgeReaskSerializer(serializers.Serializer):
    verdict_ids = serializers.ListField(child=serializers.IntegerField(), required=False, allow_null=True)


class VerificationRequestSerializer(serializers.Serializer):
    coders = serializers.ListField(child=serializers.CharField(), help_text="Usernames of study members.")
    sample_size = serializers.IntegerField(min_value=1)
    seed = serializers.IntegerField(required=False, default=0)


class ToolkitWeightRowSerializer(serializers.Serializer):
    toolkit = serializers.CharField()
    toolkit_version = serializers.IntegerField()
    item_number = serializers.IntegerField()
    dimension = serializers.CharField()
    target_stereotype = serializers.CharField()
    n = serializers.IntegerField()
    detected = serializers.FloatField()
    rate = serializers.FloatField()
    ci_low = serializers.FloatField()
    ci_high = serializers.FloatField()
    consistency = serializers.FloatField(allow_null=True)
    shrunk_rate = serializers.FloatField()
    reliability = serializers.FloatField()
    weight = serializers.FloatField()
    method = serializers.CharField()
    flags = serializers.CharField()


class WeightsImportSerializer(serializers.Serializer):
    toolkit = serializers.IntegerField(
        help_text="The toolkit version the weights were computed on (or one with the same items)."
    )
    file = serializers.FileField(required=False)
    content = serializers.CharField(required=False, help_text="The weights JSON or CSV as text (instead of a file).")
    new_version = serializers.BooleanField(required=False, default=True)
    drop_flagged = serializers.BooleanField(required=False, default=False)
