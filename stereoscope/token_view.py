"""/api/token/ with the login throttle's message (stereoscope/throttle.py). Apart from throttle.py, which every
process imports at start-up (its signal receiver logs lockouts), so that a command or worker does not import Django
REST framework's views and serializers it never uses."""

from rest_framework import status
from rest_framework.authtoken.views import ObtainAuthToken
from rest_framework.exceptions import ValidationError
from rest_framework.response import Response

from .throttle import LOCKED_MESSAGE


class ThrottledObtainAuthToken(ObtainAuthToken):
    """/api/token/: DRF's token view, answering 429 with a clear message once the username or address is locked."""

    def post(self, request, *args, **kwargs):
        try:
            return super().post(request, *args, **kwargs)
        except ValidationError:
            if getattr(request, "axes_locked_out", False):
                return Response({"detail": LOCKED_MESSAGE}, status=status.HTTP_429_TOO_MANY_REQUESTS)
            raise


obtain_auth_token = ThrottledObtainAuthToken.as_view()
