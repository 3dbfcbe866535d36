"""Request values of the annotation API: id lists and a study's objects by id (a 400 naming what is missing)."""

from rest_framework.exceptions import ValidationError


def int_list(value, label):
    if value in (None, ""):
        return []
    items = value if isinstance(value, list) else str(value).split(",")
    try:
        return [int(v) for v in items]
    except (TypeError, ValueError):
        raise ValidationError({"detail": f"{label} must be a list of ids."}) from None


def get_in_study(model, pk, study, field="study", label="object"):
    """The study's `model` object `pk`; `model` may be a selector (study, pk) -> object or None instead."""
    if pk in (None, ""):
        raise ValidationError({"detail": f"Give the {label}."})
    try:
        pk = int(pk)
    except (TypeError, ValueError):
        raise ValidationError({"detail": f"The {label} id must be a number."}) from None
    obj = model.objects.filter(pk=pk, **{field: study}).first() if hasattr(model, "objects") else model(study, pk)
    if obj is None:
        raise ValidationError({"detail": f"No {label} {pk} in this study."})
    return obj
