"""REST API for codebooks, codes, code operations, codings, memos, assignments and gender attributions.

Coders write only their own codings, memos and attributions, and only on stories in their queue; blind mode holds
here too: a coder lists only their own codings unless their assignment for that story is in consensus mode.
"""

import json

from django.contrib.auth import get_user_model
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from generation import selectors as generation
from generation.models import ExecutionMode
from generation.runs import batches
from stereoscope.api import StudyScopedMixin
from stereoscope.api_parsers import JSONObjectParser
from stereoscope.downloads import table_download
from stereoscope.models import Role
from stereoscope.permissions import VIEWER, has_role
from stereoscope.untrusted import loads_json

from . import codebook_format as fmt
from . import selectors, services
from .assigning import STRATEGIES
from .models import (
    Assignment,
    AttributedGender,
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


def _int_list(value, label):
    if value in (None, ""):
        return []
    items = value if isinstance(value, list) else str(value).split(",")
    try:
        return [int(v) for v in items]
    except (TypeError, ValueError):
        raise ValidationError({"detail": f"{label} must be a list of ids."}) from None


# --- serializers -------------------------------------------------------------------------------------


class CodebookSerializer(serializers.ModelSerializer):
    code_count = serializers.SerializerMethodField()

    class Meta:
        model = Codebook
        fields = [
            "id",
            "name",
            "version",
            "description",
            "locked",
            "builtin_key",
            "parent",
            "guid",
            "created_at",
            "code_count",
        ]
        read_only_fields = ["version", "locked", "builtin_key", "parent", "guid", "created_at"]

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


def _plan_preview(plan):
    """An assignment plan as JSON: what the page's preview shows."""
    names = {c.pk: c.username for c in plan["coders"]}
    return {
        "available": plan["available"],
        "stories": plan["stories"],
        "run_ids": plan["run_ids"],
        "sample": plan["sample"],
        "coders": [c.username for c in plan["coders"]],
        "k": plan["k"],
        "strategy": plan["strategy"],
        "seed": plan["seed"],
        "mode": plan["mode"],
        "per_coder": plan["per_coder"],
        "assignments": [{"output": output_id, "coder": names[coder_id]} for output_id, coder_id in plan["pairs"]],
    }


class GenderAttributionSerializer(serializers.ModelSerializer):
    coder = serializers.CharField(source="coder.username", read_only=True)

    class Meta:
        model = GenderAttribution
        fields = ["id", "output", "coder", "gender", "character", "created_at"]
        read_only_fields = ["created_at"]
        extra_kwargs = {"output": {"queryset": generation.every_output()}}


# --- helpers -----------------------------------------------------------------------------------------


def _get_in_study(model, pk, study, field="study", label="object"):
    """The study's `model` object `pk`; `model` may be a selector (study, pk) -> object or None instead."""
    if pk in (None, ""):
        raise ValidationError({"detail": f"Give the {label}."})
    try:
        pk = int(pk)
    except (TypeError, ValueError):
        raise ValidationError({"detail": f"The {label} id must be a number."}) from None
    obj = model.objects.filter(pk=pk, **{field: study}).first() if hasattr(model, "objects") else model(study, pk)
    if obj is None:
        raise ValidationError({"detail": f"No {label} {pk} in this study."})
    return obj


# --- viewsets ----------------------------------------------------------------------------------------


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
            toolkit = _get_in_study(
                generation.study_toolkit, request.data["toolkit"], self.get_study(), label="toolkit"
            )
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
        source = Codebook.objects.filter(pk=request.data.get("source")).select_related("study").first()
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


def codebook_download(codebook, kind):
    tree = services.codebook_tree(codebook)
    slug = f"codebook-{codebook.pk}-v{codebook.version}"
    if kind == "qdc":
        response = HttpResponse(fmt.tree_to_qdc(tree), content_type="application/xml")
        response["Content-Disposition"] = f'attachment; filename="{slug}.qdc"'
    elif kind == "csv":
        columns, rows = fmt.tree_table(tree)
        response = table_download(columns, rows, f"{slug}.csv")
    elif kind == "json":
        data = {"format": "stereoscope-codebook", **tree}
        response = HttpResponse(json.dumps(data, ensure_ascii=False, indent=1), content_type="application/json")
        response["Content-Disposition"] = f'attachment; filename="{slug}.json"'
    else:
        raise ValidationError({"detail": "file_format must be qdc, csv or json."})
    return response


def codings_download(study, codebook, kind, include_text=False):
    if kind not in ("csv", "jsonl"):
        raise ValidationError({"detail": "file_format must be csv or jsonl."})
    rows = selectors.coding_rows(study, codebook=codebook, include_text=include_text)
    return table_download(
        selectors.coding_columns(include_text), rows, f"codings-{codebook.pk}.{kind}", fmt=kind, stream=True
    )


def import_upload(study, upload, kind, name, user, toolkit=None):
    """Parse an uploaded codebook file (format from `kind` or the file name) and create the codebook."""
    filename = getattr(upload, "name", "") or ""
    kind = (kind or filename.rsplit(".", 1)[-1]).lower()
    if getattr(upload, "size", 0) and upload.size > fmt.MAX_BYTES:
        raise services.AnnotationError("The file is larger than 20 MB.")
    content = upload.read()
    default_name = name or filename.rsplit(".", 1)[0] or "Imported codebook"
    if kind == "qdc":
        tree = fmt.parse_qdc(content, name=default_name)
    elif kind == "csv":
        tree = fmt.parse_csv(content, default_name)
    elif kind == "json":
        try:
            data = loads_json(content.decode("utf-8-sig"))
        except (UnicodeDecodeError, json.JSONDecodeError) as exc:
            raise fmt.CodebookFormatError([f"Not valid JSON: {exc}"]) from None
        if isinstance(data, dict) and name:
            data["name"] = name
        tree = fmt.validate_tree(data)
    else:
        raise services.AnnotationError("Upload a .qdc, .csv or .json codebook (or give file_format=qdc|csv|json).")
    return services.import_codebook(study, tree, created_by=user, toolkit=toolkit)


class AnnotationCodeViewSet(StudyScopedMixin, viewsets.ModelViewSet):
    serializer_class = AnnotationCodeSerializer
    queryset = Code.objects.select_related("parent__parent__parent", "codebook").order_by("codebook", "order", "id")
    study_field = "codebook__study"

    def get_queryset(self):
        qs = super().get_queryset()
        codebook = self.request.query_params.get("codebook")
        if codebook:
            qs = qs.filter(codebook_id=_int_list(codebook, "codebook")[0])
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
        ids = _int_list(ids, label)
        codes = list(Code.objects.filter(pk__in=ids, codebook__study=self.get_study()))
        if len(codes) != len(set(ids)):
            raise ValidationError({"detail": f"Some {label} are not codes of this study."})
        return codes

    def _code(self, pk, label):
        if pk in (None, ""):
            return None
        return _get_in_study(Code, pk, self.get_study(), field="codebook__study", label=label)

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
            _int_list(request.data.get("codings"), "codings"),
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
            qs = qs.filter(codebook_id=_int_list(self.request.query_params["codebook"], "codebook")[0])
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


class CodingViewSet(
    StudyScopedMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    """Codings. Coders list their own (plus everyone's on stories they code in consensus mode)."""

    serializer_class = CodingSerializer
    queryset = Coding.objects.select_related("coder", "code").order_by("output_id", "start", "id")
    study_field = "codebook__study"
    read_role = Role.CODER
    write_role = Role.CODER

    def get_queryset(self):
        qs = super().get_queryset()
        params = self.request.query_params
        for key in ("codebook", "output", "code"):
            if params.get(key):
                qs = qs.filter(**{f"{key}_id": _int_list(params[key], key)[0]})
        return selectors.visible_codings(self.request.user, self.get_study(), qs)

    def create(self, request, *args, **kwargs):
        study = self.get_study()
        data = request.data
        codebook = _get_in_study(Codebook, data.get("codebook"), study, label="codebook")
        output = _get_in_study(generation.study_output, data.get("output"), study, label="story")
        code = _get_in_study(Code, data.get("code"), study, field="codebook__study", label="code")
        coding = services.create_coding(
            study=study,
            codebook=codebook,
            output=output,
            code=code,
            coder=request.user,
            start=data.get("start"),
            end=data.get("end"),
            offset_unit=data.get("offset_unit") or "codepoint",
        )
        return Response(CodingSerializer(coding).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=inline_serializer("CodingReassignRequest", {"code": serializers.IntegerField()}))
    def update(self, request, *args, **kwargs):
        coding = self.get_object()
        if set(request.data) - {"code", "id"}:
            raise ValidationError(
                {"detail": "Only the code of a coding can change; delete it and code the new span instead."}
            )
        code = _get_in_study(Code, request.data.get("code"), self.get_study(), field="codebook__study", label="code")
        services.reassign_coding(coding, code, user=request.user)
        return Response(CodingSerializer(coding).data)

    def perform_destroy(self, instance):
        services.delete_coding(instance, user=self.request.user)


class MemoViewSet(StudyScopedMixin, viewsets.ModelViewSet):
    serializer_class = MemoSerializer
    queryset = Memo.objects.select_related("author").order_by("created_at", "id")
    read_role = Role.CODER
    write_role = Role.CODER

    def get_queryset(self):
        qs = super().get_queryset()
        for key in ("coding", "code", "output"):
            if self.request.query_params.get(key):
                qs = qs.filter(**{f"{key}_id": _int_list(self.request.query_params[key], key)[0]})
        return selectors.visible_memos(self.request.user, self.get_study(), qs)  # blind: only one's own

    def create(self, request, *args, **kwargs):
        # a target outside this study is answered like a missing one, as codings do
        study = self.get_study()
        targets = (
            ("output", generation.study_output, "study", "story"),
            ("coding", Coding, "codebook__study", "coding"),
            ("code", Code, "codebook__study", "code"),
        )
        for key, model, field, label in targets:
            if request.data.get(key) not in (None, ""):
                _get_in_study(model, request.data.get(key), study, field=field, label=label)
        return super().create(request, *args, **kwargs)

    def perform_create(self, serializer):
        d = serializer.validated_data
        study = self.get_study()
        serializer.instance = services.add_memo(
            study,
            author=self.request.user,
            text=d.get("text"),
            coding=d.get("coding"),
            code=d.get("code"),
            output=d.get("output"),
        )

    def perform_update(self, serializer):
        serializer.instance = services.update_memo(
            serializer.instance,
            user=self.request.user,
            text=serializer.validated_data.get("text", serializer.instance.text),
        )

    def perform_destroy(self, instance):
        services.delete_memo(instance, user=self.request.user)


class AssignmentViewSet(
    StudyScopedMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = AssignmentSerializer
    queryset = Assignment.objects.select_related("coder").order_by("codebook", "coder", "position", "id")
    read_role = Role.CODER
    action_roles = {
        "update": Role.CODER,
        "partial_update": Role.CODER,
        "plan": Role.RESEARCHER,
        "reassign": Role.RESEARCHER,
        "destroy": Role.RESEARCHER,
        "progress": Role.RESEARCHER,
    }

    def get_queryset(self):
        qs = super().get_queryset()
        if self.request.query_params.get("codebook"):
            qs = qs.filter(codebook_id=_int_list(self.request.query_params["codebook"], "codebook")[0])
        if self.request.query_params.get("status"):
            qs = qs.filter(status=self.request.query_params["status"])
        if not has_role(self.request.user, self.get_study(), Role.RESEARCHER):
            qs = qs.filter(coder=self.request.user)
        return qs

    @extend_schema(
        request=inline_serializer(
            "AssignmentStatusRequest", {"status": serializers.ChoiceField(choices=["pending", "done"])}
        )
    )
    def update(self, request, *args, **kwargs):
        assignment = self.get_object()
        value = request.data.get("status")
        if value not in ("pending", "done"):
            raise ValidationError({"detail": "status must be pending or done."})
        services.set_assignment_status(assignment, user=request.user, done=value == "done")
        return Response(AssignmentSerializer(assignment).data)

    def perform_destroy(self, instance):
        services.delete_assignment(instance, actor=self.request.user)

    @extend_schema(
        request=AssignmentPlanSerializer,
        responses={201: AssignmentSerializer(many=True), 200: OpenApiTypes.OBJECT},
        description="Create assignments (201), or with preview: true return the plan without creating it (200).",
    )
    @action(detail=False, methods=["post"])
    def plan(self, request, study_pk=None):

        s = AssignmentPlanSerializer(data=request.data)
        s.is_valid(raise_exception=True)
        d = s.validated_data
        study = self.get_study()
        codebook = _get_in_study(Codebook, d["codebook"], study, label="codebook")
        users = {u.username: u for u in get_user_model().objects.filter(username__in=d["coders"])}
        missing = [name for name in d["coders"] if name not in users]
        if missing:
            raise ValidationError({"detail": f"No user named {', '.join(missing)}."})
        outputs = services.outputs_of(study).filter(status="done")
        if d.get("output_ids"):
            outputs = outputs.filter(pk__in=d["output_ids"])
        runs = None
        if d.get("run_ids") or d.get("sample_size") is not None:
            runs = list(generation.study_runs(study, d.get("run_ids") or []))
            unknown = sorted(set(d.get("run_ids") or []) - {r.pk for r in runs})
            if unknown:
                raise ValidationError({"detail": f"No run {', '.join(map(str, unknown))} in this study."})
        kwargs = {
            "outputs": outputs,
            "coders": [users[n] for n in d["coders"]],
            "k": d["k"],
            "strategy": d["strategy"],
            "seed": d["seed"],
            "mode": d["mode"],
            "sample_size": d.get("sample_size"),
            "sample_seed": d.get("sample_seed"),
            "runs": runs,
        }
        if d["preview"]:
            return Response(_plan_preview(services.preview_assignments(study, codebook, **kwargs)))
        created = services.create_assignments(study, codebook, **kwargs, actor=request.user)
        return Response(AssignmentSerializer(created, many=True).data, status=status.HTTP_201_CREATED)

    @extend_schema(
        request=inline_serializer("AssignmentReassignRequest", {"coder": serializers.CharField()}),
        responses={200: AssignmentSerializer},
    )
    @action(detail=True, methods=["post"])
    def reassign(self, request, study_pk=None, pk=None):

        assignment = self.get_object()
        coder = get_user_model().objects.filter(username=request.data.get("coder", "")).first()
        if coder is None:
            raise ValidationError({"detail": "No such user."})
        services.reassign_assignment(assignment, coder=coder, actor=request.user)
        return Response(AssignmentSerializer(assignment).data)

    @extend_schema(parameters=[OpenApiParameter("codebook", int, required=True)], responses={200: OpenApiTypes.OBJECT})
    @action(detail=False, methods=["get"])
    def progress(self, request, study_pk=None):
        codebook = _get_in_study(Codebook, request.query_params.get("codebook"), self.get_study(), label="codebook")
        return Response({"coders": selectors.progress_by_coder(codebook)})


class GenderAttributionViewSet(
    StudyScopedMixin, mixins.ListModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet
):
    """A coder's judgement of the gender of each story's subject; posting again replaces it."""

    serializer_class = GenderAttributionSerializer
    queryset = GenderAttribution.objects.select_related("coder").order_by("output_id", "coder_id")
    study_field = "output__study"
    read_role = Role.CODER
    write_role = Role.CODER

    def get_queryset(self):
        qs = super().get_queryset()
        if self.request.query_params.get("output"):
            qs = qs.filter(output_id=_int_list(self.request.query_params["output"], "output")[0])
        if not has_role(self.request.user, self.get_study(), Role.RESEARCHER):
            qs = qs.filter(coder=self.request.user)
        return qs

    def create(self, request, *args, **kwargs):
        output = _get_in_study(generation.study_output, request.data.get("output"), self.get_study(), label="story")
        gender = request.data.get("gender")
        if gender not in AttributedGender.values:
            raise ValidationError({"detail": f"gender must be one of {', '.join(AttributedGender.values)}."})
        attribution = services.set_gender_attribution(
            output, coder=request.user, gender=gender, character=request.data.get("character", "")
        )
        return Response(GenderAttributionSerializer(attribution).data, status=status.HTTP_201_CREATED)


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


class CodeDiscoverySerializer(serializers.ModelSerializer):
    """A discovery job: its requests (one per endpoint and group of stories), suggestions and batches."""

    requests = DiscoveryRequestSerializer(many=True, read_only=True)
    suggestions = CodeSuggestionSerializer(many=True, read_only=True)
    batches = serializers.SerializerMethodField(help_text="Provider batches (batch mode).")
    batch_cost = serializers.SerializerMethodField(help_text="Estimated and actual cost of the batches.")

    class Meta:
        model = CodeDiscovery
        fields = [
            "id",
            "codebook",
            "endpoints",
            "item",
            "sample_size",
            "story_groups",
            "seed",
            "execution_mode",
            "status",
            "message",
            "progress",
            "created_at",
            "started_at",
            "finished_at",
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


class CodeDiscoveryViewSet(
    StudyScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, mixins.CreateModelMixin, viewsets.GenericViewSet
):
    """AI-assisted code discovery, a job: POST starts one (live or batch mode); /cancel/, /resume/ and /retry/
    act on it like on any job; decide each suggestion with /decide/."""

    serializer_class = CodeDiscoverySerializer
    queryset = CodeDiscovery.objects.prefetch_related("suggestions", "requests", "endpoints").order_by(
        "-created_at", "-id"
    )
    read_role = Role.RESEARCHER

    def _settings(self, request):
        """(codebook, the discovery's settings) from the request body (create and estimate read the same)."""
        study = self.get_study()
        codebook = _get_in_study(Codebook, request.data.get("codebook"), study, label="codebook")
        given = request.data.get("endpoints")
        if given is None:
            given = [request.data.get("endpoint")]
        if not isinstance(given, list) or not given:
            raise ValidationError({"detail": "Give endpoints as a list of endpoint ids."})
        endpoints = [_get_in_study(generation.study_endpoint, pk, study, label="endpoint") for pk in given]
        item = _get_in_study(generation.study_item, request.data.get("item"), study, label="prompt item")
        return codebook, {
            "endpoints": endpoints,
            "item": item,
            "sample_size": request.data.get("sample_size", 5),
            "seed": request.data.get("seed", 0),
            "story_groups": request.data.get("story_groups", 1),
            "execution_mode": request.data.get("execution_mode") or "live",
        }

    @extend_schema(request=DISCOVERY_START, responses={201: CodeDiscoverySerializer})
    def create(self, request, *args, **kwargs):
        codebook, settings = self._settings(request)
        discovery = services.start_discovery(self.get_study(), codebook, **settings, actor=request.user)
        return Response(CodeDiscoverySerializer(discovery).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=DISCOVERY_START, responses={200: OpenApiTypes.OBJECT})
    @action(detail=False, methods=["post"])
    def estimate(self, request, study_pk=None):
        """What a discovery with these settings would send and cost (requests, estimated tokens, live and batch
        price per model); nothing is created."""
        codebook, settings = self._settings(request)
        return Response(services.estimate_discovery(self.get_study(), codebook, **settings))

    def _act(self, action_fn):
        discovery = action_fn(self.get_object(), actor=self.request.user)
        discovery.refresh_from_db()
        return Response(CodeDiscoverySerializer(discovery).data)

    @extend_schema(request=None, responses={200: CodeDiscoverySerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, study_pk=None, pk=None):
        """Stop the discovery; its open batches are cancelled at the provider."""
        return self._act(services.cancel_discovery)

    @extend_schema(request=None, responses={200: CodeDiscoverySerializer})
    @action(detail=True, methods=["post"])
    def resume(self, request, study_pk=None, pk=None):
        """Queue it again: only its pending requests are asked (never one an open batch holds)."""
        return self._act(services.resume_discovery)

    @extend_schema(request=None, responses={200: CodeDiscoverySerializer})
    @action(detail=True, methods=["post"])
    def retry(self, request, study_pk=None, pk=None):
        """Failed requests back to pending, then resume."""
        return self._act(services.retry_discovery)

    @extend_schema(
        request=inline_serializer(
            "CodeSuggestionDecision",
            {
                "suggestion": serializers.IntegerField(),
                "accept": serializers.BooleanField(),
                "name": serializers.CharField(required=False),
                "description": serializers.CharField(required=False),
                "gender_tag": serializers.CharField(required=False),
                "parent": serializers.IntegerField(required=False),
            },
        ),
        responses={200: CodeSuggestionSerializer},
    )
    @action(detail=True, methods=["post"])
    def decide(self, request, study_pk=None, pk=None):
        discovery = self.get_object()
        suggestion = discovery.suggestions.filter(pk=request.data.get("suggestion") or 0).first()
        if suggestion is None:
            raise ValidationError({"detail": "No such suggestion in this discovery."})
        parent = None
        if request.data.get("parent"):
            parent = _get_in_study(
                Code, request.data["parent"], self.get_study(), field="codebook__study", label="parent code"
            )
        accept = request.data.get("accept") in (True, "true", "1", 1)
        decided = services.decide_suggestion(
            suggestion,
            accept=accept,
            actor=request.user,
            name=request.data.get("name"),
            description=request.data.get("description"),
            gender_tag=request.data.get("gender_tag"),
            parent=parent,
        )
        return Response(CodeSuggestionSerializer(decided).data)


api_routes = [
    ("codebooks", CodebookViewSet, "api-codebook"),
    ("codes", AnnotationCodeViewSet, "api-code"),
    ("code-operations", CodeOperationViewSet, "api-code-operation"),
    ("codings", CodingViewSet, "api-coding"),
    ("memos", MemoViewSet, "api-memo"),
    ("assignments", AssignmentViewSet, "api-assignment"),
    ("gender-attributions", GenderAttributionViewSet, "api-gender-attribution"),
    ("code-discoveries", CodeDiscoveryViewSet, "api-code-discovery"),
]
