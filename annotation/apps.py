from django.apps import AppConfig


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"
    # human or paid work (stereoscope/trash.py): refused or trashed, never deleted by a silent cascade
    work_models = ["Coding", "Memo", "Assignment", "GenderAttribution"]

    def ready(self):
        from stereoscope.health import register_job_model

        register_job_model("code discovery", self.get_model("CodeDiscovery"))  # seen by /healthz
        from stereoscope.my_work import register_work_source

        from .selectors import coder_queues

        register_work_source(coder_queues)  # the coding queues on My work and a coder's dashboard
        from .services import code_discovery  # noqa: F401  (registers code discovery with the job engine)
