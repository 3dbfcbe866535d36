"""Runs list and Coding page counts stay right when a run has several endpoints and a codebook several codings."""

import re

import pytest

from tests.annotation.conftest import outputs_factory, small_codebook  # noqa: F401 (fixtures)
from tests.generation.runs.conftest import make_endpoint, make_toolkit  # noqa: F401 (fixtures)

from .edge_helpers import code_outputs, run_with_endpoints


def _row_cells(html, row_marker):
    row = next(r for r in re.findall(r"<tr>.*?</tr>", html, re.S) if row_marker in r)
    return [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r"<td[^>]*>(.*?)</td>", row, re.S)]


@pytest.mark.django_db
def test_runs_list_counts_units_once_with_five_endpoints(roles, client_for, make_toolkit, make_endpoint):
    study = roles["a"]
    toolkit = make_toolkit(study, n_items=4)
    endpoints = [make_endpoint(study) for _ in range(5)]
    run_with_endpoints(study, toolkit, endpoints, done_per_endpoint=3)
    html = client_for(roles["users"]["coder"]).get(f"/studies/{study.pk}/runs/").content.decode()
    cells = _row_cells(html, "Multi-endpoint run")
    # Endpoints, Trials, Status, Done, Failed, Units
    assert cells[2:8] == ["5", "1", "Completed", "15", "5", "20"]


@pytest.mark.django_db
def test_coding_page_counts_codes_once_with_many_codings(roles, client_for, outputs_factory, small_codebook):
    study = roles["a"]
    codebook, codes = small_codebook(study)
    outputs = outputs_factory(study, ["One story here.", "Another story.", "A third story."])
    code_outputs(
        study, codebook, [codes["lead_m"], codes["care_f"], codes["care_m"]], outputs, roles["users"]["researcher"]
    )
    html = client_for(roles["users"]["researcher"]).get(f"/studies/{study.pk}/coding/").content.decode()
    cells = _row_cells(html, codebook.name)
    assert cells[1:3] == ["4", "9"]  # four codable codes, nine codings
