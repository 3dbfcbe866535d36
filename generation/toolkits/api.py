"""REST API for toolkits, their items and dimensions: CRUD that respects locks, expansion preview, versions,
import and export. Mounted under /api/studies/<study_pk>/ (see generation/api.py)."""

import itertools

from django.core.exceptions import ValidationError
from django.db.models import Count
from django.http import HttpResponse
from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_serializer, inline_serializer
from rest_framework import parsers, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import PermissionDenied
from rest_framework.response import Response

from stereoscope.api import StudyScopedMixin
from stereoscope.api_bases import VersionedSerializer
from stereoscope.api_parsers import JSONObjectParser
from stereoscope.downloads import table_download
from stereoscope.untrusted import whole_number

from ..models import Dimension, PromptItem, Toolkit
from . import file_format as toolkit_format
from . import services
from .counterfactual import parse_name_pairs
from .expansion import ToolkitLocked, count_units, expand_units, validate_toolkit
from .slots import SlotError


@extend_schema_serializer(component_name="ToolkitDimension")  # "Dimension" alone would clash with codebook dimensions
class DimensionSerializer(serializers.ModelSerializer):
    toolkit = serializers.PrimaryKeyRelatedField(queryset=Toolkit.objects.none())

    class Meta:
        model = Dimension
        fields = ["id", "toolkit", "name", "description", "order"]
        read_only_fields = ["order"]
        validators = []  # uniqueness is checked by the service with a clearer message


class PromptItemSerializer(serializers.ModelSerializer):
    toolkit = serializers.PrimaryKeyRelatedField(queryset=Toolkit.objects.none())
    dimension = serializers.PrimaryKeyRelatedField(queryset=Dimension.objects.none(), allow_null=True, required=False)
    dimension_name = serializers.CharField(source="dimension.name", read_only=True, default="")
    number = serializers.IntegerField(min_value=1, required=False)
    slots = serializers.JSONField(required=False)
    combinations = serializers.JSONField(required=False, allow_null=True)

    class Meta:
        model = PromptItem
        fields = [
            "id",
            "toolkit",
            "number",
            "text",
            "dimension",
            "dimension_name",
            "target_stereotype",
            "gender_mapping",
            "reversed_order",
            "source_reference",
            "notes",
            "slots",
            "combinations",
            "counterfactual_of",
        ]
        read_only_fields = ["counterfactual_of"]
        validators = []  # uniqueness is checked by the service with a clearer message


class ToolkitSerializer(VersionedSerializer):
    locked = serializers.SerializerMethodField()
    item_count = serializers.SerializerMethodField()
    dimensions = serializers.SerializerMethodField()
    slots = serializers.JSONField(required=False)
    combinations = serializers.JSONField(required=False, allow_null=True)

    class Meta:
        model = Toolkit
        fields = ["language", "slots", "combinations", "item_count", "dimensions"]

    def get_locked(self, toolkit) -> bool:
        return services.TOOLKITS.is_locked(toolkit)

    def get_item_count(self, toolkit) -> int:
        return getattr(toolkit, "n_items", None) if hasattr(toolkit, "n_items") else toolkit.items.count()

    def get_dimensions(self, toolkit) -> list[str]:
        return [d.name for d in toolkit.dimensions.all()]


class ToolkitDetailSerializer(ToolkitSerializer):
    items = PromptItemSerializer(many=True, read_only=True)

    class Meta(ToolkitSerializer.Meta):
        fields = ToolkitSerializer.Meta.fields + ["items"]


class ToolkitUnitSerializer(serializers.Serializer):
    item_number = serializers.IntegerField()
    slot_values = serializers.DictField(child=serializers.CharField())
    variant_key = serializers.CharField()
    prompt = serializers.CharField()


class ToolkitExpansionSerializer(serializers.Serializer):
    count = serializers.IntegerField()
    problems = serializers.ListField(child=serializers.CharField())
    units = ToolkitUnitSerializer(many=True)


class ToolkitImportSerializer(serializers.Serializer):
    file = serializers.FileField(required=False, help_text="A .json or .csv toolkit file (multipart).")
    content = serializers.CharField(required=False, help_text="The file content as text (instead of file).")
    format = serializers.CharField(
        required=False, help_text="json or csv; default: from the file name (json for content)."
    )

    def validate_format(self, value):
        if value not in ("json", "csv"):
            raise serializers.ValidationError("format must be json or csv.")
        return value

    name = serializers.CharField(required=False, help_text="Overrides the name in the file.")


def _error(exc):
    """A service error as a response: 409 for a locked toolkit, 400 for anything invalid."""
    if isinstance(exc, ToolkitLocked):
        return Response({"detail": str(exc), "locked": True}, status=status.HTTP_409_CONFLICT)
    if isinstance(exc, toolkit_format.ToolkitFormatError):
        return Response({"detail": "Nothing was imported. " + str(exc), "errors": exc.errors}, status=400)
    if isinstance(exc, ValidationError):
        return Response({"detail": " ".join(exc.messages)}, status=400)
    return Response({"detail": str(exc)}, status=400)


