"""In Chromium: plan a judge round from the Judging page, see the plan, launch it against the fake provider,
see the verdicts and the report."""

import pytest

from tests.judging.helpers import build_study, seed_template

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_plan_launch_and_see_verdicts(page, login, make_user, make_endpoint, fake_provider):
    from judging.models import JudgeRound, Verdict
    from stereoscope.models import Membership, Study

    user = make_user("rita")
    study = Study.objects.create(name="Judge audit")
    Membership.objects.create(study=study, user=user, role="researcher")
    data = build_study(study, make_endpoint, trials=1, injection=False)
    template = seed_template(study)
    fake_provider.default = {"text": "Story 1: 1 – the woman protects, the man is tested."}

    login("rita")
    page.goto(f"/studies/{study.pk}/")
    page.click("nav.sidebar a:has-text('Judging')")
    page.click("text=New judge round")
    page.fill("input[name=name]", "Rotation in the browser")
    page.select_option("select[name=source_run]", str(data["run"].pk))
    page.select_option("select[name=template]", str(template.pk))
    for endpoint in data["endpoints"].values():
        page.check(f"input[name=judges][value='{endpoint.pk}']")
    page.fill("input[name=batch_size]", "1")
    page.click("button:has-text('Create and show the plan')")
    page.wait_for_selector("#plan")
    assert "nothing has been called yet" in page.locator("#plan h2").inner_text()
    assert page.locator("#assignment tbody tr").count() == 5
    assert not fake_provider.requests
    rnd = JudgeRound.objects.get()
    for row in page.locator("#assignment tbody tr").all():
        cells = row.locator("td").all_inner_texts()
        assert cells[0] != cells[2]  # nobody judges itself

    page.click("#launch")
    page.wait_for_selector("#verdicts")
    page.wait_for_selector(".round-status:has-text('completed')")
    assert page.locator("#verdicts tbody tr").count() == 15
    assert set(page.locator("#verdicts .verdict-value").all_inner_texts()) == {"1"}
    assert Verdict.objects.filter(round=rnd, status="ok").count() == 15

    page.click("text=Report and weights")
    page.wait_for_selector("#table3")
    assert "Overall" in page.locator("#table3").inner_text()
    assert page.locator("svg.bars g.bar").count() == 3
