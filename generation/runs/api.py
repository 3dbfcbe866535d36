"""REST API for model endpoints, generation runs (create, plan, start, cancel, resume, retry, status, manual answers,
import) and outputs (filtered list, read-only detail with every attempt). Keys never appear: only the variable name
and whether it is set."""

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_field, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from stereoscope.api import StudyScopedMixin
from stereoscope.api_bases import JobActionsMixin, JobSerializer
from stereoscope.api_parsers import JSONObjectParser
from stereoscope.models import Role
from stereoscope.permissions import VIEWER
from stereoscope.untrusted import whole_number

from ..models import GenerationRun, ModelEndpoint, Output, ProviderCall, Toolkit
from . import batches, collect
from . import services as runs
from .endpoint_services import CONNECTION_ONLY, EndpointError, delete_endpoint, endpoint_problems, save_endpoint
from .views import filtered_outputs


@extend_schema_field(OpenApiTypes.STR)
class ConnectionField(serializers.Field):
    """A provider connection by name or id (checked against the study's connections by the service); read back as
    its name."""

    def to_representation(self, value):
        return value.name if value is not None else None

    def to_internal_value(self, data):
        if not isinstance(data, (str, int)) or isinstance(data, bool):
            raise serializers.ValidationError("Give the connection's name (or id).")
        return data


class EndpointSerializer(serializers.ModelSerializer):
    connection = ConnectionField(
        required=False, allow_null=True, help_text="The provider connection's name: it fixes the host and the key."
    )
    key_is_set = serializers.BooleanField(
        read_only=True, help_text="Whether the connection's key variable is set on this server."
    )
    connection_status = serializers.CharField(source="connection.status", read_only=True, default=None)
    provider = serializers.ChoiceField(choices=ModelEndpoint._meta.get_field("provider").choices, required=False)
    default_params = serializers.JSONField(required=False)

    class Meta:
        model = ModelEndpoint
        fields = [
            "id",
            "name",
            "provider",
            "model_id",
            "model_family",
            "connection",
            "connection_status",
            "key_is_set",
            "default_params",
            "max_concurrency",
            "requests_per_minute",
            "tokens_per_minute",
            "timeout_seconds",
            "max_attempts",
            "backoff_base_s",
            "backoff_max_s",
            "input_price_per_mtok",
            "output_price_per_mtok",
            "batch_enabled",
            "batch_input_price_per_mtok",
            "batch_output_price_per_mtok",
            "created_at",
        ]
        read_only_fields = ["created_at"]
        validators = []  # uniqueness is checked with a clear message in endpoint_problems

    def to_internal_value(self, data):
        attrs = super().to_internal_value(data)
        if hasattr(data, "get"):  # fields of connections are refused by the service, not dropped here
            for field in CONNECTION_ONLY:
                if data.get(field) not in (None, ""):
                    attrs[field] = data.get(field)
        return attrs

    def validate(self, attrs):
        _, problems = endpoint_problems(attrs, self.context["study"], self.instance)
        if problems:
            raise serializers.ValidationError(
                {("non_field_errors" if k == "__all__" else k): v for k, v in problems.items()}
            )
        return attrs


class GenerationRunSerializer(JobSerializer):
    toolkit = serializers.PrimaryKeyRelatedField(
        queryset=Toolkit.objects.none(),
        error_messages={
            "does_not_exist": "Unknown toolkit {pk_value}: choose one of this study or of the built-in library."
        },
    )
    endpoints = serializers.PrimaryKeyRelatedField(
        many=True,
        queryset=ModelEndpoint.objects.none(),
        error_messages={"does_not_exist": "Unknown endpoint {pk_value}: choose endpoints of this study."},
    )
    param_overrides = serializers.JSONField(required=False)
    trials = serializers.IntegerField(required=False, default=1)

    class Meta:
        model = GenerationRun
        fields = [
            "name",
            "toolkit",
            "endpoints",
            "trials",
            "param_overrides",
            "system_prompt",
            "execution_mode",
            "is_import",
        ]
        read_only_fields = ["is_import"]

    def get_fields(self):
        fields = super().get_fields()
        study = self.context.get("study")
        if study is not None:
            fields["toolkit"].queryset = runs.toolkits_for(study)
            fields["endpoints"].child_relation.queryset = ModelEndpoint.objects.filter(study=study)
        return fields


class RunStatusSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    status = serializers.CharField()
    message = serializers.CharField()
    execution_mode = serializers.CharField(help_text="live or batch")
    overall = serializers.DictField()
    per_endpoint = serializers.ListField(child=serializers.DictField())
    batches = serializers.ListField(child=serializers.DictField(), help_text="Provider batches (batch mode).")
    batch_cost = serializers.DictField(help_text="Estimated and actual cost of the batches, at batch prices.")


