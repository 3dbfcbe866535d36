"""400, 403, 404 and 405 answers: pages in the site's layout that say why; JSON under /api/."""

from django.db import DataError
from django.http import JsonResponse
from django.shortcuts import render

OUT_OF_RANGE = (
    "The input holds a value the database cannot store: a number out of range (an id or a count with dozens of "
    "digits), or a NUL character."
)
DEFAULT_REASONS = {
    400: OUT_OF_RANGE,
    403: "Your role in this study does not allow this page.",
    404: "There is nothing at this address, or it belongs to a study you are not a member of.",
}
TITLES = {400: "Bad input", 403: "Not allowed", 404: "Not found", 405: "Wrong method"}


def _reason(exception, status):
    message = exception.args[0] if exception is not None and exception.args else ""
    generic = isinstance(message, str) and " matches the given query" in message  # get_object_or_404's wording
    if not message or not isinstance(message, str) or generic:
        return DEFAULT_REASONS[status]
    return message


def _error(request, exception, status, reason=None):
    reason = reason or _reason(exception, status)
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": reason}, status=status)
    return render(
        request, "stereoscope/error.html", {"status": status, "title": TITLES[status], "reason": reason}, status=status
    )


def permission_denied(request, exception=None):
    return _error(request, exception, 403)


def page_not_found(request, exception=None):
    return _error(request, exception, 404)


class OutOfRangeInputMiddleware:
    """A page view that met a number too large for the database (OverflowError on SQLite, DataError on PostgreSQL,
    e.g. an id of 30 digits in a form) answers 400 with the reason instead of a server error. The API's exception
    handler does the same for API views."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        return self.get_response(request)

    def process_exception(self, request, exception):
        if isinstance(exception, (OverflowError, DataError)):
            return _error(request, None, 400)
        return None


def _wrong_method_reason(method, allowed):
    if allowed == {"POST"}:
        return (
            "This address changes data, so it takes only a form's POST (its button on the page), "
            "not a link or an address typed in."
        )
    if allowed <= {"GET", "HEAD", "OPTIONS"}:
        return f"This page only shows data; it does not take {method} (was a form sent to the wrong address?)."
    return f"This address does not take {method}; it takes {', '.join(sorted(allowed))}."


class MethodNotAllowedPageMiddleware:
    """A page view's bare 405 (require_POST, require_safe: an empty body, which a browser shows as its own error
    screen) becomes a page in the site's layout that says which method the address takes; the Allow header stays.
    The API's 405 answers already carry JSON and are left alone."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if response.status_code != 405 or response.streaming or response.content:
            return response
        allow = response.get("Allow", "")
        allowed = {m.strip().upper() for m in allow.split(",") if m.strip()}
        page = _error(request, None, 405, reason=_wrong_method_reason(request.method, allowed))
        page["Allow"] = allow
        return page
