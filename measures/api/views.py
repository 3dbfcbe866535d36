"""REST API for text measures: lexicons (categories, exclusions, highlight), measure runs, measures and contrasts."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from annotation.selectors import study_variables
from generation import selectors as generation
from stereoscope.api import StudyScopedMixin
from stereoscope.api_bases import JobActionsMixin
from stereoscope.models import Role
from stereoscope.untrusted import whole_number

from .. import scoring, selectors, services, trained
from ..models import (
    Lexicon,
    LexiconCategory,
    LexiconExclusion,
    MeasureRun,
    OutputMeasure,
    TrainedClassifier,
)
from ..tasks import fairness_check_task
from .serializers import (
    ContrastResultSerializer,
    HighlightMatchSerializer,
    HighlightRequestSerializer,
    LexiconCategorySerializer,
    LexiconExclusionSerializer,
    LexiconImportSerializer,
    LexiconSerializer,
    MeasureRunCreateSerializer,
    MeasureRunSerializer,
    OutputMeasureSerializer,
    TrainClassifierSerializer,
    TrainedClassifierSerializer,
)


class LexiconViewSet(StudyScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
    library_read_actions = ("highlight",)  # a POST that only reads: allowed on the built-in library
    """Lexicons of the study plus the built-in library's (read-only)."""

    serializer_class = LexiconSerializer
    queryset = Lexicon.objects.all()
    action_roles = {"highlight": "viewer"}

    def get_queryset(self):
        if getattr(self, "swagger_fake_view", False):
            return Lexicon.objects.none()
        return (
            services.lexicons_for(self.get_study())
            .prefetch_related("categories", "exclusions")
            .order_by("name", "-version")
        )

    @extend_schema(request=LexiconImportSerializer, responses={201: LexiconSerializer})
    def create(self, request, *args, **kwargs):
        data = services.validate_lexicon_data(request.data)
        lexicon = services.create_lexicon(self.get_study(), data, actor=request.user)
        return Response(LexiconSerializer(lexicon).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={201: LexiconSerializer})
    @action(detail=True, methods=["post"])
    def copy(self, request, *args, **kwargs):
        lexicon = services.LEXICONS.copy_into(self.get_object(), study=self.get_study(), actor=request.user)
        return Response(LexiconSerializer(lexicon).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=HighlightRequestSerializer, responses={200: HighlightMatchSerializer(many=True)})
    @action(detail=True, methods=["post"])
    def highlight(self, request, *args, **kwargs):
        """The lexicon's matches in a text (code-point offsets), exclusions applied."""
        body = HighlightRequestSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        lexicon = self.get_object()
        text = body.validated_data["text"]
        cats = {c.pk: c for c in lexicon.categories.all()}
        matcher = services.matcher_for(lexicon, body.validated_data.get("language") or None, list(cats.values()))
        rows = [
            {
                "category": int(m.category),
                "category_name": cats[int(m.category)].name,
                "color": cats[int(m.category)].color,
                "entry": m.entry,
                "start": m.start,
                "end": m.end,
                "text": text[m.start : m.end],
            }
            for m in matcher.find(text)
        ]
        return Response(HighlightMatchSerializer(rows, many=True).data)


def _own_lexicon(viewset, lexicon_id):
    lexicon = get_object_or_404(Lexicon, pk=lexicon_id, study=viewset.get_study())
    return lexicon


