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
    page.wait_for_selector("text=Recipe applied: 5 change(s).")
    assert GenerationRun.objects.get(study=study).name == "Stories"
