"""Counts for a study dashboard: every model with a `study` foreign key, found automatically."""
from django.apps import apps

from .models import ActivityEvent, Membership, Study


def study_models():
    found = []
    for model in apps.get_models():
        if model in (Membership, ActivityEvent):
            continue
        field = next((f for f in model._meta.get_fields() if f.name == "study" and getattr(f, "related_model", None) is Study), None)
        if field is not None and field.many_to_one:
            found.append(model)
    return sorted(found, key=lambda m: (m._meta.app_label, m._meta.verbose_name_plural))


def study_counts(study):
    counts = [("members", study.memberships.count())]
    for model in study_models():
        label = plural(str(model._meta.verbose_name), str(model._meta.verbose_name_plural))
        counts.append((label, model.objects.filter(study=study).count()))
    return counts


def plural(singular, declared):
    """Django's default plural only appends "s" ("code discoverys"); mend consonant + y."""
    if declared == singular + "s" and len(singular) > 1 and singular.endswith("y") and singular[-2] not in "aeiou":
        return singular[:-1] + "ies"
    return declared
