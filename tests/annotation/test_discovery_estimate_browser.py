"""The code-discovery cost estimate in the browser: a researcher picks two models, asks for the estimate, reads the
table (one row per model, live and batch prices) with the form keeping its values, and nothing is started. The page
with the estimate (only reachable by posting the form, so outside the axe walk) has no serious axe violations."""

from decimal import Decimal

import pytest

from annotation import services
from annotation.models import CodeDiscovery
from tests.a11y.axe import blocking_violations, describe, install_axe

from .test_discovery import discovery_env  # noqa: F401
from .test_discovery_jobs import _batch_endpoints

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_researcher_estimates_a_discovery_before_starting_it(page, login, discovery_env, make_endpoint):  # noqa: F811
    e = discovery_env
    endpoints = _batch_endpoints(e, make_endpoint)
    install_axe(page.context)
    login("researcher")
    page.goto(f"/studies/{e['study'].pk}/coding/codebooks/{e['cb'].pk}/discover/")
    page.select_option("select[name=endpoints]", [str(x.pk) for x in endpoints])
    page.select_option("select[name=item]", str(e["item"].pk))
    page.fill("input[name=sample_size]", "3")
    page.fill("input[name=story_groups]", "2")
    page.fill("input[name=seed]", "5")
    page.click("button[value=estimate]")
    table = page.locator("#discovery-estimate")
    table.wait_for()
    expected = services.estimate_discovery(
        e["study"], e["cb"], endpoints=endpoints, item=e["item"], sample_size=3, seed=5, story_groups=2
    )
    rows = table.locator("tbody tr")
    shown = {cells[0]: cells for cells in (rows.nth(i).locator("td").all_inner_texts() for i in range(rows.count()))}
    assert sorted(shown) == sorted(x.name for x in endpoints)
    for row in expected["endpoints"]:
        cells = shown[row["endpoint"]]
        assert cells[1:4] == ["2", str(row["input_tokens"]), str(row["output_tokens"])]
        assert cells[4:] == [f"${row['cost_usd']}", f"${row['batch_cost_usd']}"]
        assert Decimal(row["batch_cost_usd"]) * 2 == Decimal(row["cost_usd"])
    assert f"${expected['cost_usd']}" in table.locator("tfoot").inner_text()
    assert page.input_value("input[name=sample_size]") == "3" and page.input_value("input[name=seed]") == "5"
    assert sorted(page.eval_on_selector_all("select[name=endpoints] option:checked", "os => os.map(o => o.value)")) == (
        sorted(str(x.pk) for x in endpoints)
    )
    assert CodeDiscovery.objects.count() == 0, "an estimate starts nothing"
    violations = blocking_violations(page)
    assert not violations, describe(violations)
