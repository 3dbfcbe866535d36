from django.apps import AppConfig


class AgreementConfig(AppConfig):
    """Inter-rater agreement among coders, judges, human checks and gold labels. Reads annotation and judging; its
    pure statistics live in `stereoscope.stats.agreement` so judging can use them without importing this app."""

    name = "agreement"
    verbose_name = "Agreement"

    def ready(self):
        from stereoscope.providers import provide

        from . import variables

        provide("agreement", variables)  # gold labels of categorical variables, for classifier training
