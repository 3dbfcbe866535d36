"""The output viewer: filters, pagination without N+1 queries, escaped story text and full provenance."""

import pytest
from django.db import connection
from django.db.models import Count
from django.test.utils import CaptureQueriesContext

from generation.models import Dimension, Output, PromptItem
from generation.runs import services as runs

pytestmark = pytest.mark.django_db
XSS = '<script>alert("x")</script><img src=x onerror=alert(1)>'


@pytest.fixture
def finished(roles, make_endpoint, make_toolkit, fake_provider):
    study = roles["a"]
    toolkit = make_toolkit(study, 4)
    family = Dimension.objects.create(toolkit=toolkit, name="Family")
    PromptItem.objects.filter(toolkit=toolkit, number__in=[3, 4]).update(dimension=family)
    a = make_endpoint(study, name="A", model_id="model-a", max_attempts=2)
    b = make_endpoint(study, name="B", model_id="model-b", max_attempts=2)
    fake_provider.script([{"text": XSS}], match="item 1")
    fake_provider.script([{"status": 429, "retry_after": 0.01}], match="item 2")
    fake_provider.script([{"status": 500}] * 12, match="item 4")  # 6 units × 2 attempts: all fail
    run = runs.create_run(study, name="viewer", toolkit=toolkit, endpoints=[a, b], trials=3)
    runs.start(run)
    return study, run, family


def outputs_page(client, study, **params):
    return client.get(f"/studies/{study.pk}/outputs/", params)


def test_filters(roles, client_for, finished):
    study, run, family = finished
    c = client_for(roles["users"]["coder"])
    total = Output.objects.filter(run=run).count()
    assert total == 24
    assert outputs_page(c, study).context["page"].paginator.count == 24
    assert outputs_page(c, study, model="model-a").context["page"].paginator.count == 12
    assert outputs_page(c, study, item=3).context["page"].paginator.count == 6
    assert outputs_page(c, study, dimension=family.pk).context["page"].paginator.count == 12
    assert outputs_page(c, study, trial=2, model="model-b").context["page"].paginator.count == 4
    failed = outputs_page(c, study, status="failed").context["page"]
    assert failed.paginator.count == 6 and {o.item.number for o in failed.object_list} == {4}
    assert outputs_page(c, study, run=run.pk, item=1, trial=1, model="model-a").context["page"].paginator.count == 1
    response = outputs_page(c, study, trial="two", status="exploded")
    assert response.status_code == 200 and response.context["page"].paginator.count == 24
    assert "is not a number" in response.content.decode() and "is not one of" in response.content.decode()
    assert client_for(roles["users"]["outsider"]).get(f"/studies/{study.pk}/outputs/").status_code == 404


def test_list_query_count_does_not_grow_with_rows(roles, client_for, finished):
    study, run, _ = finished
    c = client_for(roles["users"]["coder"])
    outputs_page(c, study)  # warm caches (sessions, roles)
    with CaptureQueriesContext(connection) as small:
        outputs_page(c, study, model="model-a", trial=1)
    with CaptureQueriesContext(connection) as large:
        outputs_page(c, study)
    assert len(large.captured_queries) == len(small.captured_queries) <= 12


def test_pages_beyond_the_first(roles, client_for, finished):
    study, run, _ = finished
    from generation.runs import views as views_runs

    c = client_for(roles["users"]["coder"])
    views_runs.OUTPUTS_PER_PAGE, old = 10, views_runs.OUTPUTS_PER_PAGE
    try:
        pages = [outputs_page(c, study, page=n, model="model-a") for n in (1, 2)]
    finally:
        views_runs.OUTPUTS_PER_PAGE = old
    ids = [o.pk for p in pages for o in p.context["page"].object_list]
    assert len(ids) == 12 == len(set(ids)) and pages[1].context["page"].paginator.num_pages == 2
    assert "model=model-a" in pages[0].content.decode() and "page=2" in pages[0].content.decode()


def test_story_text_is_escaped_everywhere(roles, client_for, finished):
    study, run, _ = finished
    c = client_for(roles["users"]["coder"])
    # one of item 1's six concurrent calls got the script (which one depends on arrival order)
    output = Output.objects.get(run=run, item__number=1, text=XSS)
    for page in (f"/studies/{study.pk}/outputs/{output.pk}/", f"/studies/{study.pk}/outputs/?item=1"):
        body = c.get(page).content.decode()
        assert "<script>alert" not in body and "<img src=x" not in body
        assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in body or "&lt;script&gt;alert" in body


def test_output_detail_shows_full_provenance(roles, client_for, finished):
    study, run, _ = finished
    c = client_for(roles["users"]["coder"])
    retried = Output.objects.filter(run=run, item__number=2).annotate(n=Count("calls")).get(n=2)
    body = c.get(f"/studies/{study.pk}/outputs/{retried.pk}/").content.decode()
    assert "Write a short story about item 2." in body  # rendered prompt
    assert "Attempts (2)" in body and "HTTP 429" in body and "Retry-After 0.01" in body
    assert "chatcmpl-" in body  # raw response
    assert retried.model_name in body
    failed = Output.objects.get(run=run, item__number=4, endpoint__name="B", trial=1)
    body = c.get(f"/studies/{study.pk}/outputs/{failed.pk}/").content.decode()
    assert "HTTP 500" in body and failed.error in body.replace("&#x27;", "'")
    other = client_for(roles["users"]["b_admin"])
    assert other.get(f"/studies/{study.pk}/outputs/{failed.pk}/").status_code == 404
    assert other.get(f"/studies/{roles['b'].pk}/outputs/{failed.pk}/").status_code == 404