def run_status(run):
    run.refresh_from_db()
    counts = runs.counts(run)
    for row in counts["per_endpoint"]:
        row["cost_usd"] = None if row["cost_usd"] is None else str(row["cost_usd"])
    counts["overall"]["cost_usd"] = str(counts["overall"]["cost_usd"])
    counts.update(batches.summary_data(runs.RUN_JOB.name, run.pk))
    return {"id": run.pk, "status": run.status, "message": run.message, "execution_mode": run.execution_mode, **counts}


def problems_response(exc):
    return Response({"detail": str(exc), "problems": exc.problems}, status=status.HTTP_400_BAD_REQUEST)


FILE_UPLOAD = inline_serializer(
    "GenerationFileUpload",
    {
        "file": serializers.FileField(),
        "format": serializers.CharField(required=False),
        "run_name": serializers.CharField(required=False),
        "toolkit": serializers.IntegerField(required=False),
    },
)
ANSWERS = inline_serializer(
    "ManualAnswersUpload",
    {
        "file": serializers.FileField(required=False),
        "format": serializers.CharField(required=False),
        "skip_empty": serializers.BooleanField(required=False),
        "answers": serializers.ListField(child=serializers.DictField(), required=False),
    },
)
PROBLEMS = inline_serializer(
    "GenerationImportProblems",
    {"detail": serializers.CharField(), "problems": serializers.ListField(child=serializers.CharField())},
)


class EndpointViewSet(StudyScopedMixin, viewsets.ModelViewSet):
    serializer_class = EndpointSerializer
    queryset = ModelEndpoint.objects.all()

    def get_serializer_context(self):
        context = super().get_serializer_context()
        if not getattr(self, "swagger_fake_view", False):
            context["study"] = self.get_study()
        return context

    def perform_create(self, serializer):
        serializer.instance = save_endpoint(self.get_study(), serializer.validated_data, actor=self.request.user)

    def perform_update(self, serializer):
        serializer.instance = save_endpoint(
            self.get_study(), serializer.validated_data, instance=serializer.instance, actor=self.request.user
        )

    def destroy(self, request, *args, **kwargs):
        try:
            delete_endpoint(self.get_object(), actor=request.user)
        except EndpointError as exc:
            return Response({"detail": exc.problems.get("__all__", str(exc))}, status=status.HTTP_400_BAD_REQUEST)
        return Response(status=status.HTTP_204_NO_CONTENT)


