"""The codings export names the story subject's gender (slots, then coders' attributions, then pronouns)."""

import pytest

from annotation import datasets as annotation_datasets
from annotation import services
from annotation.models import Assignment
from stereoscope.datasets import get_dataset
from tests.annotation.conftest import outputs_factory, small_codebook  # noqa: F401 (fixtures)


@pytest.mark.parametrize("batch", [2000, 1, 3])
def test_codings_export_has_subject_gender(roles, outputs_factory, small_codebook, batch, monkeypatch):
    monkeypatch.setattr(annotation_datasets, "GENDER_BATCH", batch)  # stories are resolved a batch at a time
    study, coder = roles["a"], roles["users"]["coder"]
    cb, codes = small_codebook(study)
    by_slot, by_coder, by_pronoun, unknown = outputs_factory(
        study, ["A story.", "Another story.", "She said she would, and her team agreed.", "They met."]
    )
    by_slot.slot_values = {"gender": "woman"}
    by_slot.save(update_fields=["slot_values"])
    services.set_gender_attribution(by_coder, coder=coder, gender="M")
    for out in (by_slot, by_coder, by_pronoun, unknown):
        Assignment.objects.create(study=study, codebook=cb, output=out, coder=coder)
        services.create_coding(study=study, codebook=cb, output=out, code=codes["lead_f"], coder=coder)
    dataset = get_dataset("codings")
    assert "subject_gender" in dataset.column_names
    got = {r["output_id"]: r["subject_gender"] for r in dataset.rows(study, {})}
    assert got == {by_slot.pk: "F", by_coder.pk: "M", by_pronoun.pk: "F", unknown.pk: ""}
