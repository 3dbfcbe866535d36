"""REST API: roles, lexicon import/validation, category edits with versioning, highlight, runs, contrasts, schema."""

import pytest

from measures import services
from measures.models import Lexicon, LexiconExclusion, MeasureRun

pytestmark = pytest.mark.django_db
LEXICON = {
    "name": "API lexicon",
    "count_policy": "per_entry",
    "categories": [
        {"key": "agentic", "name": "Agentic", "direction": "male", "words": ["confiden", "leader", "est"]},
        {"key": "communal", "name": "Communal", "direction": "female", "words": ["kind", "warm"]},
    ],
    "exclusions": [{"phrase": "establishment", "category": "agentic"}],
}


def base(roles):
    return f"/api/studies/{roles['a'].pk}"


def test_lexicon_roles_and_validation(roles, api_for):
    researcher, coder, outsider = (api_for(roles["users"][n]) for n in ("researcher", "coder", "outsider"))
    url = f"{base(roles)}/lexicons/"
    assert outsider.get(url).status_code == 404
    assert coder.post(url, LEXICON, format="json").status_code == 403
    bad = researcher.post(
        url, {"name": "x", "categories": [{"key": "a", "mode": "regex", "words": ["("]}]}, format="json"
    )
    assert bad.status_code == 400 and "not a valid regular expression" in bad.json()["detail"]
    assert not Lexicon.objects.filter(name="x").exists()
    created = researcher.post(url, LEXICON, format="json")
    assert created.status_code == 201
    body = created.json()
    assert [c["key"] for c in body["categories"]] == ["agentic", "communal"]
    assert any("very short prefix" in w for w in body["categories"][0]["warnings"])
    assert coder.get(url).status_code == 200
    hl = coder.post(
        f"{url}{body['id']}/highlight/", {"text": "A confident leader; an establishment; the estimate."}, format="json"
    )
    assert hl.status_code == 200
    assert [(m["text"], m["category_name"]) for m in hl.json()] == [
        ("confident", "Agentic"),
        ("leader", "Agentic"),
        ("estimate", "Agentic"),
    ]
    assert outsider.post(f"{url}{body['id']}/highlight/", {"text": "x"}, format="json").status_code == 404


def test_category_update_creates_version_when_locked(roles, api_for):
    researcher = api_for(roles["users"]["researcher"])
    lexicon = services.create_lexicon(roles["a"], services.validate_lexicon_data(LEXICON))
    cat = lexicon.categories.get(key="communal")
    r = researcher.patch(
        f"{base(roles)}/lexicon-categories/{cat.pk}/", {"words": ["kind", "warm", "caring"]}, format="json"
    )
    assert (
        r.status_code == 200 and r.json()["lexicon"] == lexicon.pk and r.json()["words"] == ["kind", "warm", "caring"]
    )
    run = researcher.post(f"{base(roles)}/measure-runs/", {"name": "api run", "lexicons": [lexicon.pk]}, format="json")
    assert run.status_code == 201 and run.json()["status"] == "draft"
    r = researcher.patch(f"{base(roles)}/lexicon-categories/{cat.pk}/", {"words": ["kind"]}, format="json")
    assert r.status_code == 200 and r.json()["lexicon"] != lexicon.pk
    assert Lexicon.objects.get(pk=r.json()["lexicon"]).version == 2
    bad = researcher.patch(f"{base(roles)}/lexicon-categories/{cat.pk}/", {"words": 5}, format="json")
    assert bad.status_code == 400 and "one entry per line" in bad.json()["detail"]
    bad = researcher.post(
        f"{base(roles)}/lexicons/", {"name": "z", "categories": [{"key": "a"}], "exclusions": "x"}, format="json"
    )
    assert bad.status_code == 400 and "exclusions: must be a list" in bad.json()["detail"]
    long_note = {
        "name": "z",
        "categories": [{"key": "a", "words": ["kind"]}],
        "exclusions": [{"phrase": "p", "note": "n" * 301}],
    }
    bad = researcher.post(f"{base(roles)}/lexicons/", long_note, format="json")
    assert bad.status_code == 400 and "note has at most 300 characters" in bad.json()["detail"]
    assert not Lexicon.objects.filter(name="z").exists()
    bad = researcher.patch(f"{base(roles)}/lexicon-categories/{cat.pk}/", {"direction": "sideways"}, format="json")
    assert bad.status_code == 400 and "direction" in bad.json()["detail"]
    ex = researcher.post(
        f"{base(roles)}/lexicon-exclusions/", {"lexicon": lexicon.pk, "phrase": "(", "is_regex": True}, format="json"
    )
    assert ex.status_code == 400
    before = LexiconExclusion.objects.count()
    for field, value, message in [  # an AttributeError on .strip() (a 500) before
        ("phrase", ["kind of"], "Exclusion: needs a phrase."),
        ("phrase", 5, "Exclusion: needs a phrase."),
        ("note", {"a": 1}, "Exclusion: note must be text."),
        ("note", 1.5, "Exclusion: note must be text."),
        ("note", "n" * 301, "Exclusion: note has at most 300 characters."),  # was cut to 300 without a word
    ]:
        body = {"lexicon": lexicon.pk, "phrase": "kind of", field: value}
        ex = researcher.post(f"{base(roles)}/lexicon-exclusions/", body, format="json")
        assert ex.status_code == 400 and message in ex.json()["detail"], (field, value)
    assert LexiconExclusion.objects.count() == before
    b_lexicon = services.create_lexicon(roles["b"], services.validate_lexicon_data(LEXICON))
    assert (
        researcher.post(
            f"{base(roles)}/lexicon-exclusions/", {"lexicon": b_lexicon.pk, "phrase": "x"}, format="json"
        ).status_code
        == 404
    )


