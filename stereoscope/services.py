"""Writes for studies and memberships. Views, the API and commands call these."""

from typing import Any

from django.conf import settings
from django.contrib.auth import get_user_model
from django.db import transaction

from .models import ActivityEvent, Membership, Role, Study

User = Any  # the auth user model (or AnonymousUser / None for commands)


def record_activity(study: Study, actor: User, verb: str, target: object = "") -> None:
    ActivityEvent.objects.create(
        study=study,
        actor=actor if getattr(actor, "is_authenticated", False) else None,
        verb=verb,
        target=str(target)[:300],
    )


def record_probe(study_id: int, token: str) -> None:
    """The worker probe's one activity line (the Celery integration test proves a worker wrote to the database)."""
    ActivityEvent.objects.get_or_create(study_id=study_id, verb="worker probe", target=token)


class StudyCreationRefused(PermissionError):
    pass


def may_create_study(user: User) -> bool:
    """STUDY_CREATORS: "any" signed-in user (default) or "staff" only; others join the studies they are invited to."""
    if getattr(settings, "STUDY_CREATORS", "any") == "staff":
        return bool(user is not None and getattr(user, "is_staff", False))
    return True


@transaction.atomic
def create_study(*, name: str, description: str = "", created_by: User) -> Study:
    if created_by is not None and not may_create_study(created_by):
        raise StudyCreationRefused(
            "On this installation only site staff create studies; ask them for a study or an invitation."
        )
    study: Study = Study.objects.create(name=name, description=description, created_by=created_by)
    if created_by is not None:  # None: made by a command (e.g. `recipe apply`) with no signed-in user
        Membership.objects.create(study=study, user=created_by, role=Role.ADMIN)
    record_activity(study, created_by, "created the study", study.name)
    return study


@transaction.atomic
def update_study(study: Study, *, actor: User, **fields: str) -> Study:
    """Change a study's name or description (the only fields a user edits)."""
    changed = [name for name in ("name", "description") if name in fields and fields[name] != getattr(study, name)]
    for name in changed:
        setattr(study, name, fields[name])
    if changed:
        study.save(update_fields=changed)
        record_activity(study, actor, "changed the study's " + " and ".join(changed), study.name)
    return study


class MembershipError(ValueError):
    pass


@transaction.atomic
def add_member(*, study: Study, username: str, role: str, actor: User) -> Membership:
    if role not in Role.values:
        raise MembershipError(f"Unknown role {role!r}; choose one of {', '.join(Role.values)}.")
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        raise MembershipError(f"No user named {username!r}.")
    membership, created = Membership.objects.update_or_create(study=study, user=user, defaults={"role": role})
    record_activity(study, actor, "added member" if created else "changed role of", f"{user.username} ({role})")
    return membership


def ensure_member(*, study: Study, user: User, role: str) -> tuple[Membership, bool]:
    """Make `user` a member of `study` with `role` unless they already are one (their role then stays).
    Returns (membership, created)."""
    if role not in Role.values:
        raise MembershipError(f"Unknown role {role!r}; choose one of {', '.join(Role.values)}.")
    return Membership.objects.get_or_create(study=study, user=user, defaults={"role": role})


@transaction.atomic
def remove_member(*, membership: Membership, actor: User) -> None:
    study = membership.study
    if membership.role == Role.ADMIN and study.memberships.filter(role=Role.ADMIN).count() == 1:
        raise MembershipError("A study keeps at least one admin.")
    record_activity(study, actor, "removed member", membership.user.username)
    membership.delete()


def library_study() -> Study:
    study: Study
    study, _ = Study.objects.get_or_create(
        is_library=True,
        defaults={
            "name": "Built-in library",
            "description": "Toolkits, codebooks and instruments shipped with Stereoscope.",
        },
    )
    return study


def set_spending_caps(study: Study, **caps: object) -> None:
    """Write a study's spending cap (`spending_cap_usd`) or the limit staff allow it (`spending_cap_limit_usd`);
    the generation app's spending service checks who may and what is allowed."""
    allowed = {"spending_cap_usd", "spending_cap_limit_usd"}
    if not caps or set(caps) - allowed:
        raise ValueError(f"Only {', '.join(sorted(allowed))} can be set here.")
    Study.objects.filter(pk=study.pk).update(**caps)
    for field, value in caps.items():
        setattr(study, field, value)
