"""GET /api/studies/<id>/report/?format=html|md|pdf|json: the study report (researchers and admins)."""

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import viewsets
from rest_framework.response import Response

from stereoscope.models import Role, Study
from stereoscope.permissions import StudyRolePermission

from .. import builder
from ..document import SECTIONS
from ..render import FORMATS
from ..views import report_response
from .serializers import document_json


class ReportViewSet(viewsets.ViewSet):
    permission_classes = [StudyRolePermission]
    read_role = Role.RESEARCHER
    write_role = Role.ADMIN

    def perform_content_negotiation(self, request, force=False):
        # ?format= names the report's format (html, md, pdf), not a DRF renderer: never a 404 for it
        return super().perform_content_negotiation(request, force=True)

    def get_study(self):
        if not hasattr(self, "_study"):
            self._study = get_object_or_404(Study, pk=self.kwargs["study_pk"])
        return self._study

    @extend_schema(
        parameters=[OpenApiParameter("format", str, enum=["json", *FORMATS])],
        responses={200: OpenApiTypes.OBJECT},
        description="The study report with the study's saved sections: json (the document), html or md. A PDF is "
        'an export job: POST /api/studies/<id>/exports/ with {"format": "report"}. '
        f"Sections: {', '.join(k for k, _t in SECTIONS)}.",
    )
    def list(self, request, study_pk=None):
        fmt = request.query_params.get("format") or "json"
        if fmt == "json":
            return Response(document_json(builder.build(self.get_study())))
        if fmt == "pdf":
            return Response(
                {
                    "detail": "A PDF of the report is made by an export job: POST "
                    f'/api/studies/{self.get_study().pk}/exports/ with {{"format": "report"}}, then GET its '
                    "download_url once its status is completed."
                },
                status=400,
            )
        if fmt not in FORMATS:
            return Response({"detail": f"format must be one of json, {', '.join(FORMATS)}."}, status=400)
        return report_response(self.get_study(), fmt)


api_routes = [("report", ReportViewSet, "api-report")]
