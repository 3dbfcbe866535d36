"""The serializers of the agreement API (the viewsets are in views.py)."""

from rest_framework import serializers

from ..models import GoldLabel


class AgreementResultSerializer(serializers.Serializer):
    krippendorff_alpha = serializers.FloatField(allow_null=True)
    percent_agreement = serializers.FloatField(allow_null=True)
    fleiss_kappa = serializers.FloatField(allow_null=True)
    cohen_kappa_mean = serializers.FloatField(allow_null=True)
    cohen_kappa_weighted_mean = serializers.FloatField(allow_null=True)
    gwet_ac1 = serializers.FloatField(allow_null=True)
    n_units = serializers.IntegerField()
    n_raters = serializers.IntegerField()
    n_ratings = serializers.IntegerField()
    level = serializers.CharField()
    ci95 = serializers.DictField(child=serializers.ListField(child=serializers.FloatField(), allow_null=True))
    notes = serializers.ListField(child=serializers.CharField())
    pairs = serializers.ListField(child=serializers.DictField())


class AgreementTableSerializer(serializers.Serializer):
    target = serializers.CharField()
    title = serializers.CharField()
    raters = serializers.DictField(child=serializers.CharField(), help_text="rater key → label")
    result = AgreementResultSerializer()


class GoldLabelSerializer(serializers.ModelSerializer):
    output = serializers.IntegerField(source="output_id")
    decided_by = serializers.CharField(source="decided_by.username", read_only=True, default=None)

    class Meta:
        model = GoldLabel
        fields = ["id", "target", "output", "value", "note", "decided_by", "created_at", "updated_at"]
        read_only_fields = ["created_at", "updated_at"]
