"""The Recipe page in a browser: upload shows the plan first (nothing written), confirm applies; no serious or
critical axe violations on the page with a plan shown."""

import pytest
import yaml

from tests.a11y.axe import blocking_violations, describe

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_admin_uploads_sees_the_plan_and_applies(roles, recipe, page, login, tmp_path):
    from generation.models import GenerationRun

    study = roles["a"]
    file = tmp_path / "study.yaml"
    file.write_text(yaml.safe_dump(recipe, allow_unicode=True), encoding="utf-8")
    login("admin")
    page.goto(f"/studies/{study.pk}/")
    page.click("nav.sidebar a:has-text('Recipe')")
    page.wait_for_selector("h1:has-text('Recipe')")
    page.set_input_files("#recipe-file", str(file))
    page.click("text=Show the plan")
    page.wait_for_selector("caption:has-text('Jobs')")
    assert page.locator("td:has-text('Stories')").count() >= 1
    assert not GenerationRun.objects.filter(study=study).exists()  # only planned
    violations = blocking_violations(page)
    assert not violations, describe(violations)
    page.click("text=Apply this recipe")
    page.wait_for_selector("h1:has-text('Recipe applied')")
    assert page.locator("p.lead").inner_text().startswith("5 created")
    assert GenerationRun.objects.get(study=study).name == "Stories"


def test_gallery_to_plan_then_apply_then_result_page(roles, page, login):
    """Start from a published study: the regard recipe from the gallery, its plan, apply, what was created with
    links, and the next step leads to the first run's plan."""
    from generation.models import GenerationRun
    from tests.generation.runs.conftest import approved_connection

    study = roles["a"]
    approved_connection("openai", name="OpenAI")
    login("admin")
    page.goto(f"/studies/{study.pk}/recipe/")
    gallery = page.locator("section[aria-labelledby=gallery-heading]")
    for word in ("Fang", "Jung", "R.U.Psycho", "Wan", "regard"):
        assert word in gallery.inner_text()
    assert gallery.locator("li").count() == 5
    gallery.locator("li:has-text('German regard') >> text=See the plan").click()
    page.wait_for_selector("h2:has-text('Plan: German regard')")
    assert page.locator("td:has-text('Completions')").count() >= 1
    # model-a and judge-a have no prices: the cost is unknown, not $0
    assert "Known cost: unknown, no prices set for judge-a, model-a" in page.locator("#plan-cost").inner_text()
    # 20 prompts × 50 samples, and one judge call per batch of 5 completions
    assert "1,200 new call(s)" in page.locator("#plan-calls").inner_text()
    assert not GenerationRun.objects.filter(study=study).exists()  # only planned
    violations = blocking_violations(page)
    assert not violations, describe(violations)
    page.click("text=Apply this recipe")
    page.wait_for_selector("h1:has-text('Recipe applied')")
    assert "German regard" in page.locator("p.lead").inner_text()
    run = GenerationRun.objects.get(study=study, name="Completions")
    assert page.locator(f"a[href='/studies/{study.pk}/runs/{run.pk}/']").inner_text() == "Completions"
    assert page.locator("td a:has-text('model-a')").count() == 1 and page.locator("td a:has-text('judge-a')").count()
    assert page.locator("text=Invite coders").count() == 1
    violations = blocking_violations(page)
    assert not violations, describe(violations)
    page.click("text=Start the first run")
    page.wait_for_url(f"**/studies/{study.pk}/runs/{run.pk}/plan/")
    # applying the same recipe again plans no new calls and says so
    page.goto(f"/studies/{study.pk}/recipe/?builtin=regard")
    page.wait_for_selector("#plan-calls")
    assert "Nothing changed: applying this recipe makes no new calls." in page.locator("#plan-calls").inner_text()
    assert page.locator("#plan-cost").inner_text() == "Known cost: $0"
