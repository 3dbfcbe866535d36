"""REST API for questionnaires under /api/studies/<study_pk>/."""

import json

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response as ApiResponse

from measures.selectors import measure_run_in_study
from stereoscope.api import StudyScopedMixin
from stereoscope.api_bases import JobActionsMixin
from stereoscope.models import Role
from stereoscope.untrusted import whole_number

from .. import reports, runs, services
from ..analysis import sanitize
from ..models import Context, ContextSet, Instrument, PersonaSet, QuestionnaireRun, Response
from ..services import PsychError
from .serializers import (
    ContextSetCreateSerializer,
    ContextSetSerializer,
    ExtractionAuditInputSerializer,
    IncludeSerializer,
    InstrumentImportSerializer,
    InstrumentSerializer,
    PersonaSetCreateSerializer,
    PersonaSetSerializer,
    QuestionnaireContextSerializer,
    QuestionnaireResponseSerializer,
    QuestionnaireRunSerializer,
)


def bad_request(exc):
    return ApiResponse({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)


class InstrumentViewSet(StudyScopedMixin, viewsets.ReadOnlyModelViewSet):
    serializer_class = InstrumentSerializer
    queryset = Instrument.objects.prefetch_related("items__parallel").select_related("study")

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Instrument.objects.none()
        return services.instruments_for(self.get_study()).prefetch_related("items__parallel")

    @extend_schema(request=InstrumentImportSerializer, responses={201: InstrumentSerializer})
    def create(self, request, *args, **kwargs):
        ser = InstrumentImportSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        try:
            instrument = services.create_instrument(self.get_study(), ser.validated_data["spec"], actor=request.user)
        except PsychError as exc:
            return bad_request(exc)
        return ApiResponse(InstrumentSerializer(instrument).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={200: dict})
    @action(detail=True, methods=["get"])
    def export(self, request, *args, **kwargs):
        return ApiResponse(services.export_instrument(self.get_object()))


class PersonaSetViewSet(StudyScopedMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    serializer_class = PersonaSetSerializer
    queryset = PersonaSet.objects.all()

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return PersonaSet.objects.none()
        return services.persona_sets_for(self.get_study())

    @extend_schema(request=PersonaSetCreateSerializer, responses={201: PersonaSetSerializer})
    def create(self, request, *args, **kwargs):

        ser = PersonaSetCreateSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        d = ser.validated_data
        try:
            if d.get("personas") is not None:
                text = "\n".join(json.dumps(p) for p in d["personas"])
                ps = services.import_personas(self.get_study(), d["name"], text, "api.jsonl")
            else:
                ps = services.generate_personas(self.get_study(), d["name"], d.get("template", ""), d.get("attributes"))
        except PsychError as exc:
            return bad_request(exc)
        return ApiResponse(PersonaSetSerializer(ps).data, status=status.HTTP_201_CREATED)


class ContextSetViewSet(StudyScopedMixin, mixins.CreateModelMixin, viewsets.ReadOnlyModelViewSet):
    serializer_class = ContextSetSerializer
    queryset = ContextSet.objects.prefetch_related("contexts")

    @extend_schema(request=ContextSetCreateSerializer, responses={201: ContextSetSerializer})
    def create(self, request, *args, **kwargs):

        ser = ContextSetCreateSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        d = ser.validated_data
        study = self.get_study()
        try:
            if d.get("persona_set") is not None:
                ps = services.persona_sets_for(study).filter(pk=d["persona_set"]).first()
                if ps is None:
                    raise PsychError("No such persona set in this study or the library.")
                cs = services.contexts_from_personas(study, d["name"], ps, n=d.get("n"), seed=d["seed"])
            elif d.get("contexts") is not None:
                text = "\n".join(json.dumps(c) for c in d["contexts"])
                cs = services.import_contexts(study, d["name"], text, "api.jsonl", n=d.get("n"), seed=d["seed"])
            else:
                raise PsychError("Give persona_set or contexts.")
        except PsychError as exc:
            return bad_request(exc)
        return ApiResponse(ContextSetSerializer(cs).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=IncludeSerializer, responses={200: QuestionnaireContextSerializer})
    @action(detail=True, methods=["post"])
    def include(self, request, *args, **kwargs):
        ser = IncludeSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        context = get_object_or_404(Context, pk=ser.validated_data["context"], context_set=self.get_object())
        try:
            services.set_included(context, ser.validated_data["included"], ser.validated_data["reason"])
        except PsychError as exc:
            return bad_request(exc)
        return ApiResponse(QuestionnaireContextSerializer(context).data)


class QuestionnaireRunViewSet(
    JobActionsMixin, StudyScopedMixin, mixins.CreateModelMixin, mixins.DestroyModelMixin, viewsets.ReadOnlyModelViewSet
):
    serializer_class = QuestionnaireRunSerializer
    queryset = QuestionnaireRun.objects.select_related("instrument", "context_set").prefetch_related("endpoints")

    @extend_schema(responses={204: None, 409: dict})
    def destroy(self, request, *args, **kwargs):
        """Delete a run without responses; one with responses or a live job is refused (409), saying why."""
        try:
            runs.delete_run(self.get_object(), actor=request.user)
        except PsychError as exc:
            return ApiResponse({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return ApiResponse(status=status.HTTP_204_NO_CONTENT)

    def create(self, request, *args, **kwargs):
        ser = QuestionnaireRunSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        d = dict(ser.validated_data)
        try:
            run = runs.create_run(self.get_study(), actor=request.user, **d)
        except PsychError as exc:
            return bad_request(exc)
        return ApiResponse(QuestionnaireRunSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: QuestionnaireRunSerializer})
    @action(detail=True, methods=["post"])
    def start(self, request, *args, **kwargs):
        return self.job_action(runs.start)

    @extend_schema(request=None, responses={200: QuestionnaireRunSerializer})
    @action(detail=True, methods=["post"])
    def resume(self, request, *args, **kwargs):
        return self.job_action(runs.resume)

    @extend_schema(request=None, responses={200: QuestionnaireRunSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, *args, **kwargs):
        return self.job_action(runs.cancel)

    @extend_schema(request=None, responses={200: QuestionnaireRunSerializer})
    @action(detail=True, methods=["post"])
    def retry(self, request, *args, **kwargs):
        return self.job_action(runs.retry_failed)

    @extend_schema(responses={200: dict})
    @action(detail=True, methods=["get"])
    def report(self, request, *args, **kwargs):
        report = reports.run_report(self.get_object())
        body = {
            "missing_policy": report["missing_policy"],
            "missing_table": report["missing_table"],
            "models": [
                {
                    "endpoint": m["endpoint"],
                    "extraction": m["extraction"],
                    "audit": m["audit"],
                    "analysis": {k: v for k, v in m["analysis"].items() if k != "svg"},
                }
                for m in report["models"]
            ],
            "group_tests": report["group_tests"],
        }
        return ApiResponse(sanitize(body))

    @extend_schema(
        parameters=[
            OpenApiParameter("alternate", int),
            OpenApiParameter("option_order", int),
            OpenApiParameter("convergent", int),
            OpenApiParameter("concurrent", int, description="A measure run over texts generated in the run's contexts"),
        ],
        responses={200: dict},
    )
    @action(detail=True, methods=["get"])
    def validation(self, request, *args, **kwargs):
        """Jung's ratings with the reliability gate: pass the ids of the alternate-form, option-order and
        convergent runs over the same contexts."""
        run = self.get_object()
        others = {}
        for key in ("alternate", "option_order", "convergent"):
            value = request.query_params.get(key)
            if value in (None, ""):
                others[key] = None
                continue
            pk = whole_number(value)
            found = self.get_queryset().filter(pk=pk).first() if pk is not None else None
            if found is None:
                return bad_request(f"No run {value!r} in this study for {key}.")
            others[key] = found
        concurrent = None
        value = request.query_params.get("concurrent")
        if value not in (None, ""):
            pk = whole_number(value)
            concurrent = measure_run_in_study(run.study, pk) if pk is not None else None
            if concurrent is None:
                return bad_request(f"No measure run {value!r} in this study for concurrent.")
        return ApiResponse(
            reports.validation_summary(
                run, others["alternate"], others["option_order"], others["convergent"], concurrent
            )
        )

    @extend_schema(responses={200: dict})
    @action(detail=True, methods=["get"], url_path="run-file")
    def run_file(self, request, *args, **kwargs):
        return ApiResponse(runs.export_run_file(self.get_object()))

    @extend_schema(
        parameters=[
            OpenApiParameter("other", int, required=True),
            OpenApiParameter("kind", str, enum=list(reports.COMPARISONS)),
        ],
        responses={200: dict},
    )
    @action(detail=True, methods=["get"])
    def compare(self, request, *args, **kwargs):
        run = self.get_object()
        try:
            other = self.get_queryset().get(pk=int(request.query_params.get("other", "")))
            return ApiResponse(reports.compare_runs(run, other, request.query_params.get("kind", "alternate_form")))
        except (ValueError, QuestionnaireRun.DoesNotExist) as exc:
            return bad_request(
                exc
                if isinstance(exc, ValueError) and "comparison" in str(exc)
                else "Give ?other=<run id of this study>."
            )


class QuestionnaireResponseViewSet(StudyScopedMixin, viewsets.ReadOnlyModelViewSet):
    serializer_class = QuestionnaireResponseSerializer
    queryset = Response.objects.select_related("item", "context").order_by("pk")
    study_field = "run__study"
    action_roles = {"audit": Role.CODER}

    def get_queryset(self):
        qs = super().get_queryset()
        params = self.request.query_params
        if params.get("run"):
            run_id = whole_number(params["run"])
            qs = qs.filter(run_id=run_id) if run_id is not None else qs.none()
        if params.get("extraction"):
            qs = qs.filter(extraction=params["extraction"])
        if params.get("audit") == "1":
            qs = qs.filter(audit_sampled=True)
        return qs

    @extend_schema(
        parameters=[OpenApiParameter("run", int), OpenApiParameter("extraction", str), OpenApiParameter("audit", str)]
    )
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    @extend_schema(
        request=ExtractionAuditInputSerializer,
        responses={
            200: inline_serializer(
                "ExtractionAuditResult", {"response": serializers.IntegerField(), "correct": serializers.BooleanField()}
            )
        },
    )
    @action(detail=True, methods=["post"])
    def audit(self, request, *args, **kwargs):
        response = self.get_object()
        ser = ExtractionAuditInputSerializer(data=request.data)
        ser.is_valid(raise_exception=True)
        if not response.audit_sampled:
            return bad_request("This response is not in the audit sample.")
        try:
            a = runs.record_audit(
                response,
                request.user,
                ser.validated_data["correct"],
                ser.validated_data.get("corrected_value"),
                ser.validated_data["note"],
            )
        except PsychError as exc:
            return bad_request(exc)
        return ApiResponse({"response": response.pk, "correct": a.correct})


api_routes = [
    ("instruments", InstrumentViewSet, "api-psych-instrument"),
    ("persona-sets", PersonaSetViewSet, "api-psych-persona-set"),
    ("context-sets", ContextSetViewSet, "api-psych-context-set"),
    ("questionnaire-runs", QuestionnaireRunViewSet, "api-psych-run"),
    ("questionnaire-responses", QuestionnaireResponseViewSet, "api-psych-response"),
]
