"""The one error type of annotation's services (the message says what to fix) and the input checks they share."""

from typing import Any


class AnnotationError(ValueError):
    """A clear message for the user; nothing was changed."""


def _to_int(value: Any, label: str) -> int | None:
    if value in (None, ""):
        return None
    if isinstance(value, bool):
        raise AnnotationError(f"{label} must be a whole number.")
    try:
        return int(value)
    except (TypeError, ValueError):
        raise AnnotationError(f"{label} must be a whole number.") from None
