from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"

    def ready(self):
        from . import exports_agreement  # noqa: F401  (registers the agreement datasets)
