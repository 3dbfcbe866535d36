"""Codebooks (versions, copies, files, frequencies), codes (merge, move, split) and the undoable code operations."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from generation import selectors as generation
from stereoscope.api import StudyScopedMixin
from stereoscope.api_parsers import JSONObjectParser
from stereoscope.downloads import table_download
from stereoscope.models import Role
from stereoscope.permissions import VIEWER
from stereoscope.untrusted import whole_number

from .. import selectors, services
from ..models import (
    Code,
    Codebook,
    CodeOperation,
)
from .files import codebook_download, codings_download, import_upload
from .lookups import get_in_study, int_list
from .serializers import (
    AnnotationCodeSerializer,
    CodebookSerializer,
    CodeOperationSerializer,
)


class CodebookViewSet(StudyScopedMixin, viewsets.ModelViewSet):
    serializer_class = CodebookSerializer
    queryset = Codebook.objects.order_by("name", "-version")
    parser_classes = [JSONObjectParser, MultiPartParser, FormParser]
    action_roles = {"frequencies": VIEWER, "export": VIEWER, "codings_export": Role.RESEARCHER}

    def perform_create(self, serializer):
        d = serializer.validated_data
        serializer.instance = services.create_codebook(
            self.get_study(), name=d["name"], description=d.get("description", ""), created_by=self.request.user
        )

    def perform_update(self, serializer):
        serializer.instance = services.update_codebook(
            serializer.instance, actor=self.request.user, **serializer.validated_data
        )

    @extend_schema(responses={204: None, 409: dict})
    def destroy(self, request, *args, **kwargs):
        """Delete an unused codebook. One with codings, memos or assignments, a locked one or one with a running
        discovery is refused (409) with what depends on it."""
        try:
            services.delete_codebook(self.get_object(), actor=request.user)
        except services.AnnotationError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        parameters=[OpenApiParameter("file_format", str, enum=["qdc", "csv", "json"])],
        responses={200: OpenApiTypes.BINARY},
    )
    @action(detail=True, methods=["get"])
    def export(self, request, study_pk=None, pk=None):
        codebook = self.get_object()
        kind = request.query_params.get("file_format", "qdc")
        return codebook_download(codebook, kind)

    @extend_schema(
        request=inline_serializer(
            "CodebookImportRequest",
            {
                "file": serializers.FileField(),
                "file_format": serializers.ChoiceField(choices=["qdc", "csv", "json"], required=False),
                "name": serializers.CharField(required=False),
                "toolkit": serializers.IntegerField(required=False),
            },
        ),
        responses={201: CodebookSerializer},
    )
    @action(detail=False, methods=["post"], url_path="import")
    def import_(self, request, study_pk=None):
        upload = request.FILES.get("file")
        if upload is None:
            raise ValidationError({"detail": "Attach the codebook file as 'file'."})
        toolkit = None
        if request.data.get("toolkit"):
            toolkit = get_in_study(generation.study_toolkit, request.data["toolkit"], self.get_study(), label="toolkit")
        codebook = import_upload(
            self.get_study(), upload, request.data.get("file_format"), request.data.get("name"), request.user, toolkit
        )
        return Response(CodebookSerializer(codebook).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: CodebookSerializer})
    @action(detail=True, methods=["post"])
    def lock(self, request, study_pk=None, pk=None):
        return Response(CodebookSerializer(services.CODEBOOKS.lock_by_hand(self.get_object(), actor=request.user)).data)

    @extend_schema(request=None, responses={201: CodebookSerializer})
    @action(detail=True, methods=["post"], url_path="new-version")
    def new_version(self, request, study_pk=None, pk=None):
        copy = services.CODEBOOKS.new_version(self.get_object(), actor=request.user)
        return Response(CodebookSerializer(copy).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request=inline_serializer(
            "CodebookCopyRequest", {"source": serializers.IntegerField(), "name": serializers.CharField(required=False)}
        ),
        responses={201: CodebookSerializer},
    )
    @action(detail=False, methods=["post"], url_path="copy")
    def copy(self, request, study_pk=None):
        source_id = whole_number(request.data.get("source"))
        source = Codebook.objects.filter(pk=source_id).select_related("study").first()  # None: no codebook
        if source is None or not (source.study_id == self.get_study().pk or source.study.is_library):
            raise ValidationError({"detail": "No such codebook in this study or the built-in library."})
        name = services.clean_codebook_name(request.data["name"]) if request.data.get("name") else source.name
        copy = services.CODEBOOKS.copy_into(source, study=self.get_study(), actor=request.user, name=name)
        return Response(CodebookSerializer(copy).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        parameters=[
            OpenApiParameter("level", str, enum=list(selectors.LEVELS)),
            OpenApiParameter("by", str, enum=[k for k in selectors.BREAKDOWNS if k]),
            OpenApiParameter("file_format", str, enum=["json", "csv"]),
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    @action(detail=True, methods=["get"])
    def frequencies(self, request, study_pk=None, pk=None):
        codebook = self.get_object()
        try:
            table = selectors.frequency_table(
                codebook,
                level=request.query_params.get("level", "code"),
                by=request.query_params.get("by", ""),
                user=request.user,
            )
        except ValueError as exc:
            raise ValidationError({"detail": str(exc)}) from None
        if request.query_params.get("file_format") == "csv":
            columns, rows = selectors.frequency_table_rows(table)
            return table_download(columns, rows, f"code-frequencies-{codebook.pk}.csv")
        return Response(table)

    @extend_schema(
        parameters=[
            OpenApiParameter("file_format", str, enum=["csv", "jsonl"]),
            OpenApiParameter("include_text", bool),
        ],
        responses={200: OpenApiTypes.BINARY},
    )
    @action(detail=True, methods=["get"], url_path="codings-export")
    def codings_export(self, request, study_pk=None, pk=None):
        codebook = self.get_object()
        return codings_download(
            self.get_study(),
            codebook,
            request.query_params.get("file_format", "csv"),
            request.query_params.get("include_text") in ("1", "true"),
        )


class AnnotationCodeViewSet(StudyScopedMixin, viewsets.ModelViewSet):
    serializer_class = AnnotationCodeSerializer
    queryset = Code.objects.select_related("parent__parent__parent", "codebook").order_by("codebook", "order", "id")
    study_field = "codebook__study"

    def get_queryset(self):
        qs = super().get_queryset()
        codebook = self.request.query_params.get("codebook")
        if codebook:
            qs = qs.filter(codebook_id=int_list(codebook, "codebook")[0])
        if self.request.query_params.get("active") in ("1", "true"):
            qs = qs.filter(active=True)
        return qs

    def _fields(self, data):
        fields = dict(data)
        fields.pop("codebook", None)
        return fields

    def perform_create(self, serializer):
        d = serializer.validated_data
        codebook = d["codebook"]
        if codebook.study_id != self.get_study().pk:
            raise ValidationError({"detail": f"No codebook {codebook.pk} in this study."})
        serializer.instance = services.create_code(codebook, actor=self.request.user, **self._fields(d))

    def perform_update(self, serializer):
        d = self._fields(serializer.validated_data)
        if (
            "codebook" in serializer.validated_data
            and serializer.validated_data["codebook"] != serializer.instance.codebook
        ):
            raise ValidationError({"detail": "A code cannot move to another codebook."})
        serializer.instance = services.update_code(serializer.instance, actor=self.request.user, **d)

    def perform_destroy(self, instance):
        services.delete_code(instance, actor=self.request.user)

    def _codes(self, ids, label):
        ids = int_list(ids, label)
        codes = list(Code.objects.filter(pk__in=ids, codebook__study=self.get_study()))
        if len(codes) != len(set(ids)):
            raise ValidationError({"detail": f"Some {label} are not codes of this study."})
        return codes

    def _code(self, pk, label):
        if pk in (None, ""):
            return None
        return get_in_study(Code, pk, self.get_study(), field="codebook__study", label=label)

    @extend_schema(
        request=inline_serializer(
            "CodeMergeRequest",
            {
                "sources": serializers.ListField(child=serializers.IntegerField()),
                "target": serializers.IntegerField(required=False),
                "new_name": serializers.CharField(required=False),
                "new_parent": serializers.IntegerField(required=False),
            },
        ),
        responses={200: CodeOperationSerializer},
    )
    @action(detail=False, methods=["post"])
    def merge(self, request, study_pk=None):
        sources = self._codes(request.data.get("sources"), "sources")
        if not sources:
            raise ValidationError({"detail": "Choose the codes to merge."})
        target = self._code(request.data.get("target"), "target")
        _, op = services.merge_codes(
            sources[0].codebook,
            sources,
            target=target,
            new_name=request.data.get("new_name"),
            new_parent=self._code(request.data.get("new_parent"), "new parent"),
            actor=request.user,
        )
        return Response(CodeOperationSerializer(op).data)

    @extend_schema(
        request=inline_serializer(
            "CodeMoveRequest",
            {
                "codes": serializers.ListField(child=serializers.IntegerField()),
                "new_parent": serializers.IntegerField(allow_null=True),
            },
        ),
        responses={200: CodeOperationSerializer},
    )
    @action(detail=False, methods=["post"])
    def move(self, request, study_pk=None):
        codes = self._codes(request.data.get("codes"), "codes")
        if not codes:
            raise ValidationError({"detail": "Choose the codes to move."})
        op = services.move_codes(
            codes[0].codebook,
            codes,
            new_parent=self._code(request.data.get("new_parent"), "new parent"),
            actor=request.user,
        )
        return Response(CodeOperationSerializer(op).data)

    @extend_schema(
        request=inline_serializer(
            "CodeSplitRequest",
            {
                "codings": serializers.ListField(child=serializers.IntegerField()),
                "target": serializers.IntegerField(required=False),
                "new_name": serializers.CharField(required=False),
            },
        ),
        responses={200: CodeOperationSerializer},
    )
    @action(detail=True, methods=["post"])
    def split(self, request, study_pk=None, pk=None):
        code = self.get_object()
        _, op = services.split_code(
            code,
            int_list(request.data.get("codings"), "codings"),
            target=self._code(request.data.get("target"), "target"),
            new_name=request.data.get("new_name"),
            actor=request.user,
        )
        return Response(CodeOperationSerializer(op).data)


class CodeOperationViewSet(StudyScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    serializer_class = CodeOperationSerializer
    queryset = CodeOperation.objects.select_related("actor").order_by("-created_at", "-id")
    study_field = "codebook__study"

    def get_queryset(self):
        qs = super().get_queryset()
        if self.request.query_params.get("codebook"):
            qs = qs.filter(codebook_id=int_list(self.request.query_params["codebook"], "codebook")[0])
        return qs

    @extend_schema(request=None, responses={200: CodeOperationSerializer})
    @action(detail=True, methods=["post"])
    def undo(self, request, study_pk=None, pk=None):
        op = self.get_object()
        note = services.undo_operation(op, actor=request.user)
        op.refresh_from_db()
        data = CodeOperationSerializer(op).data
        data["note"] = note
        return Response(data)
