"""Sentence rows move from their own table (one row per sentence) into one packed value per output measure
(measures/sentence_pack.py). Existing rows are packed; going back unpacks them into the table again."""

from django.db import migrations, models

from measures.sentence_pack import pack, unpack


def pack_rows(apps, schema_editor):
    OutputMeasure = apps.get_model("measures", "OutputMeasure")
    SentenceMeasure = apps.get_model("measures", "SentenceMeasure")
    ids = SentenceMeasure.objects.values_list("output_measure_id", flat=True).distinct().order_by("output_measure_id")
    for om_id in list(ids):
        rows = list(
            SentenceMeasure.objects.filter(output_measure_id=om_id)
            .order_by("index")
            .values_list("index", "start", "end", "label", "score", "scores")
        )
        columns = [list(c) for c in zip(*rows, strict=True)]
        OutputMeasure.objects.filter(pk=om_id).update(sentences_packed=pack(*columns))


def unpack_rows(apps, schema_editor):
    OutputMeasure = apps.get_model("measures", "OutputMeasure")
    SentenceMeasure = apps.get_model("measures", "SentenceMeasure")
    for om_id, packed in OutputMeasure.objects.exclude(sentences_packed=b"").values_list("pk", "sentences_packed"):
        SentenceMeasure.objects.bulk_create(
            [
                SentenceMeasure(
                    output_measure_id=om_id,
                    index=r.index,
                    start=r.start,
                    end=r.end,
                    label=r.label,
                    score=r.score,
                    scores=r.scores,
                )
                for r in unpack(packed)
            ],
            batch_size=1000,
        )


class Migration(migrations.Migration):
    dependencies = [
        ("measures", "0006_sentence_index_word_counts"),
    ]

    operations = [
        migrations.AddField(
            model_name="outputmeasure",
            name="sentences_packed",
            field=models.BinaryField(
                blank=True,
                default=b"",
                editable=False,
                help_text="Each sentence's offsets and the classifier's label, score and scores "
                "(measures/sentence_pack.py); read with sentence_rows().",
            ),
        ),
        migrations.RunPython(pack_rows, unpack_rows),
        migrations.DeleteModel(name="SentenceMeasure"),
    ]
