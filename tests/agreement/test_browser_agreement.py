"""Must show: the agreement report fits a 1,400 px window (no horizontal overflow) and says each note once."""

import pytest

from tests.agreement.conftest import clear_report_cache, coded_study, fast_password_hasher  # noqa: F401

from .test_agreement_notes import add_unused_codes

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

WIDTHS_JS = """() => {
  const main = document.querySelector('main').getBoundingClientRect();
  const tables = Array.from(document.querySelectorAll('.agreement table'))
    .map(t => [t.id, Math.round(t.getBoundingClientRect().right)]);
  return {page: document.documentElement.scrollWidth, viewport: window.innerWidth,
          mainRight: Math.round(main.right), tables: tables,
          scrolled: Array.from(document.querySelectorAll('.table-wrap')).filter(w => w.scrollWidth > w.clientWidth + 1)
            .map(w => w.querySelector('table').id)};
}"""


def test_agreement_report_fits_1400px(coded_study, page, login):  # noqa: F811
    ns = coded_study
    codes = add_unused_codes(ns, 30)
    for code in codes[:5]:
        code.name = "Women described as nurturing caregivers who put their families first " + code.name
        code.save()
    page.set_viewport_size({"width": 1400, "height": 900})
    login("researcher")
    page.goto(f"/studies/{ns.study.pk}/agreement/")
    page.wait_for_selector("#code-agreement")
    sizes = page.evaluate(WIDTHS_JS)
    assert sizes["page"] <= sizes["viewport"], sizes
    assert all(right <= sizes["mainRight"] for _, right in sizes["tables"]), sizes
    assert sizes["scrolled"] == [], sizes  # the tables fit without scrolling inside their wrapper
    notes = page.locator("#code-agreement-notes dd.note-text").all_inner_texts()
    assert len(notes) == len(set(notes)) and any("undefined" in n for n in notes)
    height = page.evaluate("document.documentElement.scrollHeight")
    assert height < 6000, height
