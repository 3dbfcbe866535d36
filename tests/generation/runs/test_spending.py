"""Spending caps with a ledger: a job pauses before the call that would cross a cap (it waits, it does not fail), the
ledger equals the sum of the attempt rows' costs, and raising the cap lets the job finish by itself. Live and batch."""

from decimal import Decimal

import pytest
from django.db.models import Sum

from generation.models import Output, ProviderCall, SpendingLedger
from generation.runs import batches, spending
from generation.runs import services as runs
from stereoscope import jobs

pytestmark = pytest.mark.django_db
PRICES = {"input_price_per_mtok": 1000, "output_price_per_mtok": 1000}  # $0.001 a token: costs show at once


def ledger(study):
    totals = SpendingLedger.objects.filter(study=study).aggregate(
        cost=Sum("cost_usd"), reserved=Sum("reserved_usd"), calls=Sum("calls")
    )
    return totals["cost"] or Decimal(0), totals["reserved"] or Decimal(0), totals["calls"] or 0


def attempt_costs(study):
    return ProviderCall.objects.filter(study=study).aggregate(c=Sum("cost_usd"))["c"] or Decimal(0)


def one_call_estimate(run, fake_provider=None):
    """The estimated cost of the run's first call; with `fake_provider`, every answer then uses exactly the
    estimated tokens, so real costs equal estimates and the cap's arithmetic is exact."""
    unit = runs.RUN_JOB.load_units(run, runs.RUN_JOB.pending_keys(run)[:1])[0]
    from generation.runs.limits import estimate_call
    from generation.runs.runner import cost_of

    tokens_in, tokens_out = estimate_call(unit.messages, unit.params)
    if fake_provider is not None:
        fake_provider.script([{"usage": {"input": tokens_in, "output": tokens_out}}] * 50)
    return cost_of(unit.endpoint, tokens_in, tokens_out)


def test_live_run_pauses_before_the_cap_and_finishes_when_it_is_raised(
    roles, make_endpoint, make_toolkit, fake_provider, django_capture_on_commit_callbacks
):
    study, admin = roles["a"], roles["users"]["admin"]
    endpoint = make_endpoint(study, max_attempts=1, max_concurrency=4, default_params={"max_tokens": 40}, **PRICES)
    run = runs.create_run(study, name="capped", toolkit=make_toolkit(study, 10), endpoints=[endpoint])
    runs.materialize(run)
    estimate = one_call_estimate(run, fake_provider)
    cap = (estimate * Decimal("4.5")).quantize(Decimal("0.01"))  # room for four calls' estimates, not five
    spending.set_study_cap(study, cap, actor=admin)
    runs.start(run, admin)
    run.refresh_from_db()
    assert run.status == "waiting", run.message
    assert "spending cap" in run.message and "A study admin can raise it" in run.message
    done = Output.objects.filter(run=run, status="done").count()
    assert done == 4 and not Output.objects.filter(run=run, status="failed").exists()
    cost, reserved, calls = ledger(study)
    assert cost == attempt_costs(study) and reserved == 0 and calls == ProviderCall.objects.count() == done
    assert cost <= cap  # no call crossed it
    assert cost + estimate > cap  # and the next one would have
    assert len(fake_provider.requests) == done
    assert jobs.wake_waiting() == []  # the cap still holds it
    page = spending.study_spending(study)
    assert page["total_usd"] == cost and page["remaining_usd"] == cap - cost
    with django_capture_on_commit_callbacks(execute=True):
        spending.set_study_cap(study, cap * 10, actor=admin)
    run.refresh_from_db()
    assert run.status == "completed", run.message
    assert Output.objects.filter(run=run, status="done").count() == 10
    cost, reserved, calls = ledger(study)
    assert cost == attempt_costs(study) and calls == 10 and reserved == 0
    assert ProviderCall.objects.filter(study=study).count() == 10


def test_a_connection_monthly_cap_holds_every_study(roles, make_endpoint, make_toolkit, fake_provider):
    study = roles["a"]
    endpoint = make_endpoint(study, max_attempts=1, max_concurrency=2, default_params={"max_tokens": 40}, **PRICES)
    run = runs.create_run(study, name="r", toolkit=make_toolkit(study, 6), endpoints=[endpoint])
    runs.materialize(run)
    connection = endpoint.connection
    # answers use exactly the estimated tokens: real costs equal estimates, so exactly two calls fit whatever the
    # order the concurrent calls finish in
    connection.monthly_cap_usd = (one_call_estimate(run, fake_provider) * Decimal("2.5")).quantize(Decimal("0.01"))
    connection.save()
    runs.start(run)
    run.refresh_from_db()
    assert run.status == "waiting" and "monthly cap" in run.message and "Site staff can raise it" in run.message
    assert Output.objects.filter(run=run, status="done").count() == 2
    assert ledger(study)[0] <= connection.monthly_cap_usd


