"""REST API for exports: /api/studies/{study_pk}/exports/ (jobs, datasets, download, REFI-QDA import, .qdc)."""

from django.http import Http404, HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiResponse, extend_schema, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from annotation import refi_qda
from annotation.refi_services import export_qdc, import_file
from annotation.selectors import codebook_in_study
from annotation.views_refi import MAX_UPLOAD_BYTES
from stereoscope.api import StudyScopedMixin
from stereoscope.api_bases import JobActionsMixin
from stereoscope.api_parsers import JSONObjectParser
from stereoscope.models import Role

from .. import services
from ..models import ExportJob, ExportStatus
from ..views import _check_job_access, job_file
from .serializers import ExportDatasetSerializer, ExportJobSerializer


class ExportJobViewSet(
    JobActionsMixin,
    StudyScopedMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Export jobs of a study. POST starts one (it runs in the background); GET shows its progress; when
    `status` is `completed`, `download/` returns the file (a ZIP, the .qdpx, or the study report's PDF for format
    `report`: one at a time per study)."""

    serializer_class = ExportJobSerializer
    job_conflicts = (services.ExportError,)  # cancel, resume or retry of a job in the wrong state
    queryset = ExportJob.objects.select_related("created_by")
    read_role = Role.RESEARCHER
    write_role = Role.RESEARCHER
    action_roles = {"destroy": Role.ADMIN}
    parser_classes = [JSONObjectParser, MultiPartParser, FormParser]

    def retrieve(self, request, *args, **kwargs):
        job = self.get_object()
        _check_job_access(self.study_role, job)
        return Response(self.get_serializer(job).data)

    def create(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        try:
            job = services.create_job(
                self.get_study(),
                fmt=data["format"],
                dataset_keys=data.get("datasets") or None,
                options=data.get("options") or {},
                actor=request.user,
            )
        except services.ExportError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(self.get_serializer(job).data, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance):
        services.delete_job(instance, actor=self.request.user)

    @extend_schema(responses={200: OpenApiResponse(OpenApiTypes.BINARY, description="The export file.")})
    @action(detail=True, methods=["get"])
    def download(self, request, *args, **kwargs):
        job = self.get_object()
        _check_job_access(self.study_role, job)
        if job.status != ExportStatus.COMPLETED:
            return Response({"detail": f"The export is {job.status}, not ready."}, status=status.HTTP_409_CONFLICT)
        return job_file(job)

    def get_job(self):
        job = self.get_object()
        _check_job_access(self.study_role, job)
        return job

    @extend_schema(request=None, responses={200: ExportJobSerializer, 409: OpenApiResponse(description="Over.")})
    @action(detail=True, methods=["post"])
    def cancel(self, request, *args, **kwargs):
        """Stop the export (its workers stop within a few seconds); datasets already written are kept for resume."""
        return self.job_action(services.cancel_job)

    @extend_schema(request=None, responses={200: ExportJobSerializer, 409: OpenApiResponse(description="Not stopped.")})
    @action(detail=True, methods=["post"])
    def resume(self, request, *args, **kwargs):
        """Queue a stopped export again; only what is missing is written."""
        return self.job_action(services.resume_job)

    @extend_schema(request=None, responses={200: ExportJobSerializer, 409: OpenApiResponse(description="Not failed.")})
    @action(detail=True, methods=["post"])
    def retry(self, request, *args, **kwargs):
        """Run a failed export again, from the datasets it had written on."""
        return self.job_action(services.retry_job)

    @extend_schema(responses={200: ExportDatasetSerializer(many=True)})
    @action(detail=False, methods=["get"])
    def datasets(self, request, *args, **kwargs):
        """The datasets this user may export, with their documented columns."""
        rows = [
            {
                "key": ds.key,
                "title": ds.title,
                "app": ds.app,
                "min_role": ds.min_role,
                "columns": [{"name": c.name, "description": c.description} for c in ds.columns],
            }
            for ds in services.available_datasets(request.user, self.get_study()).values()
        ]
        return Response(ExportDatasetSerializer(rows, many=True).data)

    @extend_schema(
        request={
            "multipart/form-data": inline_serializer("RefiImportUploadSerializer", {"file": serializers.FileField()})
        },
        responses={
            201: inline_serializer(
                "RefiImportReportSerializer",
                {
                    "codebook_id": serializers.IntegerField(),
                    "codebook": serializers.CharField(),
                    "codes": serializers.IntegerField(),
                    "sources": serializers.IntegerField(required=False),
                    "codings": serializers.IntegerField(required=False),
                    "memos": serializers.IntegerField(required=False),
                },
            ),
            400: OpenApiResponse(description="The file is malformed; nothing was imported."),
        },
    )
    @action(detail=False, methods=["post"], url_path="refi-import")
    def refi_import(self, request, *args, **kwargs):
        """Import a REFI-QDA .qdpx project or .qdc codebook (checked whole first, applied in one transaction)."""

        upload = request.FILES.get("file")
        if upload is None:
            return Response(
                {"detail": "Send the file as multipart form field 'file'."}, status=status.HTTP_400_BAD_REQUEST
            )
        if upload.size > MAX_UPLOAD_BYTES:
            return Response(
                {"detail": f"The file is larger than {MAX_UPLOAD_BYTES // 2**20} MB."},
                status=status.HTTP_400_BAD_REQUEST,
            )
        try:
            report = import_file(self.get_study(), upload.read(), filename=upload.name, actor=request.user)
        except refi_qda.RefiError as exc:
            return Response({"detail": str(exc), "problems": exc.problems}, status=status.HTTP_400_BAD_REQUEST)
        return Response(report, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: OpenApiResponse(OpenApiTypes.BINARY, description="A REFI-QDA .qdc codebook.")})
    @action(detail=False, methods=["get"], url_path=r"codebooks/(?P<codebook_id>\d+)/qdc")
    def codebook_qdc(self, request, codebook_id=None, *args, **kwargs):

        codebook = codebook_in_study(self.get_study(), codebook_id)
        if codebook is None:
            raise Http404(f"No codebook {codebook_id} in this study.")
        response = HttpResponse(export_qdc(self.get_study(), codebook), content_type="application/xml")
        response["Content-Disposition"] = f'attachment; filename="codebook-{codebook.pk}-v{codebook.version}.qdc"'
        return response


api_routes = [("exports", ExportJobViewSet, "api-study-export")]
