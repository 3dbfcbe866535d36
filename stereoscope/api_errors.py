"""API errors as JSON with a clear message; never a 500 page for bad input."""

from django.conf import settings
from django.core.exceptions import RequestDataTooBig, SuspiciousOperation, TooManyFieldsSent
from django.core.exceptions import ValidationError as DjangoValidationError
from django.db import DataError
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

from stereoscope.error_views import OUT_OF_RANGE


def exception_handler(exc, context):
    if isinstance(exc, RequestDataTooBig):
        limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
        return Response(
            {
                "detail": f"The request body is larger than the limit of {limit // 1024} KiB; send a file "
                "upload or a smaller body."
            },
            status=400,
        )
    if isinstance(exc, TooManyFieldsSent):
        return Response({"detail": "The request has too many fields."}, status=400)
    if isinstance(exc, SuspiciousOperation):
        return Response({"detail": "The request was refused as malformed."}, status=400)
    if isinstance(exc, RecursionError):  # a JSON body nested thousands of levels deep
        return Response({"detail": "The JSON body is nested too deeply."}, status=400)
    if isinstance(exc, (OverflowError, DataError)):  # SQLite's too-large integer; PostgreSQL's NUL or out of range
        return Response({"detail": OUT_OF_RANGE}, status=400)
    if isinstance(exc, DjangoValidationError):
        return Response({"detail": " ".join(exc.messages)}, status=400)
    if isinstance(exc, (ValueError,)) and exc.__class__.__module__ != "builtins":
        # Domain errors raised by services (subclasses of ValueError) become 400s.
        return Response({"detail": str(exc)}, status=400)
    return drf_exception_handler(exc, context)
