from django.apps import AppConfig


class PsychometricsConfig(AppConfig):
    name = "psychometrics"
    verbose_name = "Psychometrics"

    def ready(self):
        from . import runs  # noqa: F401  (registers questionnaire runs with the job engine)
