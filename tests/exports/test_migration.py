"""ExportJob moved from the stereoscope package to the exports app without touching its table or rows."""

import pytest

from tests.migration_trip import empty_database, leaves, migrate

BEFORE = [("stereoscope", "0002_export_job"), ("exports", None)]


@pytest.mark.django_db(transaction=True)
def test_export_jobs_survive_the_move_to_the_exports_app(tmp_path):
    with empty_database(tmp_path):
        moved_job()


def moved_job():
    old = migrate(BEFORE)
    study = old.get_model("stereoscope", "Study").objects.create(name="Kept")
    job = old.get_model("stereoscope", "ExportJob").objects.create(
        study_id=study.pk, format="csv", datasets=["outputs"], status="completed", file_name="kept.zip"
    )
    content_type = old.get_model("contenttypes", "ContentType").objects.get_or_create(
        app_label="stereoscope", model="exportjob"
    )[0]

    migrate(leaves("stereoscope", "exports"))

    from django.contrib.contenttypes.models import ContentType

    from exports.models import ExportJob

    assert ExportJob._meta.db_table == "stereoscope_exportjob"
    moved = ExportJob.objects.get(pk=job.pk)
    assert (moved.study.name, moved.file_name, moved.datasets) == ("Kept", "kept.zip", ["outputs"])
    ContentType.objects.clear_cache()
    assert ContentType.objects.get(pk=content_type.pk).app_label == "exports"
