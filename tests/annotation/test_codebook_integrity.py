"""A codebook whose parents form a cycle is refused (import through the API and the page), never saved with the
parents dropped; a flat list with parents nests; saving the same coding twice keeps one row."""
import io
import json

import pytest

from annotation import codebook_format as fmt
from annotation import services
from annotation.models import Assignment, Code, Codebook, Coding

pytestmark = pytest.mark.django_db
G = ["0f8fad5b-d9cb-469f-a165-70867728950e", "7c9e6679-7425-40de-944b-e07fc1f90ae7",
     "9b2d5b4e-0f4a-4c3e-8f1e-2b3c4d5e6f70"]
CYCLE = {"name": "Looped", "codes": [{"name": "A", "guid": G[0], "parent": G[1]},
                                     {"name": "B", "guid": G[1], "parent": G[0]},
                                     {"name": "C", "guid": G[2]}]}


def upload(data, name="codebook.json"):
    buffer = io.BytesIO(json.dumps(data).encode())
    buffer.name = name
    return buffer


def test_pure_flat_parents_nest_and_cycles_are_errors():
    tree = fmt.validate_tree({"name": "Flat", "codes": [{"name": "Dim", "codable": False},
                                                        {"name": "Child", "parent": "Dim"}]})
    assert [c["name"] for c in tree["codes"]] == ["Dim"] and tree["codes"][0]["children"][0]["name"] == "Child"
    with pytest.raises(fmt.CodebookFormatError, match=r"form a cycle \(A → B → A\)"):
        fmt.validate_tree(CYCLE)
    with pytest.raises(fmt.CodebookFormatError, match="the parent 'Nowhere' is not a code"):
        fmt.validate_tree({"name": "X", "codes": [{"name": "A", "parent": "Nowhere"}]})
    with pytest.raises(fmt.CodebookFormatError, match="cycle"):
        fmt.validate_tree({"name": "Self", "codes": [{"name": "A", "guid": G[0], "parent": G[0]}]})


def test_cycle_is_refused_by_api_and_page_and_nothing_is_saved(roles, api_for, client_for):
    study = roles["a"]
    before = (Codebook.objects.count(), Code.objects.count())
    response = api_for(roles["users"]["researcher"]).post(f"/api/studies/{study.pk}/codebooks/import/",
                                                          {"file": upload(CYCLE)}, format="multipart")
    assert response.status_code == 400 and "form a cycle" in json.dumps(response.json())
    page = client_for(roles["users"]["researcher"]).post(f"/studies/{study.pk}/coding/codebooks/new/",
                                                         {"action": "import", "file": upload(CYCLE)}, follow=True)
    assert "form a cycle" in page.content.decode()
    assert (Codebook.objects.count(), Code.objects.count()) == before
    flat = {"name": "Flat", "codes": [{"name": "Dim", "codable": False}, {"name": "Child", "parent": "Dim"}]}
    response = api_for(roles["users"]["researcher"]).post(f"/api/studies/{study.pk}/codebooks/import/",
                                                          {"file": upload(flat)}, format="multipart")
    assert response.status_code == 201
    assert Code.objects.get(codebook_id=response.json()["id"], name="Child").parent.name == "Dim"


def test_saving_the_same_coding_twice_keeps_one_row(roles, api_for, outputs_factory, small_codebook):
    study = roles["a"]
    cb, codes = small_codebook(study)
    out = outputs_factory(study, ["Ana leads the team."])[0]
    coder = roles["users"]["coder"]
    Assignment.objects.create(study=study, codebook=cb, output=out, coder=coder)
    first = services.create_coding(study=study, codebook=cb, output=out, code=codes["lead_f"], coder=coder,
                                   start=0, end=3)
    again = services.create_coding(study=study, codebook=cb, output=out, code=codes["lead_f"], coder=coder,
                                   start=0, end=3)
    assert again.pk == first.pk
    api = api_for(coder)
    body = {"codebook": cb.pk, "output": out.pk, "code": codes["lead_f"].pk, "start": 0, "end": 3}
    for _ in range(2):
        assert api.post(f"/api/studies/{study.pk}/codings/", body, format="json").status_code in (200, 201)
    assert Coding.objects.filter(code=codes["lead_f"], coder=coder).count() == 1
    other_span = services.create_coding(study=study, codebook=cb, output=out, code=codes["lead_f"], coder=coder,
                                        start=4, end=9)
    assert other_span.pk != first.pk and Coding.objects.count() == 2