class GenerationRunViewSet(
    JobActionsMixin,
    StudyScopedMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = GenerationRunSerializer
    queryset = GenerationRun.objects.prefetch_related("endpoints").order_by("-created_at")
    action_roles = {"plan": VIEWER, "progress": VIEWER, "collection_sheet": Role.RESEARCHER}
    parser_classes = [JSONObjectParser, MultiPartParser, FormParser]

    def get_serializer_context(self):
        context = super().get_serializer_context()
        if not getattr(self, "swagger_fake_view", False):
            context["study"] = self.get_study()
        return context

    def perform_create(self, serializer):
        data = serializer.validated_data
        serializer.instance = runs.create_run(
            self.get_study(),
            name=data["name"],
            toolkit=data["toolkit"],
            endpoints=data["endpoints"],
            trials=data.get("trials", 1),
            param_overrides=data.get("param_overrides"),
            system_prompt=data.get("system_prompt", ""),
            execution_mode=data.get("execution_mode", "live"),
            actor=self.request.user,
        )

    @extend_schema(responses={204: None, 409: dict})
    def destroy(self, request, *args, **kwargs):
        """Delete a run without outputs; one with outputs (and their codings or verdicts) or a live job is refused
        (409), saying what depends on it."""
        try:
            runs.delete_run(self.get_object(), actor=request.user)
        except runs.RunError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(
        responses={200: OpenApiTypes.OBJECT},
        parameters=[OpenApiParameter("sample", int, description="How many rendered prompts to include (default 20).")],
    )
    @action(detail=True, methods=["get"])
    def plan(self, request, study_pk=None, pk=None):
        """The dry run: number of calls, rendered prompts, estimated tokens and cost. Spends and stores nothing."""
        run = self.get_object()
        if run.is_import:
            return Response({"detail": "An import run has no plan."}, status=status.HTTP_400_BAD_REQUEST)
        try:
            sample = max(0, min(500, int(request.query_params.get("sample", 20))))
        except ValueError:
            return Response({"detail": "sample must be a whole number."}, status=status.HTTP_400_BAD_REQUEST)
        plan = runs.plan(run, sample=sample)
        for row in plan["endpoints"]:
            endpoint = row.pop("endpoint")
            row.update(
                endpoint_id=endpoint.pk,
                endpoint_name=endpoint.name,
                cost_usd=None if row["cost_usd"] is None else str(row["cost_usd"]),
                batch_cost_usd=None if row["batch_cost_usd"] is None else str(row["batch_cost_usd"]),
            )
        plan["totals"]["cost_usd"] = str(plan["totals"]["cost_usd"]) if plan["totals"]["priced"] else None
        totals = plan["totals"]
        totals["batch_cost_usd"] = str(totals["batch_cost_usd"]) if totals["batch_priced"] else None
        if totals.get("budget_remaining_usd") is not None:
            totals["budget_remaining_usd"] = str(totals["budget_remaining_usd"])
        return Response(plan)

    @extend_schema(responses={200: RunStatusSerializer})
    @action(detail=True, methods=["get"], url_path="status")
    def progress(self, request, study_pk=None, pk=None):
        """done / failed / pending / in flight, rate, ETA; tokens and cost per endpoint."""
        return Response(run_status(self.get_object()))

    def job_answer(self, run):
        return run_status(run)  # the run's actions answer its status (RunStatusSerializer), not the run

    @extend_schema(request=None, responses={200: RunStatusSerializer})
    @action(detail=True, methods=["post"])
    def start(self, request, study_pk=None, pk=None):
        return self.job_action(runs.start)

    @extend_schema(request=None, responses={200: RunStatusSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, study_pk=None, pk=None):
        return self.job_action(runs.cancel)

    @extend_schema(request=None, responses={200: RunStatusSerializer})
    @action(detail=True, methods=["post"])
    def resume(self, request, study_pk=None, pk=None):
        return self.job_action(runs.resume)

    @extend_schema(request=None, responses={200: RunStatusSerializer})
    @action(detail=True, methods=["post"])
    def retry_failed(self, request, study_pk=None, pk=None):
        return self.job_action(runs.retry_failed)

    @extend_schema(
        request=inline_serializer("RunModeSwitch", {"execution_mode": serializers.CharField()}),
        responses={200: RunStatusSerializer},
    )
    @action(detail=True, methods=["post"])
    def mode(self, request, study_pk=None, pk=None):
        """Switch the run between live and batch mode (e.g. to call units back from an expired batch live)."""
        mode = request.data.get("execution_mode") if hasattr(request.data, "get") else None
        return self.job_action(lambda run, actor: runs.set_mode(run, mode, actor))

    @extend_schema(
        responses={(200, "text/csv"): OpenApiTypes.BINARY},
        parameters=[OpenApiParameter("kind", str, enum=["csv", "xlsx"], description="Sheet format (default csv).")],
    )
    @action(detail=True, methods=["get"])
    def collection_sheet(self, request, study_pk=None, pk=None):
        """The manual-collection sheet: one row per unit of a manual endpoint, keyed by `unit`."""
        run = self.get_object()
        kind = request.query_params.get("kind", "csv")
        if kind not in ("csv", "xlsx"):
            return Response({"detail": "kind must be csv or xlsx."}, status=status.HTTP_400_BAD_REQUEST)
        if not collect.has_manual(run):
            return Response({"detail": "This run has no manual endpoint."}, status=status.HTTP_400_BAD_REQUEST)
        return collect.sheet_download(run, kind)

    @extend_schema(request=ANSWERS, responses={200: RunStatusSerializer, 400: PROBLEMS})
    @action(detail=True, methods=["post"])
    def answers(self, request, study_pk=None, pk=None):
        """Manual answers: a filled-in collection sheet (file) or {"answers": [{"unit": 12, "answer": "..."}]}.
        Validated completely before anything is saved."""
        run = self.get_object()
        if not collect.has_manual(run):
            return Response({"detail": "This run has no manual endpoint."}, status=status.HTTP_400_BAD_REQUEST)
        skip_empty = str(request.data.get("skip_empty", "")).lower() in ("1", "true", "yes", "on")
        try:
            upload = request.FILES.get("file")
            if upload is not None:
                collect.import_answers(
                    run,
                    upload.name,
                    upload.read(),
                    fmt=request.data.get("format"),
                    actor=request.user,
                    skip_empty=skip_empty,
                )
            else:
                answers = request.data.get("answers") if hasattr(request.data, "get") else None
                if not isinstance(answers, list) or not all(isinstance(a, dict) for a in answers):
                    raise collect.ImportProblems(
                        ['Send a file, or answers as a list of {"unit": …, "answer": …} objects.']
                    )
                records = [
                    (n, {collect._clean_key(k): v for k, v in a.items()}) for n, a in enumerate(answers, start=1)
                ]
                records = [(f"Answer {n}", values) for n, values in records]
                collect.save_answers(
                    run, collect.validate_answers(run, records, skip_empty=skip_empty), actor=request.user, source="api"
                )
        except collect.ImportProblems as exc:
            return problems_response(exc)
        return Response(run_status(run))

    @extend_schema(request=FILE_UPLOAD, responses={201: GenerationRunSerializer, 400: PROBLEMS})
    @action(detail=False, methods=["post"], url_path="import")
    def import_outputs(self, request, study_pk=None):
        """Import outputs generated elsewhere (CSV, XLSX, JSONL, JSON) into a new import run; all or nothing."""
        upload = request.FILES.get("file")
        if upload is None:
            return Response({"detail": "Send the file as multipart field 'file'."}, status=status.HTTP_400_BAD_REQUEST)
        toolkit = None
        raw_toolkit = request.data.get("toolkit")
        if raw_toolkit not in (None, ""):
            toolkit_id = whole_number(raw_toolkit)
            if toolkit_id is None:
                return Response({"detail": "toolkit must be a toolkit id."}, status=status.HTTP_400_BAD_REQUEST)
            toolkit = runs.toolkits_for(self.get_study()).filter(pk=toolkit_id).first()
            if toolkit is None:
                return Response({"detail": f"Unknown toolkit {raw_toolkit}."}, status=status.HTTP_400_BAD_REQUEST)
        try:
            run = collect.import_outputs(
                self.get_study(),
                upload.name,
                upload.read(),
                fmt=request.data.get("format"),
                run_name=request.data.get("run_name", ""),
                toolkit=toolkit,
                actor=request.user,
            )
        except collect.ImportProblems as exc:
            return problems_response(exc)
        return Response(
            GenerationRunSerializer(run, context=self.get_serializer_context()).data, status=status.HTTP_201_CREATED
        )


class ProviderCallSerializer(serializers.ModelSerializer):
    class Meta:
        model = ProviderCall
        fields = [
            "id",
            "attempt",
            "ok",
            "provider",
            "model",
            "messages",
            "params",
            "response_text",
            "raw_response",
            "finish_reason",
            "input_tokens",
            "output_tokens",
            "cost_usd",
            "latency_ms",
            "http_status",
            "error",
            "retry_after_s",
            "backoff_s",
            "started_at",
            "batch_id",
            "custom_id",
        ]


class OutputSerializer(serializers.ModelSerializer):
    item_number = serializers.IntegerField(source="item.number", read_only=True, default=None)
    dimension = serializers.CharField(source="item.dimension.name", read_only=True, default=None)

    class Meta:
        model = Output
        fields = [
            "id",
            "run",
            "item",
            "item_number",
            "dimension",
            "endpoint",
            "model_name",
            "trial",
            "variant_key",
            "slot_values",
            "prompt_text",
            "text",
            "external_id",
            "status",
            "error",
            "finish_reason",
            "input_tokens",
            "output_tokens",
            "cost_usd",
            "latency_ms",
            "created_at",
            "completed_at",
        ]


class OutputDetailSerializer(OutputSerializer):
    calls = ProviderCallSerializer(many=True, read_only=True)

    class Meta(OutputSerializer.Meta):
        fields = OutputSerializer.Meta.fields + ["provenance", "calls"]


class OutputViewSet(StudyScopedMixin, viewsets.ReadOnlyModelViewSet):
    queryset = Output.objects.select_related("item__dimension").order_by("-run_id", "id")

    def get_serializer_class(self):
        return OutputDetailSerializer if self.action == "retrieve" else OutputSerializer

    @extend_schema(
        parameters=[OpenApiParameter(name, int) for name in ("run", "item", "dimension", "trial")]
        + [
            OpenApiParameter("model", str),
            OpenApiParameter("status", str, enum=["pending", "in_flight", "done", "failed"]),
        ]
    )
    def list(self, request, *args, **kwargs):
        qs, filters = filtered_outputs(self.get_study(), request.query_params)
        if filters["problems"]:
            return Response(
                {"detail": " ".join(p.replace("Ignored the", "Bad") for p in filters["problems"])},
                status=status.HTTP_400_BAD_REQUEST,
            )
        qs = qs.select_related("item__dimension").order_by("-run_id", "id")
        page = self.paginate_queryset(qs)
        return self.get_paginated_response(OutputSerializer(page, many=True).data)

    def retrieve(self, request, *args, **kwargs):
        output = get_object_or_404(
            Output.objects.select_related("item__dimension").prefetch_related("calls"),
            pk=whole_number(kwargs["pk"]),  # the route takes any text: 'abc' or '²' is a 404, not a 500
            study=self.get_study(),
        )
        return Response(OutputDetailSerializer(output).data)


api_routes = [
    ("endpoints", EndpointViewSet, "api-endpoint"),
    ("runs", GenerationRunViewSet, "api-generation-run"),
    ("outputs", OutputViewSet, "api-output"),
]
