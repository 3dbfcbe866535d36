"""Counts for a study dashboard: every model with a `study` foreign key, found automatically."""

from django.apps import apps
from django.contrib.auth import get_user_model
from django.db.models import Q

from .models import ActivityEvent, Membership, Role, Study
from .permissions import role_for


def study_models():
    found = []
    for model in apps.get_models():
        if model in (Membership, ActivityEvent):
            continue
        field = next(
            (f for f in model._meta.get_fields() if f.name == "study" and getattr(f, "related_model", None) is Study),
            None,
        )
        if field is not None and field.many_to_one:
            found.append(model)
    return sorted(found, key=lambda m: (m._meta.app_label, m._meta.verbose_name_plural))


def user_fields(model):
    """The names of `model`'s foreign keys to the user model (author, coder, created_by...)."""
    User = get_user_model()
    return [
        f.name
        for f in model._meta.get_fields()
        if getattr(f, "many_to_one", False) and getattr(f, "related_model", None) is User
    ]


def study_counts(study, *, only_user=None):
    """Rows per study model. With `only_user` (a coder in blind mode), a model with a user field counts only that
    user's rows (their memos, their assignments), and a model without one counts as the study's."""
    counts = [("members", study.memberships.count())]
    for model in study_models():
        label = plural(str(model._meta.verbose_name), str(model._meta.verbose_name_plural))
        rows = model.objects.filter(study=study)
        fields = user_fields(model) if only_user is not None else []
        if fields:
            mine = Q()
            for name in fields:
                mine |= Q(**{name: only_user})
            rows = rows.filter(mine)
        counts.append((label, rows.count()))
    return counts


def study_activity(study, *, only_user=None, limit=20):
    """The recent-activity feed; with `only_user` (a coder in blind mode), only that user's own actions."""
    events = study.activity.select_related("actor")
    if only_user is not None:
        events = events.filter(actor=only_user)
    return events[:limit]


def blind_reader(user, study):
    """Coders see only their own work in a study (blind mode); researchers and admins see everyone's."""
    return role_for(user, study) == Role.CODER


def plural(singular, declared):
    """Django's default plural only appends "s" ("code discoverys"); mend consonant + y."""
    if declared == singular + "s" and len(singular) > 1 and singular.endswith("y") and singular[-2] not in "aeiou":
        return singular[:-1] + "ies"
    return declared
