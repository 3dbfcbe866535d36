"""The Report page in a browser: toggle a section (saved with the study), download the HTML report and open the
download from file:// with the network blocked: it shows its tables and its SVG figures. axe on the page and on
the downloaded report: no serious or critical violations. Make PDF: an export job, downloaded from the Exports
page."""

import pytest

from tests.a11y.axe import blocking_violations, describe
from tests.reports.test_pdf import _weasyprint_or_skip

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_report_page_toggle_download_and_offline_figures(run_builtin, page, login, browser, tmp_path):
    from django.contrib.auth import get_user_model

    from reports.services import chosen_sections
    from stereoscope.services import add_member
    from tests.conftest import PASSWORD

    study = run_builtin("wan2023-letters")
    get_user_model().objects.create_user("reader", password=PASSWORD)
    add_member(study=study, username="reader", role="researcher", actor=None)
    login("reader")
    page.goto(f"/studies/{study.pk}/")
    page.click("nav.sidebar a:has-text('Report')")
    page.wait_for_selector("h1:has-text('Study report')")
    assert page.locator("#section-contrasts svg[role=img]").count() >= 1
    assert page.locator("#section-classifiers").count() == 1
    violations = blocking_violations(page)
    assert not violations, describe(violations)

    page.uncheck("input[name=sections][value=classifiers]")
    page.click("text=Save the sections")
    page.wait_for_selector("text=The report's sections are saved with the study.")
    assert page.locator("#section-classifiers").count() == 0
    assert "classifiers" not in chosen_sections(study) and "contrasts" in chosen_sections(study)

    with page.expect_download() as info:
        page.click("text=HTML (one file)")
    saved = tmp_path / "report.html"
    info.value.save_as(saved)

    offline = browser.new_context(offline=True)
    requests = []
    offline.route(
        "**/*",
        lambda route: (
            requests.append(route.request.url),
            route.continue_() if route.request.url.startswith("file:") else route.abort(),
        ),
    )
    try:
        report = offline.new_page()
        report.goto(saved.as_uri())
        report.wait_for_selector("h2:has-text('Results: contrasts')")
        assert report.locator("#section-classifiers").count() == 0
        figures = report.locator("figure svg[role=img]")
        assert figures.count() >= 1
        assert "Odds ratios" in figures.first.locator("title").text_content()
        assert figures.first.bounding_box()["width"] > 100  # drawn, not an empty box
        assert report.locator("table caption:has-text('Odds ratios and Welch t')").count() >= 1
        assert all(url.startswith("file:") for url in requests), requests
        violations = blocking_violations(report)
        assert not violations, describe(violations)
    finally:
        offline.close()


def test_make_pdf_then_download_it_from_the_exports_page(roles, page, login, tmp_path):
    """A PDF is an export job: Make PDF lands on the Exports page, whose table offers the file once it is made."""
    _weasyprint_or_skip()
    study = roles["a"]
    login("researcher")
    page.goto(f"/studies/{study.pk}/report/")
    page.click("button:has-text('Make PDF')")
    page.wait_for_selector("text=The PDF is being made in the background")
    row = page.locator("tr.export-job:has-text('Study report (PDF)')")
    row.locator("a:has-text('Download')").wait_for(timeout=120_000)  # a worker may still be laying it out
    with page.expect_download() as info:
        row.locator("a:has-text('Download')").click()
    pdf = tmp_path / "report.pdf"
    info.value.save_as(pdf)
    assert info.value.suggested_filename.endswith(".pdf") and pdf.read_bytes().startswith(b"%PDF")
