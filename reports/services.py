"""Writes of the reports app: the sections a study's report shows."""

from collections.abc import Iterable
from typing import Any

from django.utils import timezone

from stereoscope.models import Study
from stereoscope.services import record_activity

from .document import SECTION_KEYS
from .models import ReportSettings


class ReportError(ValueError):
    pass


def chosen_sections(study: Study) -> list[str]:
    saved = ReportSettings.objects.filter(study=study).values_list("sections", flat=True).first()
    return list(SECTION_KEYS) if saved is None else [k for k in SECTION_KEYS if k in saved]


def save_sections(study: Study, sections: Iterable[str] | None, actor: Any = None) -> list[str]:
    """Save the chosen sections (keys of document.SECTIONS) with the study; unknown keys are refused."""
    if study.is_library:
        raise ReportError("The built-in library study is read-only.")
    sections = list(sections or [])
    unknown = [s for s in sections if s not in SECTION_KEYS]
    if unknown:
        raise ReportError(
            f"Unknown report sections: {', '.join(map(str, unknown))}; choose from {', '.join(SECTION_KEYS)}."
        )
    ordered = [k for k in SECTION_KEYS if k in sections]
    ReportSettings.objects.update_or_create(
        study=study,
        defaults={
            "sections": ordered,
            "updated_at": timezone.now(),
            "updated_by": actor if getattr(actor, "pk", None) else None,
        },
    )
    record_activity(study, actor, "report sections", ", ".join(ordered) or "none")
    return ordered
