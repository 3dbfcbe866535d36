"""ExportJob moves from the stereoscope package to the exports app. The table (stereoscope_exportjob) and its rows
stay where they are: this migration only adds the model to the exports app's state; stereoscope's 0003 removes it
from stereoscope's state. The content type follows, so admin history and permissions keep pointing at it."""
import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


def move_content_type(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    if not ContentType.objects.filter(app_label="exports", model="exportjob").exists():
        ContentType.objects.filter(app_label="stereoscope", model="exportjob").update(app_label="exports")


def restore_content_type(apps, schema_editor):
    ContentType = apps.get_model("contenttypes", "ContentType")
    if not ContentType.objects.filter(app_label="stereoscope", model="exportjob").exists():
        ContentType.objects.filter(app_label="exports", model="exportjob").update(app_label="stereoscope")


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('stereoscope', '0002_export_job'),
        ('contenttypes', '0002_remove_content_type_name'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='ExportJob',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False, verbose_name='ID')),
                        ('format', models.CharField(choices=[('csv', 'CSV (ZIP of one file per dataset)'), ('jsonl', 'JSON Lines (ZIP of one file per dataset)'), ('xlsx', 'Excel workbook (in a ZIP)'), ('qdpx', 'REFI-QDA project (.qdpx)')], max_length=10)),
                        ('datasets', models.JSONField(blank=True, default=list, help_text='Dataset keys; empty for a .qdpx project.')),
                        ('options', models.JSONField(blank=True, default=dict, help_text='Filters and pseudonymisation, as chosen.')),
                        ('status', models.CharField(choices=[('queued', 'Queued'), ('running', 'Running'), ('completed', 'Completed'), ('failed', 'Failed')], db_index=True, default='queued', max_length=20)),
                        ('progress', models.JSONField(blank=True, default=dict)),
                        ('file_name', models.CharField(blank=True, help_text='Relative to EXPORT_ROOT once completed.', max_length=300)),
                        ('size_bytes', models.BigIntegerField(blank=True, null=True)),
                        ('sha256', models.CharField(blank=True, max_length=64)),
                        ('manifest', models.JSONField(blank=True, default=dict)),
                        ('message', models.TextField(blank=True)),
                        ('lease_token', models.CharField(blank=True, max_length=64)),
                        ('lease_expires_at', models.DateTimeField(blank=True, null=True)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('started_at', models.DateTimeField(blank=True, null=True)),
                        ('finished_at', models.DateTimeField(blank=True, null=True)),
                        ('created_by', models.ForeignKey(blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+', to=settings.AUTH_USER_MODEL)),
                        ('study', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name='export_jobs', to='stereoscope.study')),
                    ],
                    options={
                        'db_table': 'stereoscope_exportjob',
                        'ordering': ['-created_at', '-id'],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(move_content_type, restore_content_type),
    ]
