"""A questionnaire run's dry run shows its estimated tokens and cost, live and in batch mode, side by side (as the
generation run's and the judge round's do)."""

from decimal import Decimal

import pytest

from generation.runs.limits import estimate_tokens
from psychometrics import runs

from .helpers import load_library

pytestmark = pytest.mark.django_db


def test_plan_estimates_live_and_batch_cost_per_endpoint(study, make_endpoint, client, django_user_model):
    asi, _ = load_library()
    priced = make_endpoint(
        study,
        name="priced",
        model_id="p",
        default_params={"max_tokens": 5},
        input_price_per_mtok=2,
        output_price_per_mtok=8,
        batch_enabled=True,
    )
    unpriced = make_endpoint(study, name="unpriced", model_id="u")
    run = runs.create_run(study, name="Costs", instrument=asi, context_set=None, endpoints=[priced, unpriced])
    plan = runs.plan(run)
    rows = {r["endpoint"].name: r for r in plan["endpoint_rows"]}
    # every unit is rendered: the input estimate is the sum over the messages the run would send
    template = runs.template_for(run)
    points = list(range(int(asi.scale_min), int(asi.scale_max) + 1))
    labels = {int(k): v for k, v in (asi.scale_labels or {}).items()}
    expected_in = sum(
        estimate_tokens(m["content"])
        for item in asi.items.all()
        for m in runs.build_unit(run, template, item, runs.run_contexts(run)[0], "priced", 1, points, labels)[2]
    )
    p = rows["priced"]
    assert p["calls"] == 22 and p["input_tokens"] == expected_in and p["output_tokens"] == 22 * 5
    assert p["cost_usd"] == pytest.approx(Decimal(expected_in * 2 + 110 * 8) / Decimal(1e6), abs=Decimal("1e-6"))
    assert p["batch_allowed"] and p["batch_cost_usd"] == pytest.approx(p["cost_usd"] / 2, abs=Decimal("1e-6"))
    u = rows["unpriced"]
    assert u["cost_usd"] is None and u["batch_cost_usd"] is None and not u["batch_allowed"]
    assert plan["totals"]["priced"] is False and plan["totals"]["batch_priced"] is False


def test_draft_run_page_shows_both_costs(roles, make_endpoint, client_for):
    study = roles["a"]
    asi, _ = load_library()
    endpoint = make_endpoint(study, name="ep", model_id="m", input_price_per_mtok=1, output_price_per_mtok=1)
    run = runs.create_run(study, name="Draft", instrument=asi, context_set=None, endpoints=[endpoint])
    plan = runs.plan(run)
    page = client_for(roles["users"]["coder"]).get(f"/studies/{study.pk}/questionnaires/runs/{run.pk}/")
    assert page.status_code == 200
    html = page.content.decode()
    assert 'id="plan-live-cost"' in html and f"${plan['totals']['cost_usd']:.4f}" in html
    assert "needs every endpoint to allow batch mode" in html  # this endpoint does not allow it
