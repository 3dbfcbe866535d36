"""The agreement pages in Chromium: sidebar → report → code table → htmx gold value and confusion table."""

import pytest


@pytest.mark.browser
@pytest.mark.django_db(transaction=True)
def test_report_drilldown_and_adjudication_in_browser(coded_study, page, login):
    from agreement.models import GoldLabel

    ns = coded_study
    login("researcher")
    page.goto(f"/studies/{ns.study.pk}/")
    page.click("nav.sidebar >> text=Agreement")
    page.wait_for_selector("#code-agreement")
    assert page.locator("#code-agreement tbody tr").count() == 2
    page.click("#code-agreement >> text=M charisma in leadership")
    page.wait_for_selector("#disagreements")
    assert "Disagreements (4)" in page.content()
    row = page.locator(f'#disagreements tr[data-output="{ns.outputs[10].pk}"]')
    url_before = page.url
    row.locator('button[value="1"]').click()
    row.locator("button.current").wait_for()
    assert page.url == url_before  # swapped in place, no reload
    assert GoldLabel.objects.get().value == 1
    # after a reload gold is a rater of the table; choose it for the confusion table: htmx replaces the table
    page.reload()
    assert "gold" in page.locator("#pairs").inner_text()
    page.select_option('#confusion-form select[name="a"]', f"coder:{ns.coders['bob'].pk}")
    page.select_option('#confusion-form select[name="b"]', "gold")
    page.wait_for_function("document.querySelector('#confusion-table caption').textContent.includes('gold')")
    assert "bob (rows) × gold (columns), 1 stories" in page.locator("#confusion-table caption").inner_text()
