"""Reads of psychometrics that other apps use (recipes)."""

from django.db.models import QuerySet

from stereoscope.models import Study

from .models import ContextSet, Instrument, PersonaSet, QuestionnaireRun


def latest_instrument(study: Study, name: str) -> Instrument | None:
    """The newest version of the study's instrument `name`, or None."""
    return Instrument.objects.filter(study=study, name=name).order_by("-version").first()


def context_set_named(study: Study, name: str) -> ContextSet | None:
    """The study's context set called `name`, or None."""
    return ContextSet.objects.filter(study=study, name=name).first()


def questionnaire_run_named(study: Study, name: str) -> QuestionnaireRun | None:
    """The study's first questionnaire run called `name`, or None."""
    return QuestionnaireRun.objects.filter(study=study, name=name).order_by("pk").first()


def study_questionnaire_runs(study: Study) -> QuerySet[QuestionnaireRun]:
    """The study's questionnaire runs in creation order, with instrument, context set and endpoints."""
    return (
        QuestionnaireRun.objects.filter(study=study)
        .select_related("instrument__study", "context_set")
        .prefetch_related("endpoints")
        .order_by("created_at", "pk")
    )


def library_instruments() -> QuerySet[Instrument]:
    """Instruments of the built-in library."""
    return Instrument.objects.filter(study__is_library=True)


def library_persona_sets() -> QuerySet[PersonaSet]:
    """Persona sets of the built-in library."""
    return PersonaSet.objects.filter(study__is_library=True)
