"""Creating a sampled assignment through the page in Chromium: choose coders, a run and N, preview the plan (the
sample per model × prompt stratum), then create exactly what was previewed."""

import pytest
from django.urls import reverse

from annotation.models import Assignment, AssignmentPlan
from tests.a11y.axe import blocking_violations, describe
from tests.annotation.test_sampling import sampled  # noqa: F401  (the fixture)

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_researcher_previews_and_creates_a_sampled_assignment(page, login, sampled):  # noqa: F811
    s = sampled
    login("researcher")
    page.goto(reverse("annotation-assignments", args=[s["study"].pk, s["cb"].pk]))
    for name in ("coder", "coder2", "coder3"):
        page.get_by_label(name, exact=True).check()
    page.select_option("select[name=runs]", label="Run 1")
    page.get_by_label("Sample of N stories").fill("9")
    page.get_by_label("Overlap k (coders per story)").fill("2")
    page.select_option("select[name=strategy]", "stratified")
    page.get_by_label("Seed").fill("3")
    page.click("button:has-text('Preview plan')")
    page.wait_for_selector("#plan-preview")
    assert Assignment.objects.count() == 0  # the preview creates nothing
    summary = page.locator("#plan-summary").inner_text()
    assert "9 of 20 stories from Run 1: a sample of 9, stratified by model × prompt, seed 3." in summary
    assert "18 new assignments to 3 coders" in summary
    strata = [r.split("\t") for r in page.locator("#plan-strata tbody tr").all_inner_texts()]
    assert strata == [
        ["model-a", "1", "8", "3"],
        ["model-a", "2", "4", "2"],
        ["model-b", "1", "6", "3"],
        ["model-b", "2", "2", "1"],
    ]
    violations = blocking_violations(page)  # the plan's tables and form: no serious or critical axe violation
    assert not violations, describe(violations)
    # the form keeps what was chosen under the preview
    assert page.get_by_label("Sample of N stories").input_value() == "9"
    assert page.get_by_label("coder2", exact=True).is_checked()
    page.click("#plan-create button:has-text('Create these 18 assignments')")
    page.wait_for_selector("text=18 assignments created (9 stories).")
    assert Assignment.objects.filter(mode="blind").count() == 18
    assert len(set(Assignment.objects.values_list("output_id", flat=True))) == 9
    plan = AssignmentPlan.objects.get()
    assert (plan.sample_size, plan.seed, plan.strategy) == (9, 3, "stratified")
    progress = [
        r.split("\t") for r in page.locator("section:has(h2:text('Progress per coder')) tbody tr").all_inner_texts()
    ]
    assert [(r[0], r[2]) for r in progress] == [("coder", "6"), ("coder2", "6"), ("coder3", "6")]  # balanced load

    # too many stories: a clear message, nothing more saved
    page.get_by_label("Sample of N stories").fill("50")
    page.select_option("select[name=runs]", label="Run 1")
    for name in ("coder", "coder2"):
        page.get_by_label(name, exact=True).check()
    page.click("button:has-text('Preview plan')")
    page.wait_for_selector("text=A sample of 50 stories needs at least 50 finished stories; the chosen runs have 20.")
    assert Assignment.objects.count() == 18 and AssignmentPlan.objects.count() == 1
