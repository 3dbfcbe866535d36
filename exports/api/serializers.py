"""The serializers of the exports API (the viewsets are in views.py)."""

from rest_framework import serializers

from stereoscope.api_bases import JobSerializer

from ..models import ExportJob, ExportStatus


class ExportOptionsSerializer(serializers.Serializer):
    run_ids = serializers.ListField(child=serializers.IntegerField(), required=False)
    models = serializers.ListField(child=serializers.CharField(), required=False)
    item_numbers = serializers.ListField(child=serializers.IntegerField(), required=False)
    code_ids = serializers.ListField(
        child=serializers.IntegerField(), required=False, help_text="A code includes its sub-codes."
    )
    round_ids = serializers.ListField(child=serializers.IntegerField(), required=False)
    pseudonymise = serializers.BooleanField(required=False, default=False)
    escape_formulas = serializers.BooleanField(
        required=False, default=True, help_text="Prefix spreadsheet formulas (= + - @) with ' in CSV/XLSX."
    )


class ExportJobSerializer(JobSerializer):
    created_by = serializers.CharField(source="created_by.username", read_only=True, default=None)
    download_url = serializers.SerializerMethodField()
    options = ExportOptionsSerializer(required=False)
    datasets = serializers.ListField(
        child=serializers.CharField(),
        required=False,
        help_text="Dataset keys (see datasets/); all you may export when empty. Ignored for qdpx.",
    )

    class Meta:
        model = ExportJob
        fields = [
            "format",
            "datasets",
            "options",
            "file_name",
            "size_bytes",
            "sha256",
            "manifest",
            "created_by",
            "download_url",
        ]
        read_only_fields = ["file_name", "size_bytes", "sha256", "manifest"]

    def get_download_url(self, job) -> str | None:
        if job.status != ExportStatus.COMPLETED:
            return None
        return self.context["request"].build_absolute_uri(f"/api/studies/{job.study_id}/exports/{job.pk}/download/")


class ExportDatasetSerializer(serializers.Serializer):
    key = serializers.CharField()
    title = serializers.CharField()
    app = serializers.CharField()
    min_role = serializers.CharField()
    columns = serializers.ListField(child=serializers.DictField())
