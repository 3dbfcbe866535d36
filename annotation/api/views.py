"""The coding work's API: codings, memos, assignments and gender attributions (codebooks and codes: codebooks.py).

Coders write only their own codings, memos and attributions, and only on stories in their queue; blind mode holds
here too: a coder lists only their own codings unless their assignment for that story is in consensus mode."""

from django.contrib.auth import get_user_model
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from generation import selectors as generation
from stereoscope.api import StudyScopedMixin
from stereoscope.models import Role
from stereoscope.permissions import has_role

from .. import selectors, services
from ..models import (
    Assignment,
    AttributedGender,
    Code,
    Codebook,
    Coding,
    GenderAttribution,
    Memo,
)
from .lookups import get_in_study, int_list
from .serializers import (
    AssignmentPlanSerializer,
    AssignmentSerializer,
    CodingSerializer,
    GenderAttributionSerializer,
    MemoSerializer,
)


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
                qs = qs.filter(**{f"{key}_id": int_list(params[key], key)[0]})
        return selectors.visible_codings(self.request.user, self.get_study(), qs)

    def create(self, request, *args, **kwargs):
        study = self.get_study()
        data = request.data
        codebook = get_in_study(Codebook, data.get("codebook"), study, label="codebook")
        output = get_in_study(generation.study_output, data.get("output"), study, label="story")
        code = get_in_study(Code, data.get("code"), study, field="codebook__study", label="code")
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
        code = get_in_study(Code, request.data.get("code"), self.get_study(), field="codebook__study", label="code")
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
                qs = qs.filter(**{f"{key}_id": int_list(self.request.query_params[key], key)[0]})
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
                get_in_study(model, request.data.get(key), study, field=field, label=label)
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
            qs = qs.filter(codebook_id=int_list(self.request.query_params["codebook"], "codebook")[0])
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
        codebook = get_in_study(Codebook, d["codebook"], study, label="codebook")
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
        codebook = get_in_study(Codebook, request.query_params.get("codebook"), self.get_study(), label="codebook")
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
            qs = qs.filter(output_id=int_list(self.request.query_params["output"], "output")[0])
        if not has_role(self.request.user, self.get_study(), Role.RESEARCHER):
            qs = qs.filter(coder=self.request.user)
        return qs

    def create(self, request, *args, **kwargs):
        output = get_in_study(generation.study_output, request.data.get("output"), self.get_study(), label="story")
        gender = request.data.get("gender")
        if gender not in AttributedGender.values:
            raise ValidationError({"detail": f"gender must be one of {', '.join(AttributedGender.values)}."})
        attribution = services.set_gender_attribution(
            output, coder=request.user, gender=gender, character=request.data.get("character", "")
        )
        return Response(GenderAttributionSerializer(attribution).data, status=status.HTTP_201_CREATED)
