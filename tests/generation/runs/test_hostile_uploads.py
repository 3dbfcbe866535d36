"""Issue 32: hostile workbooks and .qdpx projects on every upload route (API and page) are a 4xx with a message,
nothing written, under a second and under 50 MB: an XLSX with an undefined entity reference, an XLSX whose sheet
inflates to 200 MB, a .qdpx whose project.qde inflates to 100 MB. Long texts are refused at the documented limits."""

import io

import pytest

from generation.models import GenerationRun, Output
from generation.runs import services as runs
from stereoscope.untrusted import MAX_ITEM_TEXT, MAX_MEMO_TEXT
from tests.bombs import MB, measure, qdpx_bomb, xlsx_bomb, xlsx_undefined_entity
from tests.recipes.test_validate_apply import row_counts

pytestmark = pytest.mark.django_db


def _file(name, content):
    f = io.BytesIO(content)
    f.name = name
    return f


def _cheap(result, seconds, growth):
    assert seconds < 1.0, (seconds, result)
    assert growth < 50 * MB, (growth / MB, result)
    return result


@pytest.fixture
def manual(roles, make_endpoint, make_toolkit):
    study = roles["a"]
    run = runs.create_run(
        study, name="m", toolkit=make_toolkit(study, 1), endpoints=[make_endpoint(study, "manual", name="web")]
    )
    runs.start(run)
    return run


def xlsx_routes(roles, manual, client_for, api_for):
    """(label, send(content) -> response) for every route that takes an XLSX upload."""
    study = roles["a"]
    web = client_for(roles["users"]["researcher"])
    api = api_for(roles["users"]["researcher"])
    base = f"/api/studies/{study.pk}/runs"
    return [
        ("API import", lambda c: api.post(f"{base}/import/", {"file": _file("o.xlsx", c)}, format="multipart")),
        ("page import", lambda c: web.post(f"/studies/{study.pk}/runs/import/", {"file": _file("o.xlsx", c)})),
        (
            "API answers",
            lambda c: api.post(f"{base}/{manual.pk}/answers/", {"file": _file("a.xlsx", c)}, format="multipart"),
        ),
        (
            "page answers",
            lambda c: web.post(f"/studies/{study.pk}/runs/{manual.pk}/collect/", {"file": _file("a.xlsx", c)}),
        ),
    ]


def test_xlsx_with_an_undefined_entity_is_a_400_on_every_route(roles, manual, client_for, api_for):
    routes = xlsx_routes(roles, manual, client_for, api_for)
    before = row_counts()
    for label, send in routes:
        response = send(xlsx_undefined_entity())
        assert response.status_code == 400, (label, response.status_code)
        assert "The XLSX workbook cannot be read" in response.content.decode(), label
    assert row_counts() == before


def test_xlsx_bomb_is_refused_before_it_is_read(roles, manual, client_for, api_for):
    bomb = xlsx_bomb()
    assert len(bomb) < 300_000
    routes = xlsx_routes(roles, manual, client_for, api_for)
    for _, send in routes:
        send(xlsx_undefined_entity())  # warm up: the first request imports what the route uses
    before = row_counts()
    for label, send in routes:
        response = _cheap(*measure(lambda s=send: s(bomb)))
        assert response.status_code == 400, (label, response.status_code)
        assert "the limit is 64 MB per part" in response.content.decode(), label
    assert row_counts() == before


def test_qdpx_bomb_is_refused_before_it_is_read(roles, client_for, api_for):
    study = roles["a"]
    bomb = qdpx_bomb()
    api = api_for(roles["users"]["researcher"])
    web = client_for(roles["users"]["researcher"])
    url = f"/api/studies/{study.pk}/exports/refi-import/"
    api.post(url, {"file": _file("p.qdpx", b"PK\x03\x04 junk")}, format="multipart")  # warm up
    before = row_counts()
    response = _cheap(*measure(lambda: api.post(url, {"file": _file("p.qdpx", bomb)}, format="multipart")))
    assert response.status_code == 400 and "project.qde is larger than 64 MB" in response.json()["detail"]
    page = _cheap(
        *measure(
            lambda: web.post(f"/studies/{study.pk}/exports/refi-import/", {"file": _file("p.qdpx", bomb)}, follow=True)
        )
    )
    assert page.status_code == 200 and "project.qde is larger than 64 MB" in page.content.decode()
    assert row_counts() == before


def test_long_texts_are_refused_at_the_documented_limits(roles, api_for, make_toolkit):
    study = roles["a"]
    toolkit = make_toolkit(study, 1)
    api = api_for(roles["users"]["researcher"])
    url = f"/api/studies/{study.pk}/toolkit-items/"
    items = toolkit.items.count()
    response = api.post(url, {"toolkit": toolkit.pk, "number": 9, "text": "x" * (MAX_ITEM_TEXT + 1)}, format="json")
    assert response.status_code == 400 and "the limit is 20,000" in response.content.decode()
    assert toolkit.items.count() == items
    ok = api.post(url, {"toolkit": toolkit.pk, "number": 9, "text": "x" * MAX_ITEM_TEXT}, format="json")
    assert ok.status_code == 201, ok.content
    content = '{"name": "Huge", "items": [{"number": 1, "text": "%s"}]}' % ("y" * (10 * MB))
    imported = api.post(
        f"/api/studies/{study.pk}/toolkits/import/", {"file": _file("t.json", content.encode())}, format="multipart"
    )
    assert imported.status_code == 400 and "longer than 20000 characters" in imported.content.decode()

    from annotation import services

    output = Output.objects.filter(run__study=study).first() or _one_output(study, make_toolkit)
    with pytest.raises(services.AnnotationError, match="the limit is 20,000"):
        services.add_memo(study, author=roles["users"]["researcher"], text="m" * (MAX_MEMO_TEXT + 1), output=output)


def _one_output(study, make_toolkit):
    from generation.runs import collect

    run = collect.import_outputs(study, "o.jsonl", b'{"model": "x", "prompt": "p", "text": "t"}\n')
    assert isinstance(run, GenerationRun)
    return run.outputs.get()