class LexiconCategoryViewSet(StudyScopedMixin, viewsets.ModelViewSet):
    """Categories of the study's own lexicons. Editing a locked lexicon creates a new version (see `lexicon` in
    the response)."""

    serializer_class = LexiconCategorySerializer
    queryset = LexiconCategory.objects.select_related("lexicon")
    study_field = "lexicon__study"

    def get_queryset(self):
        qs = super().get_queryset()
        lexicon = self.request.query_params.get("lexicon")
        lexicon_id = whole_number(lexicon)
        return qs.filter(lexicon_id=lexicon_id) if lexicon_id is not None else qs

    def _payload(self, instance=None):
        data = dict(self.request.data)
        if instance is not None:
            base = {
                "key": instance.key,
                "name": instance.name,
                "description": instance.description,
                "direction": instance.direction,
                "language": instance.language,
                "mode": instance.match_mode,
                "words": instance.words,
                "color": instance.color,
                "source": instance.source,
            }
            if "match_mode" in data:
                data["mode"] = data.pop("match_mode")
            base.update(data)
            data = base
        elif "match_mode" in data:
            data["mode"] = data.pop("match_mode")
        return data

    @extend_schema(parameters=[OpenApiParameter("lexicon", int, description="Lexicon id (body).")])
    def create(self, request, *args, **kwargs):
        lexicon_id = request.data.get("lexicon")
        if whole_number(lexicon_id) is None:
            return Response({"detail": "Give the id of one of this study's lexicons as `lexicon`."}, status=400)
        lexicon = _own_lexicon(self, whole_number(lexicon_id))
        category, _ = services.save_category(lexicon, self._payload(), actor=request.user)
        return Response(LexiconCategorySerializer(category).data, status=status.HTTP_201_CREATED)

    def update(self, request, *args, **kwargs):
        instance = self.get_object()
        category, _ = services.save_category(
            instance.lexicon, self._payload(instance), category=instance, actor=request.user
        )
        return Response(LexiconCategorySerializer(category).data)

    def destroy(self, request, *args, **kwargs):
        target = services.delete_category(self.get_object(), actor=request.user)
        return Response({"lexicon": target.pk}, status=status.HTTP_200_OK)


class LexiconExclusionViewSet(
    StudyScopedMixin, mixins.ListModelMixin, mixins.CreateModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet
):
    serializer_class = LexiconExclusionSerializer
    queryset = LexiconExclusion.objects.select_related("lexicon", "category")
    study_field = "lexicon__study"

    def create(self, request, *args, **kwargs):
        lexicon_id = request.data.get("lexicon")
        if whole_number(lexicon_id) is None:
            return Response({"detail": "Give the id of one of this study's lexicons as `lexicon`."}, status=400)
        lexicon = _own_lexicon(self, whole_number(lexicon_id))
        category = None
        if request.data.get("category") not in (None, ""):
            category_id = whole_number(request.data.get("category"))
            category = lexicon.categories.filter(pk=category_id).first() if category_id is not None else None
            if category is None:
                return Response({"detail": "`category` must be a category of that lexicon."}, status=400)
        ex, _ = services.add_exclusion(
            lexicon,
            phrase=request.data.get("phrase", ""),
            is_regex=bool(request.data.get("is_regex")),
            category=category,
            note=request.data.get("note", ""),
            actor=request.user,
        )
        return Response(LexiconExclusionSerializer(ex).data, status=status.HTTP_201_CREATED)

    def destroy(self, request, *args, **kwargs):
        target = services.delete_exclusion(self.get_object(), actor=request.user)
        return Response({"lexicon": target.pk}, status=status.HTTP_200_OK)