def test_a_cap_without_prices_waits_with_the_reason(roles, make_endpoint, make_toolkit, fake_provider):
    study, admin = roles["a"], roles["users"]["admin"]
    endpoint = make_endpoint(study, max_attempts=1)
    spending.set_study_cap(study, "5", actor=admin)
    run = runs.create_run(study, name="r", toolkit=make_toolkit(study, 2), endpoints=[endpoint])
    runs.start(run)
    run.refresh_from_db()
    assert run.status == "waiting" and "has no prices" in run.message and fake_provider.requests == []


def test_only_study_admins_set_the_cap_within_the_staff_limit(roles, api_for, settings):
    study = roles["a"]
    url = f"/api/studies/{study.pk}/spending/"
    assert api_for(roles["users"]["researcher"]).post(url, {"cap_usd": "10"}, format="json").status_code == 403
    assert api_for(roles["users"]["coder"]).get(url).status_code == 403
    admin = api_for(roles["users"]["admin"])
    response = admin.post(url, {"cap_usd": "12.50"}, format="json")
    assert response.status_code == 200 and response.json()["cap_usd"] == "12.50"
    assert admin.post(url, {"cap_usd": "lots"}, format="json").status_code == 400
    assert admin.post(url, {"cap_usd": "NaN"}, format="json").status_code == 400
    settings.STUDY_SPENDING_CAP_LIMIT_USD = "100"
    refused = admin.post(url, {"cap_usd": "500"}, format="json")
    assert refused.status_code == 400 and "at most $100.00" in refused.json()["detail"]
    assert admin.post(url, {"cap_limit_usd": "1000"}, format="json").status_code == 403  # staff only
    staff = api_for(roles["users"]["staff"])
    assert staff.post(url, {"cap_limit_usd": "1000"}, format="json").status_code == 200
    assert admin.post(url, {"cap_usd": "500"}, format="json").json()["cap_usd"] == "500.00"


def test_batch_run_reserves_pauses_and_finishes(
    roles, make_endpoint, make_toolkit, fake_provider, settings, django_capture_on_commit_callbacks
):
    study, admin = roles["a"], roles["users"]["admin"]
    settings.BATCH_MAX_REQUESTS = 2
    endpoint = make_endpoint(
        study, "openai", batch_enabled=True, max_attempts=1, default_params={"max_tokens": 40}, **PRICES
    )
    run = runs.create_run(study, name="b", toolkit=make_toolkit(study, 6), endpoints=[endpoint], execution_mode="batch")
    runs.materialize(run)
    unit = runs.RUN_JOB.load_units(run, runs.RUN_JOB.pending_keys(run)[:1])[0]
    from generation.runs.limits import estimate_call

    per_call = batches.batch_cost_of(endpoint, *estimate_call(unit.messages, unit.params))
    cap = (per_call * Decimal("4.5")).quantize(Decimal("0.01"))  # two batches of two fit, the third does not
    spending.set_study_cap(study, cap, actor=admin)
    runs.start(run, admin)
    run.refresh_from_db()
    assert run.status == "waiting" and "spending cap" in run.message, run.message
    submitted = list(batches.job_batches("generation.run", run.pk))
    assert len(submitted) == 2 and sum(b.request_count for b in submitted) == 4
    cost, reserved, _ = ledger(study)
    assert cost == 0 and reserved == sum(b.estimated_cost_usd for b in submitted) and reserved <= cap
    batches.poll_open_batches()
    batches.poll_open_batches()
    run.refresh_from_db()
    assert run.status == "waiting"  # the answers came; the last two units still wait for money
    cost, reserved, calls = ledger(study)
    assert reserved == 0 and cost == attempt_costs(study) and calls == 4
    with django_capture_on_commit_callbacks(execute=True):
        spending.set_study_cap(study, cap * 10, actor=admin)
    for _ in range(3):
        batches.poll_open_batches()
    run.refresh_from_db()
    assert run.status == "completed", run.message
    assert Output.objects.filter(run=run, status="done").count() == 6
    cost, reserved, calls = ledger(study)
    assert reserved == 0 and calls == 6 and cost == attempt_costs(study)


