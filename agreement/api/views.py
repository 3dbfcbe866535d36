"""Agreement API: the report, any table (code, dimension, stereotype; any rater set), confusion, disagreements,
and gold labels."""

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from stereoscope.api import StudyScopedMixin
from stereoscope.models import Role, Study
from stereoscope.permissions import StudyRolePermission
from stereoscope.stats import agreement as ag
from stereoscope.untrusted import whole_number, whole_numbers

from .. import services, variables
from ..models import GoldLabel
from ..params import number_param, whole_param
from ..rating_tables import AgreementRequestError, build_table
from ..variable_results import check_bootstrap, results_json, variable_results
from .serializers import AgreementTableSerializer, GoldLabelSerializer

TABLE_PARAMS = [
    OpenApiParameter("target", str, description="code:<id>, dimension:<id> or stereotype", required=True),
    OpenApiParameter(
        "raters", str, description="Comma-separated rater keys (coder:<id>, judge:<model>, check:<id>, gold)"
    ),
    OpenApiParameter("rounds", str, description="Comma-separated judge round ids"),
    OpenApiParameter("codebook", int),
    OpenApiParameter("level", str, enum=list(ag.LEVELS)),
    OpenApiParameter("bootstrap", int, description="Resamples for the 95% CIs (0-5000, default 1000)"),
]


def _ids(raw, name):
    parts = [p.strip() for p in (raw or "").split(",") if p.strip()]
    ids = whole_numbers(parts)
    if len(ids) < len(parts):
        raise AgreementRequestError(f"{name} must be comma-separated ids.")
    return ids


def _codebook_id(request):
    """The `codebook` parameter's id, None when absent."""
    raw = request.query_params.get("codebook", "")
    if raw and whole_number(raw) is None:
        raise AgreementRequestError("codebook must be an id.")
    return whole_number(raw) if raw else None


