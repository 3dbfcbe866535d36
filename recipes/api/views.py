"""Recipe API per study: export (GET), validate and plan (researcher), apply (study admin). The JSON Schema is
served at /api/recipe-schema/ with every input format's (stereoscope/schema_api.py).

A recipe is sent as an uploaded file (`file`), as text (`recipe`: YAML or JSON) or as a JSON object (`recipe`).
Bad recipes get 400 with every problem and its path; nothing is written."""

from django.shortcuts import get_object_or_404
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.parsers import FormParser, MultiPartParser
from rest_framework.response import Response

from stereoscope.api_parsers import JSONObjectParser
from stereoscope.models import Role, Study
from stereoscope.permissions import StudyRolePermission

from .. import results, services
from ..exporting import export_recipe
from ..loader import RecipeError, RecipeProblem, dump, parse_text
from .serializers import outcome_data, problems_response


def recipe_from_request(request):
    """The parsed recipe of a request; raises RecipeError."""
    upload = request.FILES.get("file")
    if upload is not None:
        return parse_text(upload.read(services.MAX_UPLOAD + 1)[: services.MAX_UPLOAD + 1])
    value = request.data.get("recipe")
    if isinstance(value, dict):
        return value
    if isinstance(value, str) and value.strip():
        return parse_text(value)
    raise RecipeError(
        [RecipeProblem("", "Send the recipe as a file (file), as YAML/JSON text or a JSON object (recipe).")]
    )


class RecipeViewSet(viewsets.ViewSet):
    permission_classes = [StudyRolePermission]
    parser_classes = [JSONObjectParser, MultiPartParser, FormParser]
    read_role = Role.RESEARCHER
    write_role = Role.RESEARCHER
    action_roles = {"apply": Role.ADMIN}
    library_read_actions = ("validate", "plan")

    def get_study(self):
        if not hasattr(self, "_study"):
            self._study = get_object_or_404(Study, pk=self.kwargs["study_pk"])
        return self._study

    @extend_schema(
        responses={200: OpenApiTypes.OBJECT}, description="The recipe of this study (JSON; ?as=yaml for text)."
    )
    def list(self, request, study_pk=None):
        data = export_recipe(self.get_study())
        if request.query_params.get("as") == "yaml":
            return Response({"yaml": dump(data)})
        return Response(data)

    @extend_schema(request=OpenApiTypes.OBJECT, responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT})
    @action(detail=False, methods=["post"])
    def validate(self, request, study_pk=None):
        try:
            services.validate(recipe_from_request(request))
        except RecipeError as exc:
            return problems_response(exc)
        return Response({"valid": True, "problems": []})

    @extend_schema(request=OpenApiTypes.OBJECT, responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT})
    @action(detail=False, methods=["post"])
    def plan(self, request, study_pk=None):
        try:
            outcome = services.plan(
                recipe_from_request(request),
                study=self.get_study(),
                actor=request.user,
                connection_map=services.parse_connection_map(request.data.get("connections")),
            )
        except RecipeError as exc:
            return problems_response(exc)
        return Response(outcome_data(outcome))

    @extend_schema(request=OpenApiTypes.OBJECT, responses={200: OpenApiTypes.OBJECT, 400: OpenApiTypes.OBJECT})
    @action(detail=False, methods=["post"])
    def apply(self, request, study_pk=None):
        try:
            data = recipe_from_request(request)
            outcome = services.apply(
                data,
                study=self.get_study(),
                actor=request.user,
                connection_map=services.parse_connection_map(request.data.get("connections")),
            )
        except RecipeError as exc:
            return problems_response(exc)
        result = results.summary(outcome, data)
        # what the result page shows: each object with its page, and the next steps
        return Response(dict(outcome_data(outcome), objects=result["rows"], next_steps=result["next_steps"]))


api_routes = [("recipe", RecipeViewSet, "api-recipe")]
