from django.apps import AppConfig


class GenerationConfig(AppConfig):
    name = "generation"
    verbose_name = "Generation"

    def ready(self):
        from . import runs  # noqa: F401  (registers generation runs with the job engine)
