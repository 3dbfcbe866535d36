"""Accounts for new members. A study admin adds a person by username and e-mail; the account starts without a
password and with a one-time invitation link (Django's password-reset token: it stops working once the password
is set, and after PASSWORD_RESET_TIMEOUT). Only the study that created the account may issue its link again, and
only its admins: a link is the power to set the account's password."""

from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.tokens import default_token_generator
from django.core.exceptions import ValidationError
from django.core.mail import send_mail
from django.core.validators import validate_email
from django.db import transaction
from django.urls import reverse
from django.utils import timezone
from django.utils.encoding import force_bytes
from django.utils.http import urlsafe_base64_encode

from . import services
from .models import Invitation, Membership, Role
from .permissions import has_role
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
        raise MembershipError(
            f"{username!r} is not a valid username: use letters, digits and @ . + - _ only."
        ) from None
    try:
        validate_email(email)
    except ValidationError:
        raise MembershipError(f"{email!r} is not a valid e-mail address.") from None
    user = User(username=username, email=email)
    user.set_unusable_password()
    user.save()
    return user


def added_message(username, role):
    """The one answer to adding a person by username alone, whether or not the account exists (so the form
    cannot be used to find out which usernames exist)."""
    return (
        f"{username} is now {role} if an account by that name exists. "
        "To invite a new person, give their e-mail address too."
    )


@transaction.atomic
def add_or_invite_member(*, study, username, email, role, actor):
    """Add a person to `study`, or invite them. Returns (membership or None, invitation path or None).

    - No such account and an e-mail given: the account is created without a password, the study is recorded as the
      one that invited it, and its one-time link is returned.
    - The account exists and has no password yet, and this study invited it: a re-invitation (a fresh link), for
      this study's admins only.
    - Any other existing account (one with a password, or one pending from another study's invitation) is added
      as a member and no link is given: a link lets whoever holds it set the account's password.
    - No such account and no e-mail: nothing is saved, and the answer is the same as for an existing account
      (membership None; callers show `added_message`).
    """
    username, email = username.strip(), (email or "").strip()
    if role not in Role.values:
        raise MembershipError(f"Unknown role {role!r}; choose one of {', '.join(Role.values)}.")
    user = get_user_model().objects.filter(username=username).first()
    if user is None:
        if not email:
            return None, None
        user = _create_invited_user(username, email)
        Invitation.objects.create(user=user, study=study, invited_by=actor)
        membership = services.add_member(study=study, username=username, role=role, actor=actor)
        return membership, invitation_path(user)
    membership = services.add_member(study=study, username=username, role=role, actor=actor)
    return membership, (invitation_path(user) if may_issue_link(user, study, actor) else None)


def may_issue_link(user, study, actor):
    """Whether `actor` may get a fresh one-time link for `user` in `study`: only while the account has no
    password, only for the study that invited it, and only for that study's admins."""
    if user.has_usable_password() or not user.is_active:
        return False
    invitation = Invitation.objects.filter(user=user).first()
    if invitation is None or invitation.study_id != study.pk or invitation.accepted_at is not None:
        return False
    return actor is not None and has_role(actor, study, Role.ADMIN)


def accepted(user):
    """The invited person set their password: record it, and return the study that invited them (their work), or
    None."""
    invitation = Invitation.objects.filter(user=user).select_related("study").first()
    if invitation is None:
        return None
    if invitation.accepted_at is None:
        invitation.accepted_at = timezone.now()
        invitation.save(update_fields=["accepted_at"])
    if Membership.objects.filter(study=invitation.study, user=user).exists():
        return invitation.study
    return None


def mail_invitation(user, study, url):
    """Send the link by e-mail when the operator configured e-mail; returns whether it was sent."""
    if not getattr(settings, "SEND_INVITATION_EMAILS", False) or not user.email:
        return False
    send_mail(
        subject=f"Your invitation to the study “{study.name}” on Stereoscope",
        message=(
            f"You have been added to “{study.name}”. Choose your password here (the link works once):\n\n"
            f"{url}\n\nYour username is {user.username}."
        ),
        from_email=None,
        recipient_list=[user.email],
    )
    return True
