"""AI-assisted code discovery, a job: start, estimate, cancel / resume / retry, decide suggestions."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema, inline_serializer
from rest_framework import mixins, serializers, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from generation import selectors as generation
from stereoscope.api import StudyScopedMixin
from stereoscope.api_bases import JobActionsMixin
from stereoscope.models import Role
from stereoscope.untrusted import whole_number

from .. import services
from ..models import (
    Code,
    Codebook,
    CodeDiscovery,
)
from .lookups import get_in_study
from .serializers import (
    DISCOVERY_START,
    CodeDiscoverySerializer,
    CodeSuggestionSerializer,
)


class CodeDiscoveryViewSet(
    JobActionsMixin,
    StudyScopedMixin,
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    viewsets.GenericViewSet,
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
        codebook = get_in_study(Codebook, request.data.get("codebook"), study, label="codebook")
        given = request.data.get("endpoints")
        if given is None:
            given = [request.data.get("endpoint")]
        if not isinstance(given, list) or not given:
            raise ValidationError({"detail": "Give endpoints as a list of endpoint ids."})
        endpoints = [get_in_study(generation.study_endpoint, pk, study, label="endpoint") for pk in given]
        item = get_in_study(generation.study_item, request.data.get("item"), study, label="prompt item")
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

    @extend_schema(request=None, responses={200: CodeDiscoverySerializer})
    @action(detail=True, methods=["post"])
    def cancel(self, request, study_pk=None, pk=None):
        """Stop the discovery; its open batches are cancelled at the provider."""
        return self.job_action(services.cancel_discovery)

    @extend_schema(request=None, responses={200: CodeDiscoverySerializer})
    @action(detail=True, methods=["post"])
    def resume(self, request, study_pk=None, pk=None):
        """Queue it again: only its pending requests are asked (never one an open batch holds)."""
        return self.job_action(services.resume_discovery)

    @extend_schema(request=None, responses={200: CodeDiscoverySerializer})
    @action(detail=True, methods=["post"])
    def retry(self, request, study_pk=None, pk=None):
        """Failed requests back to pending, then resume."""
        return self.job_action(services.retry_discovery)

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
        suggestion_id = whole_number(request.data.get("suggestion"))
        suggestion = discovery.suggestions.filter(pk=suggestion_id).first()  # None: no suggestion
        if suggestion is None:
            raise ValidationError({"detail": "No such suggestion in this discovery."})
        parent = None
        if request.data.get("parent"):
            parent = get_in_study(
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