SERVICE_ERRORS = (ToolkitLocked, SlotError, ValidationError, ValueError)


class ToolkitScopedMixin(StudyScopedMixin):
    """Toolkits of the study; in the built-in library study everything is read-only."""

    def check_permissions(self, request):
        super().check_permissions(request)
        if request.method not in ("GET", "HEAD", "OPTIONS") and self.get_study().is_library and self.action != "copy":
            raise PermissionDenied("The built-in library is read-only; copy a toolkit into your study to change it.")

    def study_toolkit(self, pk):
        return get_object_or_404(Toolkit.objects.filter(study=self.get_study()), pk=pk)


@extend_schema(tags=["toolkits"])
class ToolkitViewSet(ToolkitScopedMixin, viewsets.ModelViewSet):
    """Toolkits of a study. POST with `items` (and `dimensions`) creates a full toolkit in the JSON export format."""

    queryset = (
        Toolkit.objects.prefetch_related("dimensions").annotate(n_items=Count("items")).order_by("name", "-version")
    )
    serializer_class = ToolkitSerializer

    def get_serializer_class(self):
        if self.action == "retrieve":
            return ToolkitDetailSerializer
        return ToolkitSerializer

    def create(self, request, *args, **kwargs):
        study = self.get_study()
        data = request.data
        try:
            if isinstance(data, dict) and data.get("items"):
                clean = toolkit_format.validate_data(dict(data))
                toolkit = toolkit_format.create_toolkit(study, clean, created_by=request.user)
                services.record_activity(study, request.user, "created a toolkit", str(toolkit))
            else:
                serializer = self.get_serializer(data=data)
                serializer.is_valid(raise_exception=True)
                fields = serializer.validated_data
                with services.transaction.atomic():
                    toolkit = services.create_blank_toolkit(
                        study,
                        name=fields["name"],
                        description=fields.get("description", ""),
                        language=fields.get("language", "en"),
                        actor=request.user,
                    )
                    if "slots" in fields or "combinations" in fields:
                        services.update_toolkit(
                            toolkit,
                            slots=fields.get("slots", {}),
                            combinations=fields.get("combinations"),
                            actor=request.user,
                        )
        except SERVICE_ERRORS as exc:
            return _error(exc)
        return Response(ToolkitDetailSerializer(toolkit, context=self.get_serializer_context()).data, status=201)

    def update(self, request, *args, **kwargs):
        toolkit = self.get_object()
        serializer = self.get_serializer(toolkit, data=request.data, partial=kwargs.get("partial", False))
        serializer.is_valid(raise_exception=True)
        fields = {
            k: v
            for k, v in serializer.validated_data.items()
            if k in ("name", "description", "language", "slots", "combinations")
        }
        try:
            services.update_toolkit(toolkit, actor=request.user, **fields)
        except SERVICE_ERRORS as exc:
            return _error(exc)
        return Response(
            ToolkitSerializer(self.get_queryset().get(pk=toolkit.pk), context=self.get_serializer_context()).data
        )

    def destroy(self, request, *args, **kwargs):
        try:
            services.delete_toolkit(self.get_object(), actor=request.user)
        except SERVICE_ERRORS as exc:
            return _error(exc)
        return Response(status=204)

    @extend_schema(
        parameters=[
            OpenApiParameter("limit", int, description="How many rendered prompts to return (default 50, max 5000).")
        ],
        responses=ToolkitExpansionSerializer,
    )
    @action(detail=True, methods=["get"])
    def expand(self, request, *args, **kwargs):
        """How many prompts the toolkit expands to, and the first `limit` of them with their slot values."""
        toolkit = self.get_object()
        try:
            limit = max(0, min(int(request.query_params.get("limit", 50)), 5000))
        except ValueError:
            return Response({"detail": "limit must be a whole number."}, status=400)
        problems = validate_toolkit(toolkit)
        if problems:
            return Response({"count": 0, "problems": problems, "units": []})
        units = [
            {
                "item_number": u.item_number,
                "slot_values": u.slot_values,
                "variant_key": u.variant_key,
                "prompt": u.prompt,
            }
            for u in itertools.islice(expand_units(toolkit), limit)
        ]
        return Response({"count": count_units(toolkit), "problems": [], "units": units})

    @extend_schema(request=None, responses={201: ToolkitDetailSerializer})
    @action(detail=True, methods=["post"], url_path="new_version")
    def new_version(self, request, *args, **kwargs):
        """A new editable version (same name, next version number, parent = this one)."""
        try:
            copy = services.TOOLKITS.new_version(self.get_object(), actor=request.user)
        except SERVICE_ERRORS as exc:
            return _error(exc)
        return Response(ToolkitDetailSerializer(copy, context=self.get_serializer_context()).data, status=201)

    @extend_schema(
        parameters=[OpenApiParameter("file_format", str, enum=["json", "csv"], description="Default json.")],
        responses={(200, "application/json"): OpenApiTypes.OBJECT, (200, "text/csv"): OpenApiTypes.STR},
    )
    @action(detail=True, methods=["get"], url_path="export")
    def export(self, request, *args, **kwargs):
        """The toolkit as a file in the stereoscope-toolkit JSON or CSV format (importable again)."""
        toolkit = self.get_object()
        fmt = request.query_params.get("file_format", "json")
        if fmt not in ("json", "csv"):
            return Response({"detail": "file_format must be json or csv."}, status=400)
        filename = f"toolkit-{toolkit.pk}-v{toolkit.version}.{fmt}"
        if fmt == "csv":
            return table_download(*toolkit_format.toolkit_table(toolkit), filename)
        response = HttpResponse(
            toolkit_format.export_json(toolkit).encode("utf-8"), content_type="application/json; charset=utf-8"
        )
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        return response

    @extend_schema(
        request={"multipart/form-data": ToolkitImportSerializer, "application/json": ToolkitImportSerializer},
        responses={201: ToolkitDetailSerializer},
    )
    @action(
        detail=False,
        methods=["post"],
        url_path="import",
        parser_classes=[parsers.MultiPartParser, parsers.FormParser, JSONObjectParser],
    )
    def import_file(self, request, *args, **kwargs):
        """Import a JSON or CSV toolkit file; everything is validated first, nothing is saved on any error."""
        serializer = ToolkitImportSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        fields = serializer.validated_data
        upload = fields.get("file")
        if upload is None and "content" not in fields:
            return Response({"detail": "Send a file (multipart) or content (text)."}, status=400)
        try:
            fmt = fields.get("format") or (toolkit_format.guess_format(upload.name) if upload else "json")
            content = upload.read() if upload else fields["content"]
            toolkit = toolkit_format.import_toolkit(
                self.get_study(), content, fmt=fmt, created_by=request.user, name=fields.get("name")
            )
        except SERVICE_ERRORS as exc:
            return _error(exc)
        services.record_activity(self.get_study(), request.user, "imported a toolkit", str(toolkit))
        return Response(ToolkitDetailSerializer(toolkit, context=self.get_serializer_context()).data, status=201)

    @extend_schema(
        request=inline_serializer("ToolkitCopy", {"toolkit": serializers.IntegerField()}),
        responses={201: ToolkitDetailSerializer},
    )
    @action(detail=False, methods=["post"])
    def copy(self, request, *args, **kwargs):
        """Copy a built-in library toolkit (its id in `toolkit`) into this study as an editable toolkit."""
        study = self.get_study()
        if study.is_library:
            return Response({"detail": "The library cannot copy into itself."}, status=400)
        toolkit_id = whole_number(request.data.get("toolkit"))
        source = (
            Toolkit.objects.filter(study__is_library=True, pk=toolkit_id).first() if toolkit_id is not None else None
        )
        if source is None:
            return Response({"detail": "toolkit must be the id of a built-in library toolkit."}, status=400)
        copy = services.TOOLKITS.copy_into(source, study=study, actor=request.user)
        return Response(ToolkitDetailSerializer(copy, context=self.get_serializer_context()).data, status=201)