class AgreementViewSet(viewsets.ViewSet):
    """Read-only agreement figures for a study (researcher role: they expose individual coders' codings)."""

    permission_classes = [StudyRolePermission]
    read_role = Role.RESEARCHER
    write_role = Role.RESEARCHER

    def get_study(self):
        if not hasattr(self, "_study"):
            self._study = get_object_or_404(Study, pk=self.kwargs["study_pk"])
        return self._study

    def _bad(self, exc):
        return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)

    def _table(self, request):
        codebook = services.default_codebook(self.get_study(), _codebook_id(request))
        raters = [r.strip() for r in request.query_params.get("raters", "").split(",") if r.strip()]
        table = build_table(
            self.get_study(),
            request.query_params.get("target", ""),
            codebook=codebook,
            raters=raters or None,
            round_ids=_ids(request.query_params.get("rounds"), "rounds") or None,
        )
        level = request.query_params.get("level") or table.level
        if level not in ag.LEVELS:
            raise AgreementRequestError(f"level must be one of {', '.join(ag.LEVELS)}.")
        return table, level

    @extend_schema(
        parameters=[
            OpenApiParameter("codebook", int),
            OpenApiParameter("bootstrap", int),
            OpenApiParameter("threshold", float, description="Flag agreement below this alpha (-1 to 1)"),
        ],
        responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT},
        description="Agreement among coders per dimension and per code (with 95% CIs and low-agreement flags), "
        "the coder × coder kappa matrix and the judge × human matrix.",
    )
    def list(self, request, study_pk=None):
        try:
            codebook = services.default_codebook(self.get_study(), _codebook_id(request))
            low = number_param(request.query_params, "threshold", services.LOW_ALPHA, -1, 1)
            report = services.cached_study_report(
                self.get_study(),
                codebook,
                bootstrap=whole_param(request.query_params, "bootstrap", 1000, 0, 5000),
                low=low,
            )
        except AgreementRequestError as exc:
            return self._bad(exc)
        jh = report["judge_human"]
        if jh and "overall" in jh:
            jh = dict(jh, overall=jh["overall"].as_dict())
        return Response(
            {
                "codebook": report["codebook"].pk if report["codebook"] else None,
                "low_threshold": report["low_threshold"],
                "bootstrap": report["bootstrap"],
                "n_low": report["n_low"],
                "dimensions": report["dimensions"],
                "codes": report["codes"],
                "coders": report["coders"],
                "coder_matrix": report["coder_matrix"],
                "judge_human": jh,
                "variables": report.get("variables", []),
            }
        )

    @extend_schema(
        parameters=TABLE_PARAMS,
        responses={200: AgreementTableSerializer, 400: OpenApiTypes.OBJECT},
        description="All coefficients for one table and rater set.",
    )
    @action(detail=False, methods=["get"])
    def table(self, request, study_pk=None):
        try:
            table, level = self._table(request)
            bootstrap = whole_param(request.query_params, "bootstrap", 1000, 0, 5000)
        except AgreementRequestError as exc:
            return self._bad(exc)
        result = services.table_result(table, level=level, bootstrap=bootstrap)
        return Response(
            {
                "target": table.target,
                "title": table.title,
                "raters": {k: table.label(k) for k in table.matrix.raters},
                "result": result.as_dict(),
            }
        )

    @extend_schema(
        parameters=TABLE_PARAMS
        + [OpenApiParameter("a", str, required=True), OpenApiParameter("b", str, required=True)],
        responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT},
    )
    @action(detail=False, methods=["get"])
    def confusion(self, request, study_pk=None):
        try:
            table, _level = self._table(request)
            a, b = request.query_params.get("a"), request.query_params.get("b")
            if a not in table.matrix.raters or b not in table.matrix.raters or a == b:
                raise AgreementRequestError("a and b must be two different raters of this table.")
        except AgreementRequestError as exc:
            return self._bad(exc)
        return Response(ag.confusion(table.matrix, a, b))

    @extend_schema(
        parameters=TABLE_PARAMS,
        responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT},
        description="Stories on which the raters differ, with each rater's value and the gold value.",
    )
    @action(detail=False, methods=["get"])
    def disagreements(self, request, study_pk=None):
        try:
            table, _level = self._table(request)
        except AgreementRequestError as exc:
            return self._bad(exc)
        rows, total = services.disagreement_rows(table)
        return Response({"count": total, "results": rows})

    @extend_schema(
        parameters=TABLE_PARAMS,
        responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT},
        description="Each rater against the majority of the other raters.",
    )
    @action(detail=False, methods=["get"], url_path="versus-majority")
    def versus_majority(self, request, study_pk=None):
        try:
            table, level = self._table(request)
        except AgreementRequestError as exc:
            return self._bad(exc)
        return Response(services.rater_comparisons(table, level=level))

    @extend_schema(
        parameters=[
            OpenApiParameter("variable", int, required=True),
            OpenApiParameter("rounds", str, description="Comma-separated judge round ids"),
            OpenApiParameter("judges", bool, description="Include judges (default true)"),
            OpenApiParameter(
                "units", str, description="Span-level variables: sentence (default) or segment (overlap-matched spans)"
            ),
            OpenApiParameter("overlap", float, description="Segment units: the overlap share (default 0.5)"),
            OpenApiParameter("bootstrap", int, description="Resamples for the 95% CIs (0-5000, default 1000)"),
            OpenApiParameter("a", str, description="Confusion table: first rater (default the first rater)"),
            OpenApiParameter("b", str, description="Confusion table: second rater (default the second rater)"),
        ],
        responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT},
        description="Agreement on a categorical variable, everything the variable page shows: coders and judges in "
        "one table, excluded units dropped and counted, full agreement, coefficients with bootstrap 95% CIs, "
        "majority gold with ties flagged, each annotator against the majority of the others, a confusion table, "
        "gold labels by model, and χ² with Cramér's V of the gold labels by subject gender, context type and model.",
    )
    @action(detail=False, methods=["get"])
    def variable(self, request, study_pk=None):

        try:
            variable = variables.get_variable(self.get_study(), request.query_params.get("variable", ""))
            params = request.query_params
            results = variable_results(
                self.get_study(),
                variable,
                round_ids=_ids(params.get("rounds"), "rounds") or None,
                include_judges=params.get("judges", "true").lower() not in ("0", "false", "no"),
                bootstrap=check_bootstrap(params.get("bootstrap")),
                pair=(params.get("a"), params.get("b")),
                unit_options=variables.unit_options(variable, params.get("units"), params.get("overlap")),
            )
        except AgreementRequestError as exc:
            return self._bad(exc)
        return Response(results_json(results))


class GoldLabelViewSet(
    StudyScopedMixin, mixins.ListModelMixin, mixins.CreateModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet
):
    """Adjudicated gold values. POST sets or replaces the value for (target, output)."""

    serializer_class = GoldLabelSerializer
    queryset = GoldLabel.objects.select_related("decided_by")
    read_role = Role.RESEARCHER
    write_role = Role.RESEARCHER

    @extend_schema(
        request=inline_serializer(
            "GoldLabelWriteSerializer",
            {
                "target": serializers.CharField(),
                "output": serializers.IntegerField(),
                "value": serializers.IntegerField(),
                "note": serializers.CharField(required=False),
            },
        ),
        responses={201: GoldLabelSerializer, 400: OpenApiTypes.OBJECT},
    )
    def create(self, request, *args, **kwargs):
        data = request.data
        try:
            gold = services.set_gold(
                self.get_study(),
                target=str(data.get("target", "")),
                output_id=str(data.get("output", "")),
                value=data.get("value"),
                user=request.user,
                note=str(data.get("note", "") or ""),
            )
        except AgreementRequestError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(GoldLabelSerializer(gold).data, status=status.HTTP_201_CREATED)

    def perform_destroy(self, instance):
        services.clear_gold(
            self.get_study(), target=instance.target, output_id=instance.output_id, user=self.request.user
        )


api_routes = [
    ("agreement", AgreementViewSet, "api-agreement"),
    ("gold-labels", GoldLabelViewSet, "api-gold-label"),
]
