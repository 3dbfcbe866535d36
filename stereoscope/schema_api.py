"""GET /api/<format>-schema/: the JSON Schema of every registered input format, for signed-in users.

Each app registers its formats (stereoscope.schemas.register) where it validates them; the project URLs serve
every registered one, so a new format's schema is published the moment it is checked against one.
"""

from django.urls import path
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework.decorators import api_view, permission_classes
from rest_framework.permissions import IsAuthenticated
from rest_framework.response import Response

from . import schemas


def schema_view(name, schema_path):
    @extend_schema(
        responses={200: OpenApiTypes.OBJECT},
        description=f"The JSON Schema (Draft 2020-12) of the {name.replace('_', ' ')} input format.",
        operation_id=f"{name}_schema",
        tags=["schemas"],
    )
    @api_view(["GET"])
    @permission_classes([IsAuthenticated])
    def view(request):
        return Response(schemas.load(schema_path))

    return view


def schema_urls():
    return [
        path(f"{name.replace('_', '-')}-schema/", schema_view(name, schema_path), name=f"api-{name}-schema")
        for name, schema_path in sorted(schemas.REGISTRY.items())
    ]