def test_the_dry_run_plan_shows_the_cost_against_the_remaining_budget(
    roles, api_for, make_endpoint, make_toolkit, client_for
):
    study, admin = roles["a"], roles["users"]["admin"]
    endpoint = make_endpoint(study, default_params={"max_tokens": 40}, **PRICES)
    run = runs.create_run(study, name="r", toolkit=make_toolkit(study, 10), endpoints=[endpoint])
    spending.set_study_cap(study, "0.10", actor=admin)
    plan = api_for(roles["users"]["researcher"]).get(f"/api/studies/{study.pk}/runs/{run.pk}/plan/").json()
    assert plan["totals"]["budget_remaining_usd"] == "0.10"
    assert any("more than the study's remaining budget ($0.10)" in p for p in plan["problems"])
    page = client_for(roles["users"]["researcher"]).get(f"/studies/{study.pk}/runs/{run.pk}/plan/").content.decode()
    assert "$0.10" in page and "left in the study's budget" in page


def _counted(value):
    return value if type(value) is int and 0 <= value <= 10**9 else None


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
@pytest.mark.parametrize(
    "usage", [{"input": -1_000_000, "output": 5}, {"input": "lots", "output": 10**12}, {"input": 2.5, "output": True}]
)
def test_reported_usage_that_is_no_token_count_is_charged_at_the_estimate(
    roles, make_endpoint, make_toolkit, fake_provider, provider, usage
):
    """A provider's usage figures are untrusted. A negative count lowered the ledger and so opened the caps; a
    string or a count beyond the column broke the cost arithmetic or the attempt row. A count that is not a whole
    number from 0 to 10^9 is unknown: the attempt row keeps no figure for it, and the call is charged the
    estimate for it, so the ledger still equals the attempt rows' costs."""
    from generation.runs.limits import estimate_call
    from generation.runs.runner import cost_of

    study = roles["a"]
    endpoint = make_endpoint(study, provider, max_attempts=1, default_params={"max_tokens": 40}, **PRICES)
    run = runs.create_run(study, name="r", toolkit=make_toolkit(study, 1), endpoints=[endpoint])
    runs.materialize(run)
    unit = runs.RUN_JOB.load_units(run, runs.RUN_JOB.pending_keys(run))[0]
    est_in, est_out = estimate_call(unit.messages, unit.params)
    fake_provider.script([{"usage": usage}])
    runs.start(run)
    run.refresh_from_db()
    assert run.status == "completed", run.message
    call = ProviderCall.objects.get(study=study)
    reported_in, reported_out = _counted(usage["input"]), _counted(usage["output"])
    assert call.ok and (call.input_tokens, call.output_tokens) == (reported_in, reported_out)
    expected = cost_of(
        endpoint,
        est_in if reported_in is None else reported_in,
        est_out if reported_out is None else reported_out,
    )
    assert call.cost_usd == expected and expected > 0
    cost, reserved, calls = ledger(study)
    assert (cost, reserved, calls) == (expected, 0, 1)


def test_a_batch_result_with_unbelievable_usage_is_charged_at_the_estimate(
    roles, make_endpoint, make_toolkit, fake_provider
):
    """The same rule for batch results: a negative or huge count is unknown, and charged at the estimate."""
    from generation.runs.limits import estimate_call

    study = roles["a"]
    endpoint = make_endpoint(
        study, "openai", batch_enabled=True, max_attempts=1, default_params={"max_tokens": 40}, **PRICES
    )
    run = runs.create_run(study, name="b", toolkit=make_toolkit(study, 1), endpoints=[endpoint], execution_mode="batch")
    runs.materialize(run)
    unit = runs.RUN_JOB.load_units(run, runs.RUN_JOB.pending_keys(run))[0]
    expected = batches.batch_cost_of(endpoint, *estimate_call(unit.messages, unit.params))
    fake_provider.script([{"usage": {"input": -5, "output": 10**12}}])
    runs.start(run)
    for _ in range(3):
        batches.poll_open_batches()
    run.refresh_from_db()
    assert run.status == "completed", run.message
    call = ProviderCall.objects.get(study=study)
    assert call.ok and (call.input_tokens, call.output_tokens) == (None, None)
    assert call.cost_usd == expected and expected > 0
    cost, reserved, calls = ledger(study)
    assert (cost, reserved, calls) == (expected, 0, 1)
