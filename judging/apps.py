from django.apps import AppConfig


class JudgingConfig(AppConfig):
    name = "judging"
    verbose_name = "Judging"
    # human or paid work (stereoscope/trash.py): refused or trashed, never deleted by a silent cascade
    work_models = ["Verdict"]

    def ready(self):
        from stereoscope.health import register_job_model
        from stereoscope.providers import provide

        from . import selectors

        provide("judging", selectors)
        register_job_model("judge round", self.get_model("JudgeRound"))  # seen by /healthz
        from . import rounds  # noqa: F401  (registers judge rounds with the job engine)
