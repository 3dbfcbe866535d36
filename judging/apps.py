from django.apps import AppConfig


class JudgingConfig(AppConfig):
    name = "judging"
    verbose_name = "Judging"

    def ready(self):
        from generation import item_extras

        from .selectors import WEIGHT_FIELDS, item_weight_fields, weight_summary

        item_extras.register(WEIGHT_FIELDS, "Detection weight", item_weight_fields, weight_summary)
