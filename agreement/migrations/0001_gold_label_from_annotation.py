"""GoldLabel, moved here from annotation without copying data: the model enters agreement's state on the existing
table annotation_goldlabel (no database operation), and its content type (hence its permissions) follows it."""
import django.db.models.deletion
import django.utils.timezone
from django.conf import settings
from django.db import migrations, models


def content_type_to(app_label, other):
    def move(apps, schema_editor):
        ContentType = apps.get_model('contenttypes', 'ContentType')
        if not ContentType.objects.filter(app_label=app_label, model='goldlabel').exists():
            ContentType.objects.filter(app_label=other, model='goldlabel').update(app_label=app_label)
    return move


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        ('annotation', '0006_gold_label_moves_to_agreement'),
        ('contenttypes', '0002_remove_content_type_name'),
        ('generation', '0004_output_viewer_indexes'),
        ('stereoscope', '0002_export_job'),
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name='GoldLabel',
                    fields=[
                        ('id', models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                                   verbose_name='ID')),
                        ('target', models.CharField(help_text='code:<id>, dimension:<id> or stereotype',
                                                    max_length=50)),
                        ('value', models.IntegerField()),
                        ('note', models.TextField(blank=True)),
                        ('created_at', models.DateTimeField(default=django.utils.timezone.now)),
                        ('updated_at', models.DateTimeField(auto_now=True)),
                        ('code', models.ForeignKey(
                            blank=True, help_text='The code or dimension of the target (empty for stereotype).',
                            null=True, on_delete=django.db.models.deletion.CASCADE, related_name='gold_labels',
                            to='annotation.code')),
                        ('decided_by', models.ForeignKey(
                            blank=True, null=True, on_delete=django.db.models.deletion.SET_NULL, related_name='+',
                            to=settings.AUTH_USER_MODEL)),
                        ('output', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                                     related_name='gold_labels', to='generation.output')),
                        ('study', models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                                    related_name='gold_labels', to='stereoscope.study')),
                    ],
                    options={
                        'db_table': 'annotation_goldlabel',
                        'ordering': ['study', 'target', 'output_id'],
                        'constraints': [models.UniqueConstraint(fields=('study', 'target', 'output'),
                                                                name='unique_gold_label')],
                    },
                ),
            ],
            database_operations=[],
        ),
        migrations.RunPython(content_type_to('agreement', 'annotation'), content_type_to('annotation', 'agreement')),
    ]
