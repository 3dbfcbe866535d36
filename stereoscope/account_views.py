"""Account pages: accepting an invitation (choosing a first password) and changing one's password."""
from django.contrib.auth import views as auth_views
from django.contrib.messages.views import SuccessMessageMixin
from django.urls import reverse_lazy


class InvitationAcceptView(SuccessMessageMixin, auth_views.PasswordResetConfirmView):
    """The one-time link: Django's token stops working once the password is set."""

    template_name = "registration/invitation_accept.html"
    success_url = reverse_lazy("login")
    success_message = "Your password is set. Log in with your username and new password."



class PasswordChangeView(SuccessMessageMixin, auth_views.PasswordChangeView):
    template_name = "registration/password_change.html"
    success_url = reverse_lazy("study-list")
    success_message = "Your password was changed."