class ToolkitChildMixin(ToolkitScopedMixin):
    """Items and dimensions: filtered by ?toolkit=<id>; writes go through the services (locks → 409)."""

    study_field = "toolkit__study"

    def get_queryset(self):
        queryset = super().get_queryset()
        toolkit = self.request.query_params.get("toolkit")
        if toolkit:
            toolkit_id = whole_number(toolkit)
            if toolkit_id is None:
                return queryset.none()
            queryset = queryset.filter(toolkit_id=toolkit_id)
        return queryset

    def get_serializer(self, *args, **kwargs):
        serializer = super().get_serializer(*args, **kwargs)
        fields = getattr(serializer, "fields", {})
        if "toolkit" in fields and not getattr(self, "swagger_fake_view", False):
            fields["toolkit"].queryset = Toolkit.objects.filter(study=self.get_study())
        if "dimension" in fields and not getattr(self, "swagger_fake_view", False):
            fields["dimension"].queryset = Dimension.objects.filter(toolkit__study=self.get_study())
        return serializer

    def destroy(self, request, *args, **kwargs):
        try:
            self.delete_object(self.get_object())
        except SERVICE_ERRORS as exc:
            return _error(exc)
        return Response(status=204)


@extend_schema(
    tags=["toolkits"], parameters=[OpenApiParameter("toolkit", int, description="Only this toolkit's items.")]
)
class PromptItemViewSet(ToolkitChildMixin, viewsets.ModelViewSet):
    """Prompt items of the study's toolkits. Writes to a locked toolkit answer 409; unknown slots 400."""

    queryset = PromptItem.objects.select_related("dimension", "toolkit").order_by("toolkit", "number")
    serializer_class = PromptItemSerializer

    def _save(self, request, item=None, partial=False):
        serializer = self.get_serializer(item, data=request.data, partial=partial)
        serializer.is_valid(raise_exception=True)
        data = dict(serializer.validated_data)
        toolkit = data.pop("toolkit", None) or item.toolkit
        if item is not None and toolkit.pk != item.toolkit_id:
            return Response({"detail": "An item cannot move to another toolkit."}, status=400)
        try:
            saved = services.save_item(toolkit, data, item=item, actor=request.user)
        except SERVICE_ERRORS as exc:
            return _error(exc)
        return Response(
            PromptItemSerializer(saved, context=self.get_serializer_context()).data, status=201 if item is None else 200
        )

    def create(self, request, *args, **kwargs):
        return self._save(request)

    def update(self, request, *args, **kwargs):
        return self._save(request, self.get_object(), partial=kwargs.get("partial", False))

    def delete_object(self, item):
        services.delete_item(item, actor=self.request.user)

    @extend_schema(
        request=inline_serializer(
            "ToolkitItemCounterfactual",
            {"name_pairs": serializers.CharField(required=False, help_text="e.g. Kelly=Joseph, Anna=Paul")},
        ),
        responses={201: PromptItemSerializer},
    )
    @action(detail=True, methods=["post"])
    def counterfactual(self, request, *args, **kwargs):
        """Add the gender-swapped twin of this item (names and pronouns swapped), linked to it."""
        item = self.get_object()
        try:
            pairs = parse_name_pairs(request.data.get("name_pairs", "")) or None
            twin = services.derive_twin(item, actor=request.user, name_pairs=pairs)
        except SERVICE_ERRORS as exc:
            return _error(exc)
        return Response(PromptItemSerializer(twin, context=self.get_serializer_context()).data, status=201)

    @extend_schema(
        request=inline_serializer("ToolkitItemMove", {"direction": serializers.CharField(help_text="up or down")}),
        responses={200: PromptItemSerializer},
    )
    @action(detail=True, methods=["post"])
    def move(self, request, *args, **kwargs):
        """Swap the item's number with its neighbour above or below."""
        item = self.get_object()
        direction = request.data.get("direction")
        if direction not in ("up", "down"):
            return Response({"detail": "direction must be up or down."}, status=400)
        try:
            services.move_item(item, -1 if direction == "up" else 1, actor=request.user)
        except SERVICE_ERRORS as exc:
            return _error(exc)
        item.refresh_from_db()
        return Response(PromptItemSerializer(item, context=self.get_serializer_context()).data)