def test_runs_measures_and_contrasts(roles, api_for, make_outputs, library_lexicons):
    researcher, coder = api_for(roles["users"]["researcher"]), api_for(roles["users"]["coder"])
    make_outputs(
        roles["a"],
        [
            {"text": "Kelly is kind and warm. She is a leader.", "slot_values": {"name": "Kelly"}},
            {"text": "Kelly is warm.", "slot_values": {"name": "Kelly"}},
            {"text": "Joseph is a confident leader.", "slot_values": {"name": "Joseph"}},
            {"text": "Joseph is kind, a leader.", "slot_values": {"name": "Joseph"}},
        ],
    )
    jung = library_lexicons["jung2025-reference-letters"]
    url = f"{base(roles)}/measure-runs/"
    assert coder.post(url, {"name": "x", "classifier": "vader"}, format="json").status_code == 403
    assert researcher.post(url, {"name": "x"}, format="json").status_code == 400
    assert researcher.post(url, {"name": "x", "lexicons": [999999]}, format="json").status_code == 400
    r = researcher.post(
        url, {"name": "jung", "lexicons": [jung.pk], "classifier": "vader", "start": True}, format="json"
    )
    assert r.status_code == 201 and r.json()["status"] == "completed"
    run_id = r.json()["id"]
    measures = coder.get(f"{url}{run_id}/measures/").json()
    assert measures["count"] == 4 and {m["gender"] for m in measures["results"]} == {"F", "M"}
    scores = coder.get(f"{url}{run_id}/contrasts/?kind=context_score&grouping=overall").json()
    assert len(scores) == 1 and scores[0]["result"]["lexicon"].startswith("Jung 2025")
    live = coder.get(f"{url}{run_id}/contrasts/?grouping=slot:name&kind=category").json()
    assert {r["group"] for r in live} == {"Kelly", "Joseph"}
    assert coder.get(f"{url}{run_id}/contrasts/?grouping=nonsense").status_code == 400
    assert coder.post(f"{url}{run_id}/start/").status_code == 403
    fair = researcher.post(f"{url}{run_id}/fairness/")
    assert fair.status_code == 202
    assert len(coder.get(f"{url}{run_id}/contrasts/?kind=fairness").json()) == 1
    assert api_for(roles["users"]["outsider"]).get(f"{url}{run_id}/").status_code == 404
    assert MeasureRun.objects.get(pk=run_id).classifier_info["kind"] == "vader"


def test_schema_has_measures_endpoints(roles, api_for):
    schema = api_for(roles["users"]["staff"]).get("/api/schema/?format=json")
    assert schema.status_code == 200
    paths = schema.json()["paths"]
    assert any(p.endswith("/measure-runs/{id}/contrasts/") for p in paths)
    assert any(p.endswith("/lexicons/{id}/highlight/") for p in paths)
