"""API errors as JSON with a clear message; never a 500 page for bad input."""
from django.core.exceptions import ValidationError as DjangoValidationError
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler


def exception_handler(exc, context):
    if isinstance(exc, DjangoValidationError):
        return Response({"detail": " ".join(exc.messages)}, status=400)
    if isinstance(exc, (ValueError,)) and exc.__class__.__module__ != "builtins":
        # Domain errors raised by services (subclasses of ValueError) become 400s.
        return Response({"detail": str(exc)}, status=400)
    return drf_exception_handler(exc, context)
