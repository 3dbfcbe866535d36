from django.apps import AppConfig


class ExportsConfig(AppConfig):
    name = "exports"
    verbose_name = "Exports"

    def ready(self):
        from stereoscope.health import register_job_model

        register_job_model("export job", self.get_model("ExportJob"))  # seen by /healthz
