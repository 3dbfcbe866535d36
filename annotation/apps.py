from django.apps import AppConfig
from django.db.models.signals import post_migrate

from stereoscope.bulk import keep_counts


def keep_queue_progress(sender, using, **kwargs):
    """After every migrate: the triggers that keep QueueProgress, installed (and the queues counted) if missing."""
    from .models import QUEUE_PROGRESS  # lazy: an app's models import once the app registry is ready

    keep_counts(QUEUE_PROGRESS, using=using)


class AnnotationConfig(AppConfig):
    name = "annotation"
    verbose_name = "Annotation"
    # human or paid work (stereoscope/trash.py): refused or trashed, never deleted by a silent cascade
    work_models = ["Coding", "Memo", "Assignment", "GenderAttribution"]

    def ready(self):
        post_migrate.connect(keep_queue_progress, sender=self)
        from stereoscope.health import register_job_model

        register_job_model("code discovery", self.get_model("CodeDiscovery"))  # seen by /healthz
        from stereoscope.my_work import register_work_source

        from .selectors import coder_queues

        register_work_source(coder_queues)  # the coding queues on My work and a coder's dashboard
        from .services import code_discovery  # noqa: F401  (registers code discovery with the job engine)
