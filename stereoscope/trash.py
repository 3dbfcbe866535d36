"""Deleting what carries human or paid work: the trash for studies, and the refusals for the rest.

A study goes to the trash: hidden from every page and API (`Study.objects` leaves it out), restorable with
everything under it by its admins, purged for good by site staff or after settings.TRASH_RETENTION_DAYS
(`manage.py purge_trash`). Anything with a live job (queued or running) is neither trashed nor purged: the job is
cancelled first. Smaller things (a codebook with codings, a run whose outputs carry work, a judge round, a
questionnaire run) are refused with what depends on them; their apps call `refuse_if_work` / `refuse_if_live`.

The project package imports no app: apps name the models that hold human or paid work in their AppConfig
(`work_models = ["Coding", ...]`), and every concrete job model (a subclass of stereoscope.jobs.models.Job with a
`study` foreign key) counts for live jobs.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import cast

from django.apps import apps
from django.conf import settings
from django.db import models, router, transaction
from django.db.models import QuerySet
from django.utils import timezone

from .jobs.models import ACTIVE, Job
from .models import Study
from .user_types import Actor, SiteUser


class TrashError(ValueError):
    """A delete, trash, restore or purge that cannot be done; the message says why and what to do."""


def retention_days() -> float:
    return float(getattr(settings, "TRASH_RETENTION_DAYS", 30))


def job_models() -> list[type[Job]]:
    return [m for m in apps.get_models() if issubclass(m, Job) and any(f.name == "study" for f in m._meta.fields)]


def work_models() -> list[type[models.Model]]:
    """The models whose rows are human or paid work, from every app's AppConfig.work_models."""
    found: list[type[models.Model]] = []
    for config in apps.get_app_configs():
        for name in getattr(config, "work_models", ()):
            found.append(config.get_model(name))
    return found


def live_jobs(study: Study) -> list[str]:
    """['run "Pilot" (running)', ...]: the study's queued or running jobs of every kind."""
    found: list[str] = []
    for model in job_models():
        # job_models() keeps the job models with a `study` foreign key, which type[Job] cannot say
        for job in model.objects.filter(study=study, status__in=ACTIVE):  # type: ignore[misc]
            found.append(f'{model._meta.verbose_name} "{job}" ({job.status})')
    return found


def refuse_if_live(job: Job) -> None:
    """Refuse to delete a job that is queued or running (lock its row first: call inside a transaction)."""
    if job.status in ACTIVE:
        raise TrashError(f'The {job._meta.verbose_name} "{job}" is {job.status}; cancel it first, then delete it.')


def dependents(obj: models.Model) -> dict[type[models.Model], int]:
    """{model: count} of the human or paid work a delete of `obj` would take along (what Django's cascade would
    remove), counting only the models apps name as work."""
    from django.contrib.admin.utils import NestedObjects

    collector = NestedObjects(using=router.db_for_write(type(obj)))
    collector.collect([obj])
    work = set(work_models())
    # django-stubs types model_objs' keys as str; Django keys it by model class
    model_objs = cast("dict[type[models.Model], set[models.Model]]", collector.model_objs)
    return {model: len(objs) for model, objs in model_objs.items() if model in work and objs}


def describe(counts: Mapping[type[models.Model], int]) -> str:
    """'1 assignment, 12 codings, 3 memos' from dependents()."""
    parts = []
    for model, n in counts.items():
        name = model._meta.verbose_name if n == 1 else model._meta.verbose_name_plural
        parts.append(f"{n} {name}")
    return ", ".join(sorted(parts, key=lambda part: part.split(" ", 1)[1]))


def refuse_if_work(
    obj: models.Model, what: str, advice: str = "Move the whole study to the trash instead (its admins can restore it)."
) -> None:
    """Refuse to delete `obj` when human or paid work depends on it; the message says what."""
    counts = dependents(obj)
    if counts:
        raise TrashError(f"{what} cannot be deleted: {describe(counts)} depend on it. {advice}")


# -- the study trash ------------------------------------------------------------------------------------------------


def _locked(study: Study) -> Study:
    return Study.all_objects.select_for_update().get(pk=study.pk)


def _refuse_live(study: Study, doing: str) -> None:
    running = live_jobs(study)
    if running:
        raise TrashError(
            f"The study cannot be {doing} while jobs are live: {'; '.join(running)}. Cancel them first, then try again."
        )


@transaction.atomic
def trash_study(study: Study, *, actor: Actor = None) -> Study:
    """Move a study to the trash (in one transaction: refused while any of its jobs is queued or running)."""
    from .services import record_activity

    study = _locked(study)
    if study.is_library:
        raise TrashError("The built-in library cannot be deleted.")
    if study.trashed_at is not None:
        raise TrashError("The study is already in the trash.")
    _refuse_live(study, "moved to the trash")
    study.trashed_at = timezone.now()
    # is_authenticated: a signed-in User, never the AnonymousUser
    study.trashed_by = actor if getattr(actor, "is_authenticated", False) else None  # type: ignore[assignment]
    study.save(update_fields=["trashed_at", "trashed_by"])
    record_activity(study, actor, "moved the study to the trash", study.name)
    return study


@transaction.atomic
def restore_study(study: Study, *, actor: Actor = None) -> Study:
    """Bring a study back from the trash with everything under it (nothing under it was touched)."""
    from .services import record_activity

    study = _locked(study)
    if study.trashed_at is None:
        raise TrashError("The study is not in the trash.")
    study.trashed_at = None
    study.trashed_by = None
    study.save(update_fields=["trashed_at", "trashed_by"])
    record_activity(study, actor, "restored the study from the trash", study.name)
    return study


@transaction.atomic
def purge_study(study: Study, *, actor: Actor = None) -> None:
    """Delete a trashed study for good, with everything it owns. Refused for a study not in the trash and while
    any of its jobs is live (a job writing rows while its study is deleted would break the delete)."""
    study = _locked(study)
    if study.trashed_at is None:
        raise TrashError("Only a study in the trash can be purged; move it to the trash first.")
    _refuse_live(study, "purged")
    study.delete()


def trashed_studies() -> QuerySet[Study]:
    return Study.all_objects.filter(trashed_at__isnull=False).order_by("-trashed_at")


def trashed_for(user: SiteUser | None) -> QuerySet[Study]:
    """The trashed studies `user` may restore: those they administer (site staff: every one)."""
    from .models import Membership, Role

    if not user or not user.is_authenticated:
        return Study.all_objects.none()
    if user.is_staff or user.is_superuser:
        return trashed_studies()
    admin_of = Membership.objects.filter(user=user, role=Role.ADMIN).values("study_id")
    return trashed_studies().filter(pk__in=admin_of)


def purge_after(study: Study) -> datetime:
    """When the retention period of a trashed study ends (`purge_trash` then removes it)."""
    assert study.trashed_at is not None, "only a trashed study has a purge date"
    return study.trashed_at + timedelta(days=retention_days())


def expired(now: datetime | None = None) -> QuerySet[Study]:
    """Trashed studies older than the retention period."""
    cutoff = (now or timezone.now()) - timedelta(days=retention_days())
    return trashed_studies().filter(trashed_at__lt=cutoff)


def purge_expired(now: datetime | None = None) -> tuple[list[str], list[str]]:
    """Purge every study trashed longer ago than the retention period; one with a live job waits for the next
    time. Returns (purged names, kept messages)."""
    purged: list[str] = []
    kept: list[str] = []
    for study in expired(now):
        try:
            purge_study(study)
        except TrashError as exc:
            kept.append(f"{study.name}: {exc}")
        else:
            purged.append(study.name)
    return purged, kept
