"""ExportJob now belongs to the exports app (see exports/migrations/0001_initial.py): remove it from this app's
state only; the table and its rows stay."""
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('stereoscope', '0002_export_job'),
        ('exports', '0001_initial'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name='ExportJob')],
            database_operations=[],
        ),
    ]
