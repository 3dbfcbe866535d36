from django.apps import AppConfig


class StereoscopeConfig(AppConfig):
    name = "stereoscope"
    verbose_name = "Stereoscope"
