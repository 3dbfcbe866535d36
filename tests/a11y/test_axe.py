"""axe-core over every study page, as coder, researcher and admin, with data in the study: no serious or critical
WCAG 2.1 A/AA violations. The pages come from the URL patterns, so a new page is checked without editing this file."""

import re

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from .axe import NetworkWatch, blocking_violations, describe, install_axe

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

PARAM = re.compile(r"<(?:(\w+):)?(\w+)>")
TOP_LEVEL = [
    "",
    "studies/",
    "work/",
    "healthz",
]  # pages outside a study worth checking; admin/ and api/ are third-party UIs
# URL parameters that take a word (an action, a format, a direction, a slot name): such routes are actions or
# downloads, not pages.
WORD_CONVERTERS = {"str", "slug", "path"}
LAST = ("delete", "remove")  # visited last, in case a GET on them ever changes data


def study_routes(patterns=None, prefix=""):
    """(route, name) of every URL pattern under studies/<study_id>/, in declaration order."""
    for p in patterns if patterns is not None else get_resolver().url_patterns:
        route = prefix + str(p.pattern)
        if isinstance(p, URLResolver):
            yield from study_routes(p.url_patterns, route)
        elif isinstance(p, URLPattern) and route.startswith("studies/<int:study_id>/"):
            yield route, p.name or ""


def object_ids(s):
    """URL parameter -> object id for the full study; some names depend on the page (runs and sets of three kinds)."""
    out = s["outputs"][0]
    return {
        "study_id": s["study"].pk,
        "toolkit_id": s["toolkit"].pk,
        "dimension_id": s["items"][0].dimension_id,
        "item_id": s["items"][0].pk,
        "endpoint_id": s["endpoints"][0].pk,
        "output_id": out.pk,
        "codebook_id": s["codebook"].pk,
        "code_id": s["codes"]["charisma"].pk,
        "round_id": s["round"].pk,
        "verdict_id": s["round"].verdicts.first().pk,
        "template_id": s["round"].template_id,
        "lexicon_id": s["lexicon"].pk,
        "category_id": s["lexicon"].categories.first().pk,
        "exclusion_id": s["exclusion"].pk,
        "instrument_id": s["instrument"].pk,
        "job_id": s["export_job"].pk,
        "membership_id": s["coder_membership"],
        "variable_id": s["variable"].pk,
        "discovery_id": s["discovery"].pk,
        "run_id": {"psych-": s["questionnaire"].pk, "measures-": s["measure_run"].pk, "": s["run"].pk},
        "set_id": {"psych-persona": s["personas"].pk, "psych-context": s["contexts"].pk},
    }


def fill(route, name, ids):
    """The URL of a route with the study's objects, or None for action/download routes (word parameters)."""

    def value(match):
        converter, param = match.group(1) or "str", match.group(2)
        if converter in WORD_CONVERTERS:
            raise LookupError
        assert param in ids, f"{route} ({name}): add an object for <{param}> to the a11y study fixture"
        v = ids[param]
        if isinstance(v, dict):
            v = next((pk for key, pk in v.items() if name.startswith(key)), None)
            assert v is not None, f"{route} ({name}): no object for <{param}> on this page"
        return str(v)

    try:
        return "/" + PARAM.sub(value, route)
    except LookupError:
        return None


def variable_workspace_url(s):
    """The coding workspace of a codebook with a story variable (the regard codebook), on a story in the queue."""
    variable = s["variable"]
    return reverse("annotation-workspace", args=[s["study"].pk, variable.codebook_id, s["outputs"][0].pk])


def variable_gold_url(s):
    """The variable page listing every gold label (majority, ties, adjudication), not only the open ties."""
    return reverse("agreement-variable", args=[s["study"].pk, s["variable"].pk]) + "?show=all"


def study_page_urls(s):
    urls = [fill(route, name, object_ids(s)) for route, name in study_routes()]
    urls = [u for u in dict.fromkeys(urls + [variable_workspace_url(s), variable_gold_url(s)]) if u]
    return sorted(urls, key=lambda u: any(word in u for word in LAST)) + ["/" + r for r in TOP_LEVEL]


