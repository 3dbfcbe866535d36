from django.apps import AppConfig


class GenerationConfig(AppConfig):
    name = "generation"
    verbose_name = "Generation"
    # human or paid work (stereoscope/trash.py): refused or trashed, never deleted by a silent cascade
    work_models = ["Output"]

    def ready(self):
        from stereoscope.health import register_job_model

        register_job_model("generation run", self.get_model("GenerationRun"))  # seen by /healthz
        from stereoscope import jobs

        from .runs import batches, services  # noqa: F401  (registers generation runs with the job engine)

        jobs.on_cancel(batches.cancel_open)  # a cancelled job's open provider batches are cancelled too
