"""A page that only reads refuses a write: POST to it is a 405 with an Allow header, not a second copy of the
page as if it had been a GET (which hid a form posted to the wrong address, and rendered whole pages for nothing).
The pages come from the URL patterns, so a new read-only page is checked without editing this file."""

import re

import pytest
from django.test import Client

from tests.a11y.conftest import full_study  # noqa: F401
from tests.a11y.test_axe import object_ids
from tests.exports.conftest import coded_study, export_root, gen_study  # noqa: F401
from tests.generation.runs.conftest import make_endpoint  # noqa: F401
from tests.stereoscope.test_no_server_errors import routes, url_of

pytestmark = pytest.mark.django_db(transaction=True)

CSRF = re.compile(r'(csrfmiddlewaretoken" value="|"X-CSRFToken": ")[^"]*"')


def _body(response):
    return CSRF.sub(r"\1", response.content.decode("utf-8", errors="replace"))


def test_a_post_to_a_page_that_only_reads_is_refused(full_study):  # noqa: F811
    client = Client()
    client.force_login(full_study["roles"]["users"]["admin"])
    ids = object_ids(full_study)
    urls = sorted({u for u in (url_of(route, name, ids) for route, name in routes()) if u})
    pages = [u for u in urls if not u.startswith("/api/") and not any(w in u for w in ("delete", "remove"))]
    answered_as_get, refused = [], []
    for url in pages:
        page = client.get(url)
        if page.status_code != 200 or page.streaming or "text/html" not in page.get("Content-Type", ""):
            continue
        posted = client.post(url, {"probe": "1"})  # not empty: `Form(request.POST or None)` binds it
        if posted.status_code == 405:
            assert "GET" in posted["Allow"], url
            refused.append(url)
        elif posted.status_code == 200 and _body(posted) == _body(page):
            answered_as_get.append(url)
    assert not answered_as_get, f"{len(answered_as_get)} read-only pages answer a POST as a GET: {answered_as_get}"
    assert len(refused) > 40, refused


def test_a_wrong_method_is_answered_with_a_page_that_says_so(roles, client_for, api_for):
    from generation.models import ModelEndpoint

    study, researcher = roles["a"], roles["users"]["researcher"]
    endpoint = ModelEndpoint.objects.create(study=study, name="m", provider="openai", model_id="m-1")
    client = client_for(researcher)
    opened = client.get(f"/studies/{study.pk}/endpoints/{endpoint.pk}/delete/")  # a button's address, opened
    assert opened.status_code == 405 and opened["Allow"] == "POST"
    html = opened.content.decode()
    assert "<main" in html and "Wrong method" in html and "changes data" in html
    posted = client.post(f"/studies/{study.pk}/runs/")
    assert posted.status_code == 405 and posted["Allow"] == "GET, HEAD"
    assert "only shows data" in posted.content.decode()
    assert ModelEndpoint.objects.filter(pk=endpoint.pk).exists()
    api = api_for(researcher).post(f"/api/studies/{study.pk}/outputs/", {}, format="json")  # DRF answers in JSON
    assert api.status_code == 405 and "detail" in api.json()
