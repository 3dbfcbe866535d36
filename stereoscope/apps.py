from django.apps import AppConfig


class StereoscopeConfig(AppConfig):
    name = "stereoscope"
    verbose_name = "Stereoscope"

    def ready(self):
        from .health import register_job_model

        register_job_model("export job", self.get_model("ExportJob"))  # seen by /healthz
