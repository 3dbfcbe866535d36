"""Pages: roles on every view, lexicon editing through forms, run creation, report, pairs, CSV, escaping."""

import pytest
from django.urls import reverse

from measures import scoring, services
from measures.models import Lexicon, MeasureRun

pytestmark = pytest.mark.django_db
XSS = '<script>alert("x")</script><img src=x onerror=alert(1)>'


@pytest.fixture
def setup(roles, make_outputs):
    study = roles["a"]
    lexicon = services.create_lexicon(
        study,
        services.validate_lexicon_data(
            {
                "name": "Care words",
                "categories": [
                    {
                        "key": "care",
                        "name": "Care",
                        "direction": "female",
                        "words": ["kind", "caring", "nurtur"],
                        "color": "#e8590c",
                    },
                    {
                        "key": "agency",
                        "name": "Agency",
                        "direction": "male",
                        "words": ["leader", "confiden"],
                        "color": "#1c7ed6",
                    },
                ],
            }
        ),
    )
    outs = make_outputs(
        study,
        [
            {"text": f"Kelly is kind and caring. She nurtures everyone. {XSS}", "slot_values": {"name": "Kelly"}},
            {"text": "Kelly is a caring nurse. She is kind.", "slot_values": {"name": "Kelly"}},
            {"text": "Joseph is a confident leader. He is kind.", "slot_values": {"name": "Joseph"}},
            {"text": "Joseph leads with confidence. He is a leader.", "slot_values": {"name": "Joseph"}},
        ],
    )
    run = scoring.create_run(study, name="run 1", lexicons=[lexicon], classifier="vader")
    scoring.start(run)
    return {"study": study, "lexicon": lexicon, "run": run, "outputs": outs}


def urls(setup):
    s, lx, run, out = setup["study"].pk, setup["lexicon"], setup["run"], setup["outputs"][0]
    cat = lx.categories.first()
    return {
        "read": [
            reverse("measures", args=[s]),
            reverse("measures-lexicon", args=[s, lx.pk]),
            reverse("measures-lexicon-export", args=[s, lx.pk]),
            reverse("measures-run", args=[s, run.pk]),
            reverse("measures-run-progress", args=[s, run.pk]),
            reverse("measures-report", args=[s, run.pk]),
            reverse("measures-pairs", args=[s, run.pk]),
            reverse("measures-output", args=[s, run.pk, out.pk]),
        ],
        "write_get": [
            reverse("measures-run-new", args=[s]),
            reverse("measures-category", args=[s, lx.pk, cat.pk]),
            reverse("measures-category-new", args=[s, lx.pk]),
            reverse("measures-csv", args=[s, run.pk, "outputs"]),
        ],
    }


def test_roles_outsider_404_coder_403(setup, roles, client_for):
    u = urls(setup)
    outsider, coder, researcher = (client_for(roles["users"][n]) for n in ("outsider", "coder", "researcher"))
    for url in u["read"] + u["write_get"]:
        assert outsider.get(url).status_code == 404, url
    for url in u["read"]:
        assert coder.get(url).status_code == 200, url
    for url in u["write_get"]:
        assert coder.get(url).status_code == 403, url
        assert researcher.get(url).status_code == 200, url
    s, run = setup["study"].pk, setup["run"]
    assert coder.post(reverse("measures-run-action", args=[s, run.pk, "start"])).status_code == 403
    assert (
        coder.post(reverse("measures-lexicon-new", args=[s]), {"name": "x", "count_policy": "per_token"}).status_code
        == 403
    )
    # another study's objects are not reachable through this study's URLs
    b_admin = client_for(roles["users"]["b_admin"])
    assert b_admin.get(reverse("measures-run", args=[roles["b"].pk, run.pk])).status_code == 404
    assert b_admin.get(reverse("measures-lexicon", args=[roles["b"].pk, setup["lexicon"].pk])).status_code == 404


def test_model_text_is_escaped_in_layer_and_pages(setup, roles, client_for):
    c = client_for(roles["users"]["coder"])
    s, run, out = setup["study"].pk, setup["run"], setup["outputs"][0]
    html = c.get(reverse("measures-output", args=[s, run.pk, out.pk])).content.decode()
    assert XSS not in html and "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt;" in html
    assert 'data-cats="' in html and ">kind</mark>" in html and ">nurtures</mark>" in html
    preview = c.post(reverse("measures-lexicon-preview", args=[s, setup["lexicon"].pk]), {"text": f"a kind {XSS}"})
    assert (
        preview.status_code == 200
        and "<script>" not in preview.content.decode()
        and ">kind</mark>" in preview.content.decode()
    )


