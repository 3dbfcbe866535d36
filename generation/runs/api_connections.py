"""REST API for provider connections (site staff write them; a study's members list those open to it) and for a
study's spending (the ledger, its cap). Keys never appear: only the variable name and whether it is set."""

from django.shortcuts import get_object_or_404
from django.urls import path
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import permissions, serializers, status, viewsets
from rest_framework.decorators import action, api_view, permission_classes
from rest_framework.response import Response

from stereoscope.models import Role, Study
from stereoscope.permissions import VIEWER, check_library_write, check_role

from ..models import ProviderConnection
from . import connections, spending


class ConnectionSerializer(serializers.ModelSerializer):
    key_is_set = serializers.BooleanField(read_only=True)
    studies = serializers.PrimaryKeyRelatedField(many=True, read_only=True)

    class Meta:
        model = ProviderConnection
        fields = [
            "id",
            "name",
            "provider",
            "base_url",
            "api_key_env",
            "key_is_set",
            "allowed_models",
            "max_concurrency",
            "requests_per_minute",
            "tokens_per_minute",
            "all_studies",
            "studies",
            "monthly_cap_usd",
            "status",
            "status_reason",
            "approved_at",
            "created_at",
        ]
        read_only_fields = fields


class IsStaff(permissions.BasePermission):
    message = "Only site staff manage provider connections."

    def has_permission(self, request, view):
        return bool(request.user and request.user.is_authenticated and request.user.is_staff)


class ConnectionViewSet(viewsets.ViewSet):
    """Site staff: list, create, change, approve and delete connections (every write through `connections`)."""

    permission_classes = [IsStaff]
    serializer_class = ConnectionSerializer

    def _error(self, exc):
        return Response(
            {("non_field_errors" if k == "__all__" else k): [v] for k, v in exc.problems.items()},
            status=status.HTTP_400_BAD_REQUEST,
        )

    def list(self, request):
        rows = ProviderConnection.objects.prefetch_related("studies").order_by("name")
        return Response(ConnectionSerializer(rows, many=True).data)

    def retrieve(self, request, pk=None):
        return Response(ConnectionSerializer(get_object_or_404(ProviderConnection, pk=pk)).data)

    def create(self, request):
        try:
            connection = connections.save_connection(_data(request), actor=request.user)
        except connections.ConnectionError as exc:
            return self._error(exc)
        return Response(ConnectionSerializer(connection).data, status=status.HTTP_201_CREATED)

    def partial_update(self, request, pk=None):
        instance = get_object_or_404(ProviderConnection, pk=pk)
        try:
            connection = connections.save_connection(_data(request), actor=request.user, instance=instance)
        except connections.ConnectionError as exc:
            return self._error(exc)
        return Response(ConnectionSerializer(connection).data)

    update = partial_update

    def destroy(self, request, pk=None):
        try:
            connections.delete_connection(get_object_or_404(ProviderConnection, pk=pk), actor=request.user)
        except connections.ConnectionError as exc:
            return self._error(exc)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @action(detail=True, methods=["post"])
    def approve(self, request, pk=None):
        connection = connections.approve_connection(get_object_or_404(ProviderConnection, pk=pk), actor=request.user)
        return Response(ConnectionSerializer(connection).data)


def _data(request):
    if not isinstance(request.data, dict) and not hasattr(request.data, "getlist"):
        raise connections.ConnectionError("Send a JSON object of connection fields.")
    return {k: request.data.get(k) for k in request.data.keys()}


class StudyConnectionSerializer(serializers.ModelSerializer):
    class Meta:
        model = ProviderConnection
        fields = ["id", "name", "provider", "allowed_models", "status", "monthly_cap_usd"]


@extend_schema(responses=StudyConnectionSerializer(many=True))
@api_view(["GET"])
def study_connections(request, study_pk):
    """The connections a study's endpoints may choose (no host, no key variable)."""
    study = get_object_or_404(Study, pk=study_pk)
    check_role(request.user, study, VIEWER)
    return Response(StudyConnectionSerializer(connections.open_to(study), many=True).data)


SPENDING = inline_serializer(
    "StudySpending",
    {
        "total_usd": serializers.CharField(),
        "reserved_usd": serializers.CharField(),
        "calls": serializers.IntegerField(),
        "cap_usd": serializers.CharField(allow_null=True),
        "cap_limit_usd": serializers.CharField(allow_null=True),
        "remaining_usd": serializers.CharField(allow_null=True),
        "rows": serializers.ListField(child=serializers.DictField()),
    },
)


def _money(value):
    return None if value is None else str(value)


def spending_data(study):
    data = spending.study_spending(study)
    return {
        "total_usd": _money(data["total_usd"]),
        "reserved_usd": _money(data["reserved_usd"]),
        "calls": data["calls"],
        "input_tokens": data["input_tokens"],
        "output_tokens": data["output_tokens"],
        "cap_usd": _money(data["cap_usd"]),
        "cap_limit_usd": _money(data["cap_limit_usd"]),
        "remaining_usd": _money(data["remaining_usd"]),
        "rows": [
            {
                "month": f"{r['month']:%Y-%m}",
                "connection": r["connection__name"],
                "calls": r["calls"],
                "input_tokens": r["input_tokens"],
                "output_tokens": r["output_tokens"],
                "cost_usd": _money(r["cost_usd"]),
                "reserved_usd": _money(r["reserved_usd"]),
            }
            for r in data["rows"]
        ],
    }


@extend_schema(
    request=inline_serializer("StudyCap", {"cap_usd": serializers.CharField(allow_null=True)}), responses=SPENDING
)
@api_view(["GET", "POST"])
@permission_classes([permissions.IsAuthenticated])
def study_spending(request, study_pk):
    """GET: the study's ledger (researchers). POST {"cap_usd": "250"} (study admins; null removes the cap) or
    {"cap_limit_usd": ...} (site staff)."""
    study = get_object_or_404(Study, pk=study_pk)
    check_role(request.user, study, Role.RESEARCHER)
    check_library_write(request, study)  # the library's cap too: nothing but load_builtin writes it
    if request.method == "POST":
        body = request.data if isinstance(request.data, dict) else {}
        try:
            if "cap_limit_usd" in body:
                spending.set_study_cap_limit(study, body.get("cap_limit_usd"), actor=request.user)
            elif "cap_usd" in body:
                spending.set_study_cap(study, body.get("cap_usd"), actor=request.user)
            else:
                raise spending.CapError('Send {"cap_usd": <USD or null>}.')
        except spending.CapError as exc:
            code = status.HTTP_403_FORBIDDEN if str(exc).startswith("Only") else status.HTTP_400_BAD_REQUEST
            return Response({"detail": str(exc)}, status=code)
    return Response(spending_data(study))


api_urls = [
    path("connections/", ConnectionViewSet.as_view({"get": "list", "post": "create"}), name="api-connections"),
    path(
        "connections/<int:pk>/",
        ConnectionViewSet.as_view({"get": "retrieve", "patch": "partial_update", "put": "update", "delete": "destroy"}),
        name="api-connection",
    ),
    path(
        "connections/<int:pk>/approve/",
        ConnectionViewSet.as_view({"post": "approve"}),
        name="api-connection-approve",
    ),
    path("studies/<int:study_pk>/connections/", study_connections, name="api-study-connections"),
    path("studies/<int:study_pk>/spending/", study_spending, name="api-study-spending"),
]
