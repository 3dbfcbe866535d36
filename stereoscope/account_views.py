"""Account pages: accepting an invitation (choosing a first password) and changing one's password."""

from django.contrib.auth import views as auth_views
from django.contrib.messages.views import SuccessMessageMixin
from django.urls import reverse, reverse_lazy

from . import invitations, my_work


class InvitationAcceptView(SuccessMessageMixin, auth_views.PasswordResetConfirmView):
    """The one-time link: Django's token stops working once the password is set. The person is signed in straight
    away and lands on the study that invited them."""

    template_name = "registration/invitation_accept.html"
    success_message = "Your password is set and you are signed in."
    post_reset_login = True
    post_reset_login_backend = "django.contrib.auth.backends.ModelBackend"

    def form_valid(self, form):
        self.invited_study = invitations.accepted(form.user)
        return super().form_valid(form)

    def get_success_url(self):
        study = getattr(self, "invited_study", None)
        return reverse("study-dashboard", args=[study.pk]) if study else reverse("study-list")


class PasswordChangeView(SuccessMessageMixin, auth_views.PasswordChangeView):
    template_name = "registration/password_change.html"
    success_url = reverse_lazy("study-list")
    success_message = "Your password was changed."


class LoginView(auth_views.LoginView):
    """Signing in: a `next` link wins; otherwise a coder lands on My work (their queues), everyone else on the
    studies."""

    def get_default_redirect_url(self):
        if my_work.lands_on_my_work(self.request.user):
            return reverse("my-work")
        return super().get_default_redirect_url()
