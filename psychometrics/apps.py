from django.apps import AppConfig


class PsychometricsConfig(AppConfig):
    name = "psychometrics"
    verbose_name = "Psychometrics"