def test_template_tag_renders_layer(setup):
    from django.template import Context, Template

    html = Template("{% load measures_tags %}{% lexicon_layer text lexicon %}").render(
        Context({"text": "A confident <b>leader</b>, kind.", "lexicon": setup["lexicon"]})
    )
    assert "&lt;b&gt;" in html and "<b>" not in html
    assert html.count("<mark") == 3 and "data-lx-toggle" in html and "Agency" in html


def test_category_edit_through_form_and_warnings(setup, roles, client_for):
    c = client_for(roles["users"]["researcher"])
    s, lx = setup["study"].pk, setup["lexicon"]
    cat = lx.categories.get(key="care")
    response = c.post(
        reverse("measures-category", args=[s, lx.pk, cat.pk]),
        {
            "name": "Care",
            "key": "care",
            "direction": "female",
            "match_mode": "prefix",
            "language": "en",
            "color": "#e8590c",
            "words": "kind\ncaring\nest\nkind",
        },
        follow=True,
    )
    assert response.status_code == 200
    text = response.content.decode()
    assert "is a very short prefix" in text and "listed 2 times" in text
    # the lexicon is locked by the run, so the edit went into v2
    new = Lexicon.objects.get(study=setup["study"], name="Care words", version=2)
    assert new.categories.get(key="care").words == ["kind", "caring", "est", "kind"]
    assert lx.categories.get(key="care").words == ["kind", "caring", "nurtur"]
    bad = c.post(
        reverse("measures-category-new", args=[s, new.pk]),
        {
            "name": "Bad",
            "key": "bad",
            "direction": "none",
            "match_mode": "regex",
            "language": "en",
            "color": "#000000",
            "words": "(unclosed",
        },
    )
    assert bad.status_code == 200 and "not a valid regular expression" in bad.content.decode()
    assert not new.categories.filter(key="bad").exists()


def test_exclusion_and_import_errors(setup, roles, client_for):
    c = client_for(roles["users"]["researcher"])
    s = setup["study"].pk
    lx = services.create_lexicon(
        setup["study"],
        services.validate_lexicon_data({"name": "Fresh", "categories": [{"key": "baby", "words": ["baby"]}]}),
    )
    c.post(reverse("measures-exclusion-add", args=[s, lx.pk]), {"phrase": "Babylon"})
    assert lx.exclusions.get().phrase == "Babylon" and Lexicon.objects.filter(name="Fresh").count() == 1
    r = c.post(reverse("measures-exclusion-add", args=[s, lx.pk]), {"phrase": "(", "is_regex": "on"}, follow=True)
    assert "not a valid regular expression" in r.content.decode() and lx.exclusions.count() == 1
    r = c.post(reverse("measures-lexicon-import", args=[s]), {"text": "{not json"}, follow=True)
    assert "Not valid JSON" in r.content.decode()
    r = c.post(
        reverse("measures-lexicon-import", args=[s]),
        {"text": '{"name": "X", "categories": [{"key": "a", "mode": "fuzzy"}]}'},
        follow=True,
    )
    assert "Unknown match mode" in r.content.decode() and not Lexicon.objects.filter(name="X").exists()
    r = c.post(
        reverse("measures-lexicon-import", args=[s]),
        {"text": '{"name": "Y", "categories": [{"key": "a", "words": ["x"]}]}'},
    )
    assert r.status_code == 302 and Lexicon.objects.filter(name="Y", study=setup["study"]).exists()


def test_run_form_report_pairs_and_csv(setup, roles, client_for, library_lexicons):
    c = client_for(roles["users"]["researcher"])
    s = setup["study"].pk
    r = c.post(
        reverse("measures-run-new", args=[s]),
        {
            "name": "",
            "classifier": "",
            "classifier_unit": "sentence",
            "zero_policy": "exclude",
            "gender_sources": "slots, coders",
        },
    )
    assert r.status_code == 200 and MeasureRun.objects.count() == 1
    r = c.post(
        reverse("measures-run-new", args=[s]),
        {
            "name": "n",
            "classifier": "",
            "classifier_unit": "sentence",
            "zero_policy": "exclude",
            "gender_sources": "slots, tea leaves",
        },
    )
    assert "slots, coders and pronouns" in r.content.decode()
    jung = library_lexicons["jung2025-reference-letters"]
    r = c.post(
        reverse("measures-run-new", args=[s]),
        {
            "name": "jung",
            "lexicons": [jung.pk],
            "classifier": "vader",
            "classifier_unit": "sentence",
            "zero_policy": "smooth",
            "gender_sources": "slots, pronouns",
            "name_genders": "Anna=F",
            "start": "1",
        },
    )
    assert r.status_code == 302
    run = MeasureRun.objects.get(name="jung")
    assert (
        run.status == "completed" and run.name_genders == {"Anna": "F"} and run.gender_sources == ["slots", "pronouns"]
    )
    page = c.get(reverse("measures-report", args=[s, run.pk])).content.decode()
    assert "Context score" in page and "Agentic" in page and "Label distribution by gender" in page and "χ²(" in page
    assert "Most salient words" in page
    model_page = c.get(reverse("measures-report", args=[s, run.pk]) + "?grouping=slot:name").content.decode()
    assert "slot:name = Kelly" in model_page
    csv_text = b"".join(c.get(reverse("measures-csv", args=[s, run.pk, "outputs"])).streaming_content).decode()
    header = csv_text.splitlines()[0]
    assert (
        "gender_source" in header
        and "agentic" in header
        and "share_positive" in header
        and len(csv_text.splitlines()) == 5
    )
    sent = b"".join(c.get(reverse("measures-csv", args=[s, run.pk, "sentences"])).streaming_content).decode()
    assert "'<script>" not in sent and "vaderSentiment" in sent
    assert c.get(reverse("measures-pairs", args=[s, run.pk])).status_code == 200


