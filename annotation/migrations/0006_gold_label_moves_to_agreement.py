"""GoldLabel moves to the agreement app: removed from annotation's model state only. The table
(annotation_goldlabel) and its rows stay; agreement.0001 takes the model over with the same table."""
from django.db import migrations


class Migration(migrations.Migration):

    dependencies = [
        ('annotation', '0005_coding_frequency_index'),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[migrations.DeleteModel(name='GoldLabel')],
            database_operations=[],
        ),
    ]
