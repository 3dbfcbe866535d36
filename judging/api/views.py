"""REST API for judging: templates, rounds (plan, launch, cancel, resume, retry, re-ask, report, weights,
verification), verdicts (with human checks) and toolkit weights (export and import)."""

from django.contrib.auth import get_user_model
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from generation import selectors as generation
from stereoscope.api import StudyScopedMixin
from stereoscope.api_bases import JobActionsMixin
from stereoscope.api_parsers import JSONObjectParser
from stereoscope.downloads import table_download
from stereoscope.models import Role
from stereoscope.untrusted import whole_number, whole_numbers

from .. import reports, rounds, services
from ..models import JudgeRound, JudgeTemplate, Verdict, VerificationRequest
from .serializers import (
    HumanCheckAnswerSerializer,
    JudgeReaskSerializer,
    JudgeRoundSerializer,
    JudgeTemplateSerializer,
    ToolkitWeightRowSerializer,
    VerdictSerializer,
    VerificationRequestSerializer,
    WeightsImportSerializer,
)


def _bad(message):
    return Response({"detail": message}, status=status.HTTP_400_BAD_REQUEST)


class JudgeTemplateViewSet(StudyScopedMixin, viewsets.ModelViewSet):
    """Judge templates of the study plus the built-in library's (read-only). Editing a used or locked template
    creates a new version."""

    serializer_class = JudgeTemplateSerializer
    queryset = JudgeTemplate.objects.select_related("study")

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return JudgeTemplate.objects.none()
        return rounds.templates_for(self.get_study()).order_by("name", "-version")

    def create(self, request, *args, **kwargs):
        data = self.get_serializer(data=request.data)
        data.is_valid(raise_exception=True)
        template = services.create_template(self.get_study(), actor=request.user, **data.validated_data)
        return Response(self.get_serializer(template).data, status=status.HTTP_201_CREATED)

    def update(self, request, *args, **kwargs):
        template = self.get_object()
        data = self.get_serializer(template, data=request.data, partial=kwargs.get("partial", False))
        data.is_valid(raise_exception=True)
        result, created = services.update_template(
            template, study=self.get_study(), actor=request.user, **data.validated_data
        )
        return Response(
            self.get_serializer(result).data, status=status.HTTP_201_CREATED if created else status.HTTP_200_OK
        )

    def destroy(self, request, *args, **kwargs):
        try:
            services.delete_template(self.get_object(), study=self.get_study(), actor=request.user)
        except services.JudgingError as exc:
            return _bad(str(exc))
        return Response(status=status.HTTP_204_NO_CONTENT)


