import os
import secrets

from django.contrib.auth import get_user_model
from django.core.management.base import BaseCommand


class Command(BaseCommand):
    help = "Create the first site admin if there is none, and print its credentials once."

    def add_arguments(self, parser):
        parser.add_argument("--username", default=os.environ.get("STEREOSCOPE_ADMIN_USER", "admin"))

    def handle(self, *args, username, **options):
        User = get_user_model()
        if User.objects.filter(is_superuser=True).exists():
            self.stdout.write("An admin account exists already (its password was printed at first setup).")
            return
        password = os.environ.get("STEREOSCOPE_ADMIN_PASSWORD") or secrets.token_urlsafe(12)
        User.objects.create_superuser(username=username, email="", password=password)
        bar = "=" * 60
        self.stdout.write(
            f"{bar}\nAdmin account created. It is shown only this once:\n"
            f"  username: {username}\n  password: {password}\n{bar}"
        )