def test_the_enumeration_covers_every_app(full_study):
    urls = study_page_urls(full_study)
    study = full_study["study"].pk
    for page in [
        "coding/",
        "runs/",
        "outputs/",
        "toolkits/",
        "judging/",
        "agreement/",
        "questionnaires/",
        "measures/",
        "exports/",
        "members/",
        "report/",
    ]:
        assert f"/studies/{study}/{page}" in urls
    assert variable_workspace_url(full_study) in urls and reverse("my-work") in urls
    variable_page = reverse("agreement-variable", args=[study, full_study["variable"].pk])
    for url in (variable_page, variable_gold_url(full_study), reverse("study-spending", args=[study])):
        assert url in urls
    assert len(urls) > 60


def _login(page, username):
    from tests.conftest import PASSWORD

    page.goto("/accounts/login/")
    page.fill("input[name=username]", username)
    page.fill("input[name=password]", PASSWORD)
    page.click("button[type=submit]")
    page.wait_for_load_state()


OPEN_ALL_DETAILS = "() => document.querySelectorAll('details').forEach(d => { d.open = true; })"


def check_pages(page, urls):
    """Visit each URL; run axe on every full HTML page served with 200 (fragments and downloads are skipped)."""
    found, checked = {}, []
    network = NetworkWatch(page)
    for url in urls:
        head = page.request.get(url, max_redirects=0)  # downloads would abort a navigation
        headers = head.headers
        if (
            head.status != 200
            or "text/html" not in headers.get("content-type", "")
            or "attachment" in headers.get("content-disposition", "")
        ):
            continue
        page.goto(url, wait_until="load")
        if not page.evaluate("() => !!document.querySelector('main')"):
            continue  # an htmx fragment on its own
        page.evaluate(OPEN_ALL_DETAILS)  # collapsed forms are checked too
        network.settle()  # what the page loads after `load` or on opening a <details> is in
        checked.append(url)
        violations = blocking_violations(page)
        if violations:
            found[url] = violations
    return found, checked


@pytest.mark.parametrize("role", ["coder", "researcher", "admin"])
def test_no_serious_or_critical_violations_on_any_study_page(browser, live_server, full_study, role):
    context = browser.new_context(base_url=live_server.url)
    install_axe(context)
    page = context.new_page()
    page.set_default_timeout(20000)
    page.on("dialog", lambda d: d.dismiss())
    try:
        found, checked = check_pages(page, ["/accounts/login/"]) if role == "coder" else ({}, [])
        _login(page, role)
        more, checked_more = check_pages(page, study_page_urls(full_study))
        found.update(more)
        checked += checked_more
    finally:
        context.close()
    print(f"{role}: axe checked {len(checked)} pages")
    assert len(checked) >= (20 if role == "coder" else 50), checked
    report = "\n".join(f"{url}\n{describe(v)}" for url, v in found.items())
    assert not found, f"{role}: serious/critical axe violations on {len(found)} of {len(checked)} pages:\n{report}"


def test_the_variable_gold_and_spending_pages_have_no_serious_or_critical_violations(browser, live_server, full_study):
    """Issue 35: the workspace with a variable (as its coder), the variable page with its new tables, its gold list,
    the Agreement page listing the variable and the spending page (as a researcher), checked on their own."""
    s, study = full_study, full_study["study"].pk
    pages = {
        "coder": [variable_workspace_url(s)],
        "researcher": [
            reverse("agreement-variable", args=[study, s["variable"].pk]),
            variable_gold_url(s),
            reverse("agreement", args=[study]),
            reverse("study-spending", args=[study]),
        ],
    }
    found, checked = {}, []
    for role, urls in pages.items():
        context = browser.new_context(base_url=live_server.url)
        install_axe(context)
        page = context.new_page()
        page.set_default_timeout(20000)
        try:
            _login(page, role)
            more, checked_more = check_pages(page, urls)
            if role == "researcher":
                page.goto(urls[0])
                assert page.locator("#per-rater, #confusion, #variable-summary").count() >= 2  # the new tables render
        finally:
            context.close()
        found.update(more)
        checked += checked_more
    assert checked == pages["coder"] + pages["researcher"], checked
    report = "\n".join(f"{url}\n{describe(v)}" for url, v in found.items())
    assert not found, f"serious/critical axe violations:\n{report}"
