"""The judging API: serializers.py (the serializers) and views.py (the viewsets). stereoscope/urls.py mounts
`api_routes` under /api/studies/<study_pk>/."""

from .views import api_routes

__all__ = ["api_routes"]
