"""GoldLabel moved from annotation to agreement on the same table: rows survive both ways, permissions follow."""

import pytest

from tests.migration_trip import empty_database, migrate

BEFORE = [("annotation", "0005_coding_frequency_index"), ("agreement", None)]
AFTER = [("annotation", "0006_gold_label_moves_to_agreement"), ("agreement", "0001_gold_label_from_annotation")]


@pytest.mark.django_db(transaction=True)
def test_gold_labels_keep_their_rows_across_the_move_and_back(tmp_path):
    with empty_database(tmp_path):
        _gold_labels_keep_their_rows_across_the_move_and_back()


def _gold_labels_keep_their_rows_across_the_move_and_back():
    old = migrate(BEFORE)
    Study, User = old.get_model("stereoscope", "Study"), old.get_model("auth", "User")
    Run, Output = old.get_model("generation", "GenerationRun"), old.get_model("generation", "Output")
    Codebook, Code = old.get_model("annotation", "Codebook"), old.get_model("annotation", "Code")
    ContentType = old.get_model("contenttypes", "ContentType")
    ContentType.objects.get_or_create(app_label="annotation", model="goldlabel")
    ContentType.objects.filter(app_label="agreement", model="goldlabel").delete()
    study = Study.objects.create(name="S")
    output = Output.objects.create(
        study=study,
        run=Run.objects.create(study=study, name="r", is_import=True),
        model_name="m",
        trial=1,
        text="t",
        status="done",
    )
    code = Code.objects.create(codebook=Codebook.objects.create(study=study, name="cb"), name="c")
    user = User.objects.create(username="res")
    old.get_model("annotation", "GoldLabel").objects.create(
        study=study, target=f"code:{code.pk}", code=code, output=output, value=1, note="kept", decided_by=user
    )

    new = migrate(AFTER)
    moved = new.get_model("agreement", "GoldLabel").objects.get()
    assert (moved.value, moved.note, moved.code_id, moved.decided_by_id) == (1, "kept", code.pk, user.pk)
    types = new.get_model("contenttypes", "ContentType").objects.filter(model="goldlabel")
    assert list(types.values_list("app_label", flat=True)) == ["agreement"]

    back = migrate(BEFORE)
    assert back.get_model("annotation", "GoldLabel").objects.get().note == "kept"
    migrate(AFTER)
    from agreement.models import GoldLabel

    assert GoldLabel._meta.db_table == "annotation_goldlabel" and GoldLabel.objects.get().value == 1
