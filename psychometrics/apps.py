from django.apps import AppConfig


class PsychometricsConfig(AppConfig):
    name = "psychometrics"
    verbose_name = "Psychometrics"
    # human or paid work (stereoscope/trash.py): refused or trashed, never deleted by a silent cascade
    work_models = ["Response"]

    def ready(self):
        from stereoscope.health import register_job_model

        register_job_model("questionnaire run", self.get_model("QuestionnaireRun"))  # seen by /healthz
        from . import runs  # noqa: F401  (registers questionnaire runs with the job engine)
