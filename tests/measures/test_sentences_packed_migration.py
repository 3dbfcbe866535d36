"""Sentence rows move from their table into one packed value per output measure, and back."""

import pytest

from tests.migration_trip import empty_database, migrate

BEFORE = [("measures", "0006_sentence_index_word_counts")]
AFTER = [("measures", "0007_sentences_packed")]
VADER = {"neg": 0.0, "neu": 0.56, "pos": 0.44, "compound": 0.4404}


@pytest.mark.django_db(transaction=True)
def test_sentence_rows_are_packed_and_unpacked_again(tmp_path):
    with empty_database(tmp_path):
        _sentence_rows_are_packed_and_unpacked_again()


def _sentence_rows_are_packed_and_unpacked_again():
    old = migrate(BEFORE)
    study = old.get_model("stereoscope", "Study").objects.create(name="S")
    run = old.get_model("generation", "GenerationRun").objects.create(study=study, name="r", is_import=True)
    Output = old.get_model("generation", "Output")
    measure_run = old.get_model("measures", "MeasureRun").objects.create(study=study, name="m", classifier="vader")
    OutputMeasure, SentenceMeasure = (
        old.get_model("measures", "OutputMeasure"),
        old.get_model("measures", "SentenceMeasure"),
    )
    with_rows, without = (
        OutputMeasure.objects.create(
            run=measure_run,
            output=Output.objects.create(
                study=study, run=run, model_name="m", trial=t, text="A b. C d.", status="done"
            ),
        )
        for t in (1, 2)
    )
    rows = [(0, 0, 4, "positive", 0.4404, VADER), (1, 5, 9, "neutral", None, {**VADER, "compound": 0.0})]
    for index, start, end, label, score, scores in reversed(rows):  # stored out of order: packed by index
        SentenceMeasure.objects.create(
            output_measure=with_rows, index=index, start=start, end=end, label=label, score=score, scores=scores
        )

    migrate(AFTER)
    from measures.models import OutputMeasure as Current

    assert [tuple(r) for r in Current.objects.get(pk=with_rows.pk).sentence_rows()] == rows
    assert Current.objects.get(pk=without.pk).sentence_rows() == []

    back = migrate(BEFORE)
    got = back.get_model("measures", "SentenceMeasure").objects.order_by("index")
    assert [(s.index, s.start, s.end, s.label, s.score, s.scores) for s in got] == rows
    assert {s.output_measure_id for s in got} == {with_rows.pk}
