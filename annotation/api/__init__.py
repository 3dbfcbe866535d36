"""The annotation API. serializers.py holds every serializer; the viewsets are split by subject: codebooks.py
(codebooks, codes, code operations), views.py (the coding work: codings, memos, assignments, gender attributions) and
discovery.py (AI code discovery); files.py builds the codebook and codings files, lookups.py reads ids from requests.
stereoscope/urls.py mounts `api_routes` under /api/studies/<study_pk>/."""

from .codebooks import AnnotationCodeViewSet, CodebookViewSet, CodeOperationViewSet
from .discovery import CodeDiscoveryViewSet
from .views import AssignmentViewSet, CodingViewSet, GenderAttributionViewSet, MemoViewSet

api_routes = [
    ("codebooks", CodebookViewSet, "api-codebook"),
    ("codes", AnnotationCodeViewSet, "api-code"),
    ("code-operations", CodeOperationViewSet, "api-code-operation"),
    ("codings", CodingViewSet, "api-coding"),
    ("memos", MemoViewSet, "api-memo"),
    ("assignments", AssignmentViewSet, "api-assignment"),
    ("gender-attributions", GenderAttributionViewSet, "api-gender-attribution"),
    ("code-discoveries", CodeDiscoveryViewSet, "api-code-discovery"),
]

__all__ = ["api_routes"]
