"""Must show in Chromium: runs list and codebook counts, imported weights on the new version, /api/docs/ offline."""

import re

import pytest

from tests.annotation.conftest import outputs_factory, small_codebook  # noqa: F401 (fixtures)
from tests.generation.runs.conftest import make_endpoint, make_toolkit  # noqa: F401 (fixtures)
from tests.generation.toolkits.test_weights_visible import WEIGHTS

from .edge_helpers import code_outputs, run_with_endpoints

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_runs_list_and_codebook_counts(
    page, login, roles, make_toolkit, make_endpoint, outputs_factory, small_codebook
):
    study = roles["a"]
    toolkit = make_toolkit(study, n_items=4)
    run_with_endpoints(study, toolkit, [make_endpoint(study) for _ in range(5)], done_per_endpoint=3)
    codebook, codes = small_codebook(study)
    outputs = outputs_factory(study, ["One story.", "Two stories.", "Three stories."])
    code_outputs(
        study, codebook, [codes["lead_m"], codes["care_f"], codes["care_m"]], outputs, roles["users"]["researcher"]
    )
    login("researcher")
    page.goto(f"/studies/{study.pk}/")
    page.click("nav.sidebar a:has-text('Runs')")
    page.wait_for_url(f"**/studies/{study.pk}/runs/")  # all_inner_texts does not wait for the new page
    row = page.locator("#runs tr:has-text('Multi-endpoint run') td")
    row.first.wait_for()
    assert row.all_inner_texts()[2:8] == ["5", "1", "Completed", "15", "5", "20"]
    page.click("nav.sidebar a:has-text('Coding')")
    page.wait_for_url(f"**/studies/{study.pk}/coding/")
    cells = page.locator(f"tr:has-text('{codebook.name}') td")
    cells.first.wait_for()
    assert cells.all_inner_texts()[1:3] == ["4", "9"]


def test_imported_weights_shown_on_new_version(page, login, roles, make_toolkit, tmp_path):
    study = roles["a"]
    toolkit = make_toolkit(study, n_items=3)
    weights_file = tmp_path / "weights.csv"
    weights_file.write_text(WEIGHTS)
    login("researcher")
    page.goto(f"/studies/{study.pk}/judging/weights/")
    page.select_option("select[name=toolkit]", str(toolkit.pk))
    page.set_input_files("input[name=file]", str(weights_file))
    page.click("button:has-text('Import')")
    page.wait_for_selector("#items-table")
    assert re.search(rf"/studies/{study.pk}/toolkits/\d+/$", page.url)
    assert f"{toolkit.name}" in page.locator("h1").inner_text() and "v2" in page.content()
    header = page.locator("#items-table thead").inner_text()
    assert "Detection weight" in header
    cells = page.locator("#items-table td.extra-cell").all_inner_texts()
    assert cells[0].startswith("0.125") and cells[2].startswith("0.375") and "weak" in cells[2]
    # a second submit of the same file creates nothing and points to the version
    page.goto(f"/studies/{study.pk}/judging/weights/")
    page.select_option("select[name=toolkit]", str(toolkit.pk))
    page.set_input_files("input[name=file]", str(weights_file))
    page.click("button:has-text('Import')")
    page.wait_for_selector("text=already imported into")
    assert page.locator(f"a:has-text('Open {toolkit.name} v2')").count() == 1


def test_api_docs_render_offline(page, login, roles, live_server):
    external = []

    def only_local(route):
        host = re.match(r"https?://([^/:]+)", route.request.url)
        if host and host.group(1) in ("127.0.0.1", "localhost"):
            return route.continue_()
        external.append(route.request.url)
        return route.abort()

    page.context.route("**/*", only_local)
    login("coder")
    page.goto("/api/docs/")
    page.wait_for_selector(".swagger-ui .info .title")
    assert "Stereoscope API" in page.locator(".swagger-ui .info .title").inner_text()
    page.wait_for_selector(".opblock-tag")
    assert page.locator(".opblock").count() >= 5
    assert external == []
