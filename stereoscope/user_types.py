"""Type names for the people code acts for, for annotations only (the auth models are imported for the type
checker alone: they cannot be imported before the apps are loaded)."""

from typing import TYPE_CHECKING, TypeAlias

if TYPE_CHECKING:
    from django.contrib.auth.models import AnonymousUser, User

# request.user: a signed-in user (settings.AUTH_USER_MODEL is auth.User) or the anonymous one
SiteUser: TypeAlias = "User | AnonymousUser"
# who did something, for the record: a request's user, or None for a command
Actor: TypeAlias = "User | AnonymousUser | None"