def test_export_datasets_registered_and_rows(setup):
    from stereoscope.datasets import datasets

    found = datasets()
    assert {"text_measures", "text_sentences", "text_contrasts"} <= set(found)
    rows = list(found["text_measures"].rows(setup["study"], {}))
    names = {c.name for c in found["text_measures"].columns}
    assert all(set(r) == names for r in rows)
    care = [r for r in rows if r["measure"] == "lexicon:Care words v1:care"]
    assert len(care) == 4 and sorted(r["value"] for r in care) == [0, 1, 2, 3]
    assert any(r["measure"] == "share:positive" and r["classifier"].startswith("vaderSentiment@") for r in rows)
    assert list(found["text_measures"].rows(setup["study"], {"models": ["nobody"]})) == []
    sentences = list(found["text_sentences"].rows(setup["study"], {}))
    assert sentences and all(set(r) == {c.name for c in found["text_sentences"].columns} for r in sentences)
    from measures.models import OutputMeasure

    scored = OutputMeasure.objects.filter(run__study=setup["study"], run__classifier="vader")
    assert len(sentences) == sum(m.sentence_count for m in scored) > 0
    texts = {m.output_id: m.output.text for m in scored}
    for r in sentences:
        assert r["text"] == texts[r["output_id"]][r["start"] : r["end"]] and r["scores"]["compound"] == r["score"]
    contrasts = list(found["text_contrasts"].rows(setup["study"], {}))
    care_or = next(
        r for r in contrasts if r["kind"] == "category" and r["grouping"] == "overall" and r["name"] == "Care"
    )
    assert care_or["odds_ratio"] is not None and care_or["zero_policy"] == "exclude"


def test_output_layer_partial_for_other_viewers(setup, roles, client_for):
    s, out, lx = setup["study"].pk, setup["outputs"][0], setup["lexicon"]
    url = reverse("measures-output-layer", args=[s, out.pk])
    assert client_for(roles["users"]["outsider"]).get(url).status_code == 404
    coder = client_for(roles["users"]["coder"])
    html = coder.get(url).content.decode()  # default: the lexicons of the latest measure run
    assert ">kind</mark>" in html and "<script>alert" not in html
    html = coder.get(url + f"?lexicon={lx.pk}").content.decode()
    assert f'value="{lx.pk}" selected' in html
    b_out = roles["b"].outputs.first()
    assert b_out is None or coder.get(reverse("measures-output-layer", args=[s, b_out.pk])).status_code == 404


def test_a_download_left_unread_is_closed_before_the_tests_database_goes(setup, roles, client_for, monkeypatch):
    """The test client closes a streaming response only when it is read to the end. A CSV download a test leaves
    unread holds a database cursor open (a server-side one on PostgreSQL, inside the test's transaction): the suite
    closes such responses when the test ends, before its transaction is rolled back. Otherwise a later garbage
    collection, inside another test's transaction, finalised the cursor and its CLOSE failed there."""
    from django.db import connection

    from measures import selectors
    from tests.conftest import close_unread_downloads

    closed, original = [], selectors.output_rows

    def output_rows(run):
        try:
            yield from original(run)
        finally:
            closed.append(True)

    monkeypatch.setattr(selectors, "output_rows", output_rows)
    s, run = setup["study"].pk, setup["run"]
    response = client_for(roles["users"]["researcher"]).get(reverse("measures-csv", args=[s, run.pk, "outputs"]))
    assert response.status_code == 200 and response.streaming and closed == []
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_cursors")
            assert cursor.fetchone()[0] == 1  # the download's server-side cursor
    close_unread_downloads()
    assert closed == [True] and response.closed
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT count(*) FROM pg_cursors")
            assert cursor.fetchone()[0] == 0
