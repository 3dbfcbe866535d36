from django.apps import AppConfig


class MeasuresConfig(AppConfig):
    name = "measures"
    verbose_name = "Text measures"

    def ready(self):
        from . import scoring  # noqa: F401  (registers measure runs with the job engine)
