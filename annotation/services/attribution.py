"""The gender a coder attributes to a story's subject."""

from typing import Any

from django.db import transaction

from stereoscope.models import Role
from stereoscope.permissions import has_role

from ..models import (
    AttributedGender,
    GenderAttribution,
)
from .errors import AnnotationError

# --- gender attribution -------------------------------------------------------------------------------


@transaction.atomic
def set_gender_attribution(output: Any, *, coder: Any, gender: str, character: str | None = "") -> GenderAttribution:
    if gender not in AttributedGender.values:
        raise AnnotationError(f"Gender must be one of {', '.join(AttributedGender.values)}.")
    if not has_role(coder, output.study, Role.CODER):
        raise AnnotationError("Only coders of this study can attribute gender.")
    if not isinstance(character, str | None):  # a list, object or number from a JSON body
        raise AnnotationError("The character name must be text.")
    if len(character or "") > 200:
        raise AnnotationError("The character name is longer than 200 characters.")
    attribution, _ = GenderAttribution.objects.update_or_create(
        output=output, coder=coder, defaults={"gender": gender, "character": (character or "").strip()}
    )
    return attribution
