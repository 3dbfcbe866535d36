from django.apps import AppConfig


class MeasuresConfig(AppConfig):
    name = "measures"
    verbose_name = "Text measures"

    def ready(self):
        from stereoscope.health import register_job_model

        register_job_model("measure run", self.get_model("MeasureRun"))  # seen by /healthz
        from . import scoring  # noqa: F401  (registers measure runs with the job engine)