class JudgeRoundViewSet(
    JobActionsMixin,
    StudyScopedMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = JudgeRoundSerializer
    queryset = JudgeRound.objects.select_related("template", "source_run").prefetch_related("judges")
    # Coders verify judges blind: verdict-level data and reports need the researcher role.
    action_roles = {"report": Role.RESEARCHER, "verification": Role.RESEARCHER, "plan": Role.RESEARCHER}

    def create(self, request, *args, **kwargs):
        data = self.get_serializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = dict(data.validated_data)
        study = self.get_study()
        rnd = rounds.create_round(
            study,
            actor=request.user,
            name=v.pop("name"),
            template=v.pop("template"),
            judges=v.pop("judges"),
            source_run=v.pop("source_run", None),
            **v,
        )
        return Response(self.get_serializer(rnd).data, status=status.HTTP_201_CREATED)

    @extend_schema(responses={204: None, 409: dict})
    def destroy(self, request, *args, **kwargs):
        """Delete a round without verdicts; one with verdicts or a live job is refused (409), saying why."""
        try:
            rounds.delete_round(self.get_object(), actor=request.user)
        except rounds.RoundError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        return Response(status=status.HTTP_204_NO_CONTENT)

    @extend_schema(request=None, responses={200: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["get"])
    def plan(self, request, study_pk=None, pk=None):
        """The plan (assignment, batches, calls, tokens, cost, sample prompt, problems), computed now."""
        return Response(rounds.compute_plan(self.get_object()))

    @extend_schema(request=None, responses={200: JudgeRoundSerializer})
    @action(detail=True, methods=["post"])
    def launch(self, request, study_pk=None, pk=None):
        return self.job_action(rounds.start)

    @extend_schema(request=None, responses={200: JudgeRoundSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, study_pk=None, pk=None):
        return self.job_action(rounds.cancel)

    @extend_schema(request=None, responses={200: JudgeRoundSerializer})
    @action(detail=True, methods=["post"])
    def resume(self, request, study_pk=None, pk=None):
        return self.job_action(rounds.resume)

    @extend_schema(request=None, responses={200: JudgeRoundSerializer})
    @action(detail=True, methods=["post"], url_path="retry-failed")
    def retry_failed(self, request, study_pk=None, pk=None):
        return self.job_action(rounds.retry_failed)

    @extend_schema(request=JudgeReaskSerializer, responses={200: JudgeRoundSerializer})
    @action(detail=True, methods=["post"])
    def reask(self, request, study_pk=None, pk=None):
        data = JudgeReaskSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        return self.job_action(rounds.reask, verdict_ids=data.validated_data.get("verdict_ids"))

    @extend_schema(
        parameters=[OpenApiParameter("method", str, enum=list(reports.W.METHODS))], responses={200: OpenApiTypes.OBJECT}
    )
    @action(detail=True, methods=["get"])
    def report(self, request, study_pk=None, pk=None):
        """Detection per prompt (with breakdowns by generator and judge), Table 3, judge × generator matrix."""
        method = request.query_params.get("method", reports.W.DEFAULT_METHOD)
        if method not in reports.W.METHODS:
            return _bad("method must be one of: " + ", ".join(reports.W.METHODS) + ".")
        data = reports.report([self.get_object()], method=method)
        table = data["table3"]
        return Response(
            {
                "method": method,
                "method_description": data["method_text"],
                "items": data["items"],
                "table3": None
                if table is None
                else {
                    "models": table["models"],
                    "dimensions": table["dimensions"],
                    "cells": [
                        {"dimension": d, "model": m, "mean": v[0], "sd": v[1]} for (d, m), v in table["cells"].items()
                    ],
                    "all_models": [{"dimension": d, "mean": v[0], "sd": v[1]} for d, v in table["all"].items()],
                    "overall": [{"model": m, "mean": v[0], "sd": v[1]} for m, v in table["overall"].items()],
                    "overall_all_models": {"mean": table["overall_all"][0], "sd": table["overall_all"][1]},
                },
                "judge_generator": [
                    {"judge": j, "generator": g, "n": c["n"], "rate": c["rate"]} for (j, g), c in data["matrix"].items()
                ],
            }
        )

    @extend_schema(request=VerificationRequestSerializer, responses={200: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["get", "post"])
    def verification(self, request, study_pk=None, pk=None):
        """GET: judge–human agreement on the sample. POST: send a sample of judged outputs to coders."""
        rnd = self.get_object()
        if request.method == "POST":
            data = VerificationRequestSerializer(data=request.data)
            data.is_valid(raise_exception=True)
            users = list(get_user_model().objects.filter(username__in=data.validated_data["coders"]))
            missing = set(data.validated_data["coders"]) - {u.username for u in users}
            if missing:
                return _bad(f"No user(s) named {', '.join(sorted(missing))}.")
            services.request_verification(
                rnd,
                coders=users,
                sample_size=data.validated_data["sample_size"],
                seed=data.validated_data["seed"],
                actor=request.user,
            )
        return Response(services.verification_summary(rnd))


class VerdictViewSet(StudyScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    """Verdicts of the study's rounds; filter with ?round=<id>&status=<status>. Coders answer verification
    questions sent to them with POST .../check/."""

    serializer_class = VerdictSerializer
    queryset = Verdict.objects.select_related("output", "output__item")
    study_field = "round__study"
    read_role = Role.RESEARCHER  # coders verify blind
    action_roles = {"check": Role.CODER}

    def get_queryset(self):
        qs = super().get_queryset()
        params = self.request.query_params
        if params.get("round"):
            round_id = whole_number(params["round"])
            if round_id is None:
                return qs.none()
            qs = qs.filter(round_id=round_id)
        if params.get("status"):
            qs = qs.filter(status=params["status"])
        return qs.order_by("pk")

    @extend_schema(parameters=[OpenApiParameter("round", int), OpenApiParameter("status", str)])
    def list(self, request, *args, **kwargs):
        return super().list(request, *args, **kwargs)

    @extend_schema(request=HumanCheckAnswerSerializer, responses={200: OpenApiTypes.OBJECT})
    @action(detail=True, methods=["post"])
    def check(self, request, study_pk=None, pk=None):
        verdict = self.get_object()
        req = VerificationRequest.objects.filter(verdict=verdict, coder=request.user).first()
        if req is None:
            return Response(
                {"detail": "This verdict was not sent to you for verification."}, status=status.HTTP_403_FORBIDDEN
            )
        data = HumanCheckAnswerSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        check = services.answer_check(req, user=request.user, **data.validated_data)
        return Response({"verdict": verdict.pk, "value": check.value, "note": check.note})


class ToolkitWeightsViewSet(StudyScopedMixin, viewsets.GenericViewSet):
    """Prompt detection weights: one row per prompt item
    (?rounds=1,2&method=consistency|shrunk|raw&as=json|csv), and import of a weights file into a new
    toolkit version."""

    serializer_class = ToolkitWeightRowSerializer
    queryset = JudgeRound.objects.all()
    read_role = Role.RESEARCHER
    parser_classes = [JSONObjectParser, MultiPartParser, FormParser]

    def _round_ids(self):
        raw = self.request.query_params.get("rounds", "")
        parts = [p for p in raw.split(",") if p.strip()]
        ids = whole_numbers(parts)
        if len(ids) < len(parts):
            raise services.JudgingError("rounds must be a comma-separated list of round ids.")
        known = set(JudgeRound.objects.filter(study=self.get_study(), pk__in=ids).values_list("pk", flat=True))
        if set(ids) - known:
            raise services.JudgingError(f"No round(s) {', '.join(map(str, sorted(set(ids) - known)))} in this study.")
        return ids or None

    @extend_schema(
        parameters=[
            OpenApiParameter("rounds", str),
            OpenApiParameter("method", str, enum=list(reports.W.METHODS)),
            OpenApiParameter("as", str, enum=["json", "csv"]),
        ],
        responses={200: OpenApiTypes.OBJECT},
    )
    def list(self, request, study_pk=None):
        method = request.query_params.get("method", reports.W.DEFAULT_METHOD)
        if method not in reports.W.METHODS:
            return _bad("method must be one of: " + ", ".join(reports.W.METHODS) + ".")
        ids = self._round_ids()
        if request.query_params.get("as") == "csv":
            preamble, columns, rows = services.weights_table(self.get_study(), ids, method)
            return table_download(columns, rows, "toolkit-weights.csv", preamble=preamble)
        return Response(services.weights_document(self.get_study(), ids, method))

    @extend_schema(
        request=WeightsImportSerializer,
        responses={
            201: inline_serializer(
                "JudgeWeightsImportResult",
                {
                    "toolkit": serializers.IntegerField(),
                    "version": serializers.IntegerField(),
                    "weights": serializers.IntegerField(),
                },
            )
        },
    )
    @action(detail=False, methods=["post"], url_path="import")
    def import_weights(self, request, study_pk=None):
        data = WeightsImportSerializer(data=request.data)
        data.is_valid(raise_exception=True)
        v = data.validated_data
        study = self.get_study()
        toolkit = generation.toolkits_for(study).filter(pk=v["toolkit"]).first()
        if toolkit is None:
            return _bad("No such toolkit in this study or the built-in library.")
        upload = v.get("file")
        content = upload.read() if upload else v.get("content", "")
        target, n = services.import_weights(
            study,
            toolkit,
            content,
            filename=getattr(upload, "name", ""),
            new_version=v["new_version"],
            drop_flagged=v["drop_flagged"],
            actor=request.user,
        )
        return Response({"toolkit": target.pk, "version": target.version, "weights": n}, status=status.HTTP_201_CREATED)


api_routes = [
    ("judge-templates", JudgeTemplateViewSet, "api-judge-template"),
    ("judge-rounds", JudgeRoundViewSet, "api-judge-round"),
    ("verdicts", VerdictViewSet, "api-verdict"),
    ("toolkit-weights", ToolkitWeightsViewSet, "api-toolkit-weights"),
]
