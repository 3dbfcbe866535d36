from django.apps import AppConfig


class MeasuresConfig(AppConfig):
    name = "measures"
    verbose_name = "Text measures"
