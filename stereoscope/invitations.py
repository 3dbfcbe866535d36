"""Accounts for new members. A study admin adds a person by username and e-mail; the account starts without a
password and with a one-time invitation link (Django's password-reset token: it stops working once the password
is set, and after PASSWORD_RESET_TIMEOUT)."""
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import transaction
from django.urls import reverse
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from . import services
from .models import Role
from .services import MembershipError


def invitation_path(user):
    """The path of a fresh one-time link that lets `user` set a password."""
    uid = urlsafe_base64_encode(force_bytes(user.pk))
    return reverse("invitation-accept", args=[uid, default_token_generator.make_token(user)])


def _create_invited_user(username, email):
    User = get_user_model()
    try:
        User.username_validator(username)
    except ValidationError:
        raise MembershipError(f"{username!r} is not a valid username: use letters, digits and @ . + - _ only.") from None
    try:
        validate_email(email)
    except ValidationError:
        raise MembershipError(f"{email!r} is not a valid e-mail address.") from None
    user = User(username=username, email=email)
    user.set_unusable_password()
    user.save()
    return user


@transaction.atomic
def add_or_invite_member(*, study, username, email, role, actor):
    """Add an existing user, or create the account and return its invitation path.

    Returns (membership, invitation path or None). A user who has not set a password yet gets a fresh link.
    """
    username, email = username.strip(), (email or "").strip()
    if not get_user_model().objects.filter(username=username).exists():
        if not email:
            raise MembershipError(f"No user named {username!r}. Give an e-mail address to invite them.")
        if role not in Role.values:
            raise MembershipError(f"Unknown role {role!r}.")
        _create_invited_user(username, email)
    membership = services.add_member(study=study, username=username, role=role, actor=actor)
    user = membership.user
    return membership, (None if user.has_usable_password() else invitation_path(user))


def mail_invitation(user, study, url):
    """Send the link by e-mail when the operator configured e-mail; returns whether it was sent."""
    if not getattr(settings, "SEND_INVITATION_EMAILS", False) or not user.email:
        return False
    send_mail(
        subject=f"Your invitation to the study “{study.name}” on Stereoscope",
        message=(f"You have been added to “{study.name}”. Choose your password here (the link works once):\n\n"
                 f"{url}\n\nYour username is {user.username}."),
        from_email=None, recipient_list=[user.email],
    )
    return True
