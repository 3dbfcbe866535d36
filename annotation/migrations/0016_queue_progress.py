"""Issue 36: the coding workspace's queue progress without counting the queue, and a blind coder's frequency table
from an index alone.

QueueProgress holds each (codebook, coder) queue's stories assigned and done. Triggers on annotation_assignment keep
it, whatever writes the assignments: on PostgreSQL one statement-level trigger per operation (its transition table
grouped, so a bulk insert of 300k assignments is one upsert per queue); on SQLite row-level triggers. They are not
created here: annotation installs them after every migrate, this one included, and counts the existing assignments
when it does (annotation/apps.py, stereoscope.bulk.keep_counts), so databases built from the models (the tests') and
tables SQLite rebuilds in later migrations get them too. Going back, they are dropped before the table.

The coding index (codebook, coder) becomes (codebook, coder, code, output): the same prefix for the same reads, and a
blind coder's counts per code come from it alone, in code order."""

import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

from stereoscope.bulk import KeptCounts, drop_kept_counts

QUEUE_PROGRESS = KeptCounts(
    name="annotation_queue_progress",
    source="annotation_assignment",
    target="annotation_queueprogress",
    keys=("codebook_id", "coder_id"),
    counts=(),
)


def drop_triggers(apps, schema_editor):
    """Going back: the triggers go before their table does (annotation installs them after every migrate)."""
    drop_kept_counts(QUEUE_PROGRESS, using=schema_editor.connection.alias)


class Migration(migrations.Migration):
    dependencies = [
        ("annotation", "0015_assignment_plan"),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.CreateModel(
            name="QueueProgress",
            fields=[
                ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name="ID")),
                ("total", models.IntegerField(default=0)),
                ("done", models.IntegerField(default=0)),
                (
                    "codebook",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to="annotation.codebook"
                    ),
                ),
                (
                    "coder",
                    models.ForeignKey(
                        on_delete=django.db.models.deletion.CASCADE, related_name="+", to=settings.AUTH_USER_MODEL
                    ),
                ),
            ],
            options={
                "verbose_name_plural": "queue progress",
                "constraints": [
                    models.UniqueConstraint(fields=("codebook", "coder"), name="unique_queue_progress"),
                ],
            },
        ),
        migrations.RemoveIndex(
            model_name="coding",
            name="annotation__codeboo_ac446c_idx",
        ),
        migrations.AddIndex(
            model_name="coding",
            index=models.Index(fields=["codebook", "coder", "code", "output"], name="coding_coder_frequency_idx"),
        ),
        migrations.RunPython(migrations.RunPython.noop, drop_triggers),
    ]