class MeasureRunViewSet(
    JobActionsMixin, StudyScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    serializer_class = MeasureRunSerializer
    queryset = MeasureRun.objects.prefetch_related("lexicons", "source_runs")

    @extend_schema(request=MeasureRunCreateSerializer, responses={201: MeasureRunSerializer})
    def create(self, request, *args, **kwargs):
        body = MeasureRunCreateSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        d = dict(body.validated_data)
        study = self.get_study()
        lexicon_ids = d.pop("lexicons", [])
        lexicons = list(services.lexicons_for(study).filter(pk__in=lexicon_ids))
        if len(lexicons) != len(set(lexicon_ids)):
            return Response({"detail": "Unknown lexicon id (use this study's or the built-in lexicons)."}, status=400)
        run_ids = d.pop("source_runs", [])
        sources = list(generation.study_runs(study, run_ids))
        if len(sources) != len(set(run_ids)):
            return Response({"detail": "Unknown generation run id in this study."}, status=400)
        start = d.pop("start")
        trained_id = d.pop("trained_classifier")
        if trained_id is not None:
            d["trained_classifier"] = TrainedClassifier.objects.filter(study=study, pk=trained_id).first()
            if d["trained_classifier"] is None:
                return Response({"detail": "Unknown trained classifier id in this study."}, status=400)
        run = scoring.create_run(study, lexicons=lexicons, source_runs=sources, actor=request.user, **d)
        if start:
            scoring.start(run, actor=request.user)
            run.refresh_from_db()
        return Response(MeasureRunSerializer(run).data, status=status.HTTP_201_CREATED)

    @extend_schema(request=None, responses={200: MeasureRunSerializer})
    @action(detail=True, methods=["post"])
    def start(self, request, *args, **kwargs):
        return self.job_action(scoring.start)

    @extend_schema(request=None, responses={200: MeasureRunSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, *args, **kwargs):
        return self.job_action(scoring.cancel)

    @extend_schema(request=None, responses={202: dict})
    @action(detail=True, methods=["post"])
    def fairness(self, request, *args, **kwargs):
        run = self.get_object()
        if not run.classifier:
            return Response({"detail": "This measure run has no classifier to check."}, status=400)

        fairness_check_task.delay(run.pk)
        return Response({"detail": "Fairness check queued; see contrasts?kind=fairness."}, status=202)

    @extend_schema(responses={200: OutputMeasureSerializer(many=True)})
    @action(detail=True, methods=["get"])
    def measures(self, request, *args, **kwargs):
        run = self.get_object()
        qs = OutputMeasure.objects.filter(run=run).select_related("output").order_by("output_id")
        page = self.paginate_queryset(qs)
        return self.get_paginated_response(OutputMeasureSerializer(page, many=True).data)

    @extend_schema(
        parameters=[
            OpenApiParameter("grouping", str, description="overall, model, item, dimension, run or slot:<name>"),
            OpenApiParameter(
                "kind", str, description="category, context_score, classifier, chi2, paired, word_or, fairness"
            ),
        ],
        responses={200: ContrastResultSerializer(many=True)},
    )
    @action(detail=True, methods=["get"])
    def contrasts(self, request, *args, **kwargs):
        run = self.get_object()
        grouping = request.query_params.get("grouping", "")
        kind = request.query_params.get("kind", "")
        if grouping and grouping not in ("overall", "model", "item", "dimension"):
            try:
                records = selectors.contrast_records(run, grouping)
            except ValueError as exc:
                return Response({"detail": str(exc)}, status=400)
            records = [r for r in records if not kind or r["kind"] == kind]
            return Response([{"id": None, "created_at": None, **r} for r in records])
        qs = run.contrasts.all()
        if grouping:
            qs = qs.filter(grouping=grouping)
        if kind:
            qs = qs.filter(kind=kind)
        return Response(ContrastResultSerializer(qs, many=True).data)


class TrainedClassifierViewSet(
    StudyScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet
):
    """Classifiers trained on a categorical variable's gold labels. POST trains a new version (nothing is saved
    when the labelled set cannot be used)."""

    serializer_class = TrainedClassifierSerializer
    queryset = TrainedClassifier.objects.all()
    read_role = Role.RESEARCHER

    @extend_schema(request=TrainClassifierSerializer, responses={201: TrainedClassifierSerializer})
    def create(self, request, *args, **kwargs):

        body = TrainClassifierSerializer(data=request.data)
        body.is_valid(raise_exception=True)
        d = body.validated_data
        study = self.get_study()
        variable = next((v for v in study_variables(study) if v.pk == d["variable"]), None)
        try:
            model = trained.train_classifier(
                study, variable, name=d["name"], k=d["k"], seed=d["seed"], features=d["features"], actor=request.user
            )
        except trained.TrainingRequestError as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_400_BAD_REQUEST)
        return Response(TrainedClassifierSerializer(model).data, status=status.HTTP_201_CREATED)


api_routes = [
    ("lexicons", LexiconViewSet, "api-measures-lexicon"),
    ("lexicon-categories", LexiconCategoryViewSet, "api-measures-category"),
    ("lexicon-exclusions", LexiconExclusionViewSet, "api-measures-exclusion"),
    ("measure-runs", MeasureRunViewSet, "api-measures-run"),
    ("trained-classifiers", TrainedClassifierViewSet, "api-measures-trained-classifier"),
]
