"""ExportJob moved from the stereoscope package to the exports app without touching its table or rows."""
import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

BEFORE = [("stereoscope", "0002_export_job"), ("exports", None)]


@pytest.mark.django_db(transaction=True)
def test_export_jobs_survive_the_move_to_the_exports_app():
    executor = MigrationExecutor(connection)
    executor.migrate(BEFORE)
    old = executor.loader.project_state([BEFORE[0], ("contenttypes", "0002_remove_content_type_name")]).apps
    study = old.get_model("stereoscope", "Study").objects.create(name="Kept")
    job = old.get_model("stereoscope", "ExportJob").objects.create(
        study_id=study.pk, format="csv", datasets=["outputs"], status="completed", file_name="kept.zip")
    content_type = old.get_model("contenttypes", "ContentType").objects.get_or_create(
        app_label="stereoscope", model="exportjob")[0]

    executor = MigrationExecutor(connection)
    executor.migrate(executor.loader.graph.leaf_nodes())

    from django.contrib.contenttypes.models import ContentType

    from exports.models import ExportJob

    assert ExportJob._meta.db_table == "stereoscope_exportjob"
    moved = ExportJob.objects.get(pk=job.pk)
    assert (moved.study.name, moved.file_name, moved.datasets) == ("Kept", "kept.zip", ["outputs"])
    ContentType.objects.clear_cache()
    assert ContentType.objects.get(pk=content_type.pk).app_label == "exports"
