from django.apps import AppConfig


class JudgingConfig(AppConfig):
    name = "judging"
    verbose_name = "Judging"

    def ready(self):
        from . import rounds  # noqa: F401  (registers judge rounds with the job engine)
