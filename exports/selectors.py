"""Reads of the exports app for other apps (tests/architecture/test_cross_app_reads.py)."""

from django.db.models import QuerySet

from stereoscope.models import Study

from .models import DATA_FORMATS, ExportJob, ExportStatus


def study_jobs(study: Study, fmt: str | None = None) -> QuerySet[ExportJob]:
    """The study's export jobs, newest first; only those of format `fmt` when it is given."""
    jobs = ExportJob.objects.filter(study=study).select_related("created_by")
    return jobs.filter(format=fmt) if fmt else jobs


def latest_data_export(study: Study) -> ExportJob | None:
    """The study's newest completed export of its data (a bundle or a .qdpx; not a document such as the report's
    PDF), or None."""
    jobs = ExportJob.objects.filter(study=study, status=ExportStatus.COMPLETED, format__in=DATA_FORMATS)
    return jobs.order_by("-pk").first()
