"""REST API for text measures: lexicons (categories, exclusions, highlight), measure runs, measures and contrasts."""

from django.shortcuts import get_object_or_404
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.response import Response

from annotation.selectors import study_variables
from generation import selectors as generation
from stereoscope.api import StudyScopedMixin
from stereoscope.models import Role

from . import scoring, selectors, services, trained
from .lexical import OR_CONVENTIONS
from .models import (
    ContrastResult,
    Lexicon,
    LexiconCategory,
    LexiconExclusion,
    MeasureRun,
    OutputMeasure,
    TrainedClassifier,
)
from .tasks import fairness_check_task


class LexiconCategorySerializer(serializers.ModelSerializer):
    warnings = serializers.SerializerMethodField()

    class Meta:
        model = LexiconCategory
        fields = [
            "id",
            "lexicon",
            "key",
            "name",
            "description",
            "direction",
            "language",
            "match_mode",
            "words",
            "color",
            "order",
            "source",
            "warnings",
        ]
        read_only_fields = ["lexicon", "order"]

    def get_warnings(self, obj) -> list[str]:
        return services.category_warnings(obj)


class LexiconExclusionSerializer(serializers.ModelSerializer):
    class Meta:
        model = LexiconExclusion
        fields = ["id", "lexicon", "category", "phrase", "is_regex", "note", "created_at"]
        read_only_fields = ["created_at"]


class LexiconSerializer(serializers.ModelSerializer):
    categories = LexiconCategorySerializer(many=True, read_only=True)
    exclusions = LexiconExclusionSerializer(many=True, read_only=True)
    is_builtin = serializers.BooleanField(source="study.is_library", read_only=True)

    class Meta:
        model = Lexicon
        fields = [
            "id",
            "name",
            "version",
            "parent",
            "locked",
            "builtin_key",
            "description",
            "source",
            "count_policy",
            "is_builtin",
            "created_at",
            "categories",
            "exclusions",
        ]


class LexiconImportSerializer(serializers.Serializer):
    """The lexicon JSON format (see measures/services.py)."""

    name = serializers.CharField()
    description = serializers.CharField(required=False, allow_blank=True)
    source = serializers.CharField(required=False, allow_blank=True)
    count_policy = serializers.CharField(required=False)
    categories = serializers.ListField(child=serializers.DictField())
    exclusions = serializers.ListField(child=serializers.DictField(), required=False)


class HighlightRequestSerializer(serializers.Serializer):
    text = serializers.CharField(max_length=200_000, allow_blank=True, trim_whitespace=False)
    language = serializers.CharField(required=False, allow_blank=True)


class HighlightMatchSerializer(serializers.Serializer):
    category = serializers.IntegerField()
    category_name = serializers.CharField()
    color = serializers.CharField()
    entry = serializers.CharField()
    start = serializers.IntegerField()
    end = serializers.IntegerField()
    text = serializers.CharField()


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
        return qs.filter(lexicon_id=lexicon) if lexicon and lexicon.isdigit() else qs

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
        if not str(lexicon_id or "").isdigit():
            return Response({"detail": "Give the id of one of this study's lexicons as `lexicon`."}, status=400)
        lexicon = _own_lexicon(self, lexicon_id)
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
        if not str(lexicon_id or "").isdigit():
            return Response({"detail": "Give the id of one of this study's lexicons as `lexicon`."}, status=400)
        lexicon = _own_lexicon(self, lexicon_id)
        category = None
        if request.data.get("category") not in (None, ""):
            category = (
                lexicon.categories.filter(pk=request.data.get("category")).first()
                if str(request.data.get("category")).isdigit()
                else None
            )
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


class MeasureRunSerializer(serializers.ModelSerializer):
    progress_summary = serializers.SerializerMethodField()

    class Meta:
        model = MeasureRun
        fields = [
            "id",
            "name",
            "lexicons",
            "source_runs",
            "classifier",
            "classifier_path",
            "classifier_model_id",
            "classifier_unit",
            "trained_classifier",
            "classifier_info",
            "gender_sources",
            "name_genders",
            "zero_policy",
            "or_orientation",
            "success_filter",
            "success_keywords",
            "nli_path",
            "nli_model_id",
            "context_slot",
            "nli_info",
            "status",
            "progress_summary",
            "message",
            "created_at",
            "started_at",
            "finished_at",
        ]
        read_only_fields = [
            "classifier_info",
            "nli_info",
            "status",
            "message",
            "created_at",
            "started_at",
            "finished_at",
        ]

    def get_progress_summary(self, obj) -> dict:
        return scoring.progress_of(obj)


class MeasureRunCreateSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    lexicons = serializers.ListField(child=serializers.IntegerField(), required=False)
    source_runs = serializers.ListField(child=serializers.IntegerField(), required=False)
    classifier = serializers.ChoiceField(choices=["", "vader", "transformers", "trained"], required=False, default="")
    trained_classifier = serializers.IntegerField(
        required=False, allow_null=True, default=None, help_text="With classifier 'trained': a trained classifier's id."
    )
    classifier_path = serializers.CharField(required=False, allow_blank=True, default="")
    classifier_model_id = serializers.CharField(required=False, allow_blank=True, default="")
    classifier_unit = serializers.ChoiceField(choices=["sentence", "document"], required=False, default="sentence")
    gender_sources = serializers.ListField(child=serializers.CharField(), required=False)
    name_genders = serializers.DictField(child=serializers.CharField(), required=False)
    zero_policy = serializers.ChoiceField(choices=["exclude", "smooth"], required=False, default="exclude")
    or_orientation = serializers.ChoiceField(choices=list(OR_CONVENTIONS), required=False, default="per_category")
    success_filter = serializers.BooleanField(required=False, default=False)
    success_keywords = serializers.ListField(child=serializers.CharField(allow_blank=True), required=False)
    nli_path = serializers.CharField(required=False, allow_blank=True, default="")
    nli_model_id = serializers.CharField(required=False, allow_blank=True, default="")
    context_slot = serializers.CharField(required=False, allow_blank=True, default="")
    start = serializers.BooleanField(required=False, default=False)


class OutputMeasureSerializer(serializers.ModelSerializer):
    model_name = serializers.CharField(source="output.model_name", read_only=True)

    class Meta:
        model = OutputMeasure
        fields = [
            "id",
            "output",
            "model_name",
            "language",
            "word_count",
            "sentence_count",
            "gender",
            "gender_source",
            "gender_detail",
            "category_counts",
            "label_shares",
            "doc_label",
            "doc_score",
            "mean_score",
            "hallucination_share",
            "success_reason",
        ]


class ContrastResultSerializer(serializers.ModelSerializer):
    class Meta:
        model = ContrastResult
        fields = ["id", "kind", "measure", "grouping", "group", "result", "created_at"]


class MeasureRunViewSet(StudyScopedMixin, mixins.ListModelMixin, mixins.RetrieveModelMixin, viewsets.GenericViewSet):
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

    def _act(self, fn):
        run = self.get_object()
        fn(run, actor=self.request.user)
        run.refresh_from_db()
        return Response(MeasureRunSerializer(run).data)

    @extend_schema(request=None, responses={200: MeasureRunSerializer})
    @action(detail=True, methods=["post"])
    def start(self, request, *args, **kwargs):
        return self._act(scoring.start)

    @extend_schema(request=None, responses={200: MeasureRunSerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, *args, **kwargs):
        return self._act(scoring.cancel)

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


class TrainedClassifierSerializer(serializers.ModelSerializer):
    class Meta:
        model = TrainedClassifier
        fields = [
            "id",
            "name",
            "version",
            "variable",
            "labels",
            "features",
            "params",
            "k",
            "seed",
            "training_data",
            "folds",
            "metrics",
            "library_versions",
            "created_at",
        ]
        read_only_fields = fields


class TrainClassifierSerializer(serializers.Serializer):
    name = serializers.CharField(max_length=200)
    variable = serializers.IntegerField(help_text="A categorical variable (code group) of this study.")
    k = serializers.IntegerField(required=False, default=5, help_text="Folds of the stratified cross-validation.")
    seed = serializers.IntegerField(required=False, default=0)
    features = serializers.ChoiceField(
        choices=["auto", "tfidf", "embedding"],
        required=False,
        default="auto",
        help_text="auto: the local sentence-embedding model when one is configured.",
    )


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
