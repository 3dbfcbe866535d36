"""Every export's manifest embeds the recipe of its study; that recipe rebuilds the study."""

import json
import zipfile

import pytest

from recipes import services
from recipes.exporting import export_recipe


@pytest.mark.django_db
def test_export_manifest_embeds_the_recipe(recipe, tmp_path):
    from exports.services import write_export

    study = services.apply(recipe).study
    path = tmp_path / "out.zip"
    manifest = write_export(study, "csv", path, dataset_keys=["outputs"])
    with zipfile.ZipFile(path) as zf:
        stored = json.loads(zf.read("manifest.json"))
    assert (
        stored["recipe"] == json.loads(json.dumps(export_recipe(study))) == json.loads(json.dumps(manifest["recipe"]))
    )
    assert [r["name"] for r in stored["recipe"]["runs"]] == ["Stories"]
    # the human stages come from the recipe the study was built from
    assert stored["recipe"]["human_stages"] == recipe["human_stages"]
    assert services.check(stored["recipe"]) == []
    stored["recipe"]["study"]["name"] = "Rebuilt from a manifest"
    rebuilt = services.apply(stored["recipe"])
    assert rebuilt.study.pk != study.pk and {c.action for c in rebuilt.changes} == {"create"}
