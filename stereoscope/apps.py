from django.apps import AppConfig


class StereoscopeConfig(AppConfig):
    name = "stereoscope"
    verbose_name = "Stereoscope"

    def ready(self):
        from . import throttle  # noqa: F401  (logs each login lockout)
        from .celery import app  # noqa: F401  # lazy: the Celery app, which shared tasks bind to (stereoscope/__init__.py)
