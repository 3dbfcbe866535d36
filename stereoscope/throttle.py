"""Throttling of failed logins (the login page, the admin's and /api/token/) with django-axes: after
AXES_FAILURE_LIMIT failures for one username, or from one address, further attempts are refused (HTTP 429) until
AXES_COOLOFF_TIME has passed or staff unlock them (`manage.py axes_reset_username NAME`, `axes_reset_ip ADDRESS`,
or the admin's "Access attempts"). Every lockout is logged."""

import logging

from axes.backends import AxesStandaloneBackend
from axes.signals import user_locked_out
from django.dispatch import receiver
from django.http import JsonResponse
from django.shortcuts import render

log = logging.getLogger("stereoscope.security")

LOCKED_MESSAGE = (
    "Too many failed logins for this username or from this address: logging in is blocked for now. "
    "Try again later, or ask the site's staff to unlock the account."
)


class LoginThrottleBackend(AxesStandaloneBackend):
    """Axes' check, for every authentication that comes with a request (the login page, the admin, /api/token/).
    One without a request (a shell, the test client's login()) has no address to throttle and is not checked."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if request is None:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)


def lockout_response(request, original_response=None, credentials=None):
    """AXES_LOCKOUT_CALLABLE: a JSON 429 for the API, the login page's message (429) for pages."""
    if request.path.startswith("/api/"):
        return JsonResponse({"detail": LOCKED_MESSAGE}, status=429)
    return render(request, "registration/locked_out.html", {"message": LOCKED_MESSAGE}, status=429)


@receiver(user_locked_out)
def log_lockout(sender, request=None, username=None, ip_address=None, **kwargs):
    log.warning("login locked out: username=%r address=%s path=%s", username, ip_address, getattr(request, "path", ""))
