"""Weights imported into a new toolkit version: shown on its page, in its JSON/CSV export, linked after import;
a second submit of the same file does not silently make another version."""

import csv
import io
import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from generation.models import Toolkit
from generation.toolkits import file_format as toolkit_format
from tests.generation.runs.conftest import make_toolkit  # noqa: F401 (fixtures)

WEIGHTS = "item_number,weight,rate,method,flags\n1,0.125,0.2,shrunk,\n2,0.5,0.8,shrunk,\n3,0.375,0.6,shrunk,weak\n"


def _post(client, study, toolkit):
    upload = SimpleUploadedFile("weights.csv", WEIGHTS.encode(), content_type="text/csv")
    return client.post(f"/studies/{study.pk}/judging/weights/", {"toolkit": toolkit.pk, "file": upload})


@pytest.mark.django_db
def test_imported_weights_visible_exported_and_linked(roles, client_for, make_toolkit):
    study = roles["a"]
    toolkit = make_toolkit(study, n_items=3)
    client = client_for(roles["users"]["researcher"])
    response = _post(client, study, toolkit)
    target = Toolkit.objects.get(name=toolkit.name, version=2)
    assert response.status_code == 302 and response["Location"] == f"/studies/{study.pk}/toolkits/{target.pk}/"

    page = client.get(response["Location"]).content.decode()
    assert "Detection weight" in page and "0.125" in page and "0.375" in page and "weak" in page

    data = json.loads(client.get(f"/studies/{study.pk}/toolkits/{target.pk}/export.json").content)
    assert [(i["number"], i["weight"]) for i in data["items"]] == [(1, 0.125), (2, 0.5), (3, 0.375)]
    assert data["items"][2]["weight_flags"] == ["weak"]
    rows = list(
        csv.DictReader(io.StringIO(client.get(f"/studies/{study.pk}/toolkits/{target.pk}/export.csv").content.decode()))
    )
    assert [r["weight"] for r in rows if r["kind"] == "item"] == ["0.125", "0.5", "0.375"]
    # the exports still import (the weight fields are read-only extras)
    clean = toolkit_format.parse_json(json.dumps(data))
    assert len(clean["items"]) == 3
    toolkit_format.parse_csv(client.get(f"/studies/{study.pk}/toolkits/{target.pk}/export.csv").content)
    # the version without weights exports no weight fields
    assert (
        "weight"
        not in json.loads(client.get(f"/studies/{study.pk}/toolkits/{toolkit.pk}/export.json").content)["items"][0]
    )


@pytest.mark.django_db
def test_second_submit_does_not_create_another_version(roles, client_for, make_toolkit):
    study = roles["a"]
    toolkit = make_toolkit(study, n_items=3)
    client = client_for(roles["users"]["researcher"])
    _post(client, study, toolkit)
    before = Toolkit.objects.count()
    again = _post(client, study, toolkit)
    assert again.status_code == 400
    assert "already imported into" in again.content.decode() and f"{toolkit.name} v2" in again.content.decode()
    assert Toolkit.objects.count() == before