@extend_schema(
    tags=["toolkits"], parameters=[OpenApiParameter("toolkit", int, description="Only this toolkit's dimensions.")]
)
class DimensionViewSet(ToolkitChildMixin, viewsets.ModelViewSet):
    """Dimensions of the study's toolkits. Deleting one keeps its items (without a dimension)."""

    queryset = Dimension.objects.select_related("toolkit").order_by("toolkit", "order", "name")
    serializer_class = DimensionSerializer

    def _save(self, request, dimension=None, partial=False):
        serializer = self.get_serializer(dimension, data=request.data, partial=partial)
        serializer.is_valid(raise_exception=True)
        data = serializer.validated_data
        toolkit = data.get("toolkit") or dimension.toolkit
        if dimension is not None and toolkit.pk != dimension.toolkit_id:
            return Response({"detail": "A dimension cannot move to another toolkit."}, status=400)
        try:
            saved = services.save_dimension(
                toolkit,
                name=data.get("name", dimension.name if dimension else ""),
                description=data.get("description", dimension.description if dimension else ""),
                dimension=dimension,
                actor=request.user,
            )
        except SERVICE_ERRORS as exc:
            return _error(exc)
        return Response(
            DimensionSerializer(saved, context=self.get_serializer_context()).data,
            status=201 if dimension is None else 200,
        )

    def create(self, request, *args, **kwargs):
        return self._save(request)

    def update(self, request, *args, **kwargs):
        return self._save(request, self.get_object(), partial=kwargs.get("partial", False))

    def delete_object(self, dimension):
        services.delete_dimension(dimension, actor=self.request.user)


api_routes = [
    ("toolkits", ToolkitViewSet, "api-toolkit"),
    ("toolkit-items", PromptItemViewSet, "api-toolkit-item"),
    ("toolkit-dimensions", DimensionViewSet, "api-toolkit-dimension"),
]
