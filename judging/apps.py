from django.apps import AppConfig


class JudgingConfig(AppConfig):
    name = "judging"
    verbose_name = "Judging"

    def ready(self):
        from stereoscope.providers import provide

        from . import selectors

        provide("judging", selectors)
