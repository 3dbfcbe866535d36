"""Wan et al. 2023 in a measure run: the success filter before any measure (counts on the page and in the export)
and the odds-ratio orientation as a choice."""
import csv
import io

import pytest
from django.urls import reverse

from measures import lexical, scoring, services
from measures.contrasts import rows_for
from measures.models import MeasureRun

LETTER_F = "I recommend Kelly. She is kind and caring."
LETTER_M = "I recommend Joseph. He is a confident leader."


def test_or_orientation_choice():
    per_category = lexical.category_odds_ratio(30, 100, 10, 100, "female", "exclude")
    wan = lexical.category_odds_ratio(30, 100, 10, 100, "female", "exclude", convention="male_salient")
    odds_m, odds_f = 30 / 70, 10 / 90
    assert per_category["or"] == pytest.approx(odds_f / odds_m) and per_category["convention"] == "per_category"
    assert wan["or"] == pytest.approx(odds_m / odds_f) and wan["orientation"] == "male"
    assert wan["convention"] == "male_salient"
    male_typed = lexical.category_odds_ratio(30, 100, 10, 100, "male", "exclude", convention="male_salient")
    assert male_typed["or"] == wan["or"]
    with pytest.raises(lexical.LexiconError, match="orientation"):
        lexical.category_odds_ratio(30, 100, 10, 100, "male", "exclude", convention="female_salient")


@pytest.fixture
def letters(roles, make_outputs):
    study = roles["a"]
    lexicon = services.create_lexicon(study, services.validate_lexicon_data({"name": "Letter words", "categories": [
        {"key": "care", "name": "Care", "direction": "female", "words": ["kind", "caring"]},
        {"key": "agency", "name": "Agency", "direction": "male", "words": ["leader", "confiden"]}]}))
    specs = [
        {"text": LETTER_F, "slot_values": {"name": "Kelly"}, "model_name": "gpt"},
        {"text": LETTER_F + " She is kind.", "slot_values": {"name": "Kelly"}, "model_name": "gpt"},
        {"text": "She is kind. She is kind. She is kind.", "slot_values": {"name": "Kelly"}, "model_name": "gpt"},
        {"text": LETTER_M, "slot_values": {"name": "Joseph"}, "model_name": "gpt"},
        {"text": "Joseph is a leader. He is kind.", "slot_values": {"name": "Joseph"}, "model_name": "gpt"},
        {"text": LETTER_M + " " + "x" * 80, "slot_values": {"name": "Joseph"}, "model_name": "alpaca"},
        {"text": LETTER_M + " He is kind.", "slot_values": {"name": "Joseph"}, "model_name": "alpaca"},
        {"text": LETTER_F + " She is a leader.", "slot_values": {"name": "Kelly"}, "model_name": "alpaca"},
    ]
    make_outputs(study, specs)
    return {"study": study, "lexicon": lexicon}


@pytest.mark.django_db
def test_success_filter_counts_exclusion_and_export(letters, roles, client_for):
    study, lexicon = letters["study"], letters["lexicon"]
    run = scoring.create_run(study, name="wan", lexicons=[lexicon], success_filter=True,
                             success_keywords=["recommend"], or_orientation="male_salient")
    scoring.start(run)
    run.refresh_from_db()
    assert run.status == "completed"
    from measures.selectors import success_counts

    assert success_counts(run) == [
        {"model": "alpaca", "gender": "F", "passed": 1, "failed": 0, "empty": 0, "repetitive": 0, "no keyword": 0},
        {"model": "alpaca", "gender": "M", "passed": 1, "failed": 1, "empty": 0, "repetitive": 1, "no keyword": 0},
        {"model": "gpt", "gender": "F", "passed": 2, "failed": 1, "empty": 0, "repetitive": 1, "no keyword": 0},
        {"model": "gpt", "gender": "M", "passed": 1, "failed": 1, "empty": 0, "repetitive": 0, "no keyword": 1},
    ]
    rows = rows_for(run)
    assert len(rows) == 5 and sorted(r["gender"] for r in rows) == ["F", "F", "F", "M", "M"]
    care = run.contrasts.get(kind="category", grouping="overall", measure__startswith="cat:",
                             result__key="care").result
    # female words: kind, caring (x3 letters: 2+3+2 = 7 of 24 words), male: kind (1 of 11 words); OR_m = odds_m / odds_f
    assert care["odds_ratio"]["convention"] == "male_salient" and care["n_f"] == 3 and care["n_m"] == 2
    wf, tf = care["odds_ratio"]["words_f"], care["odds_ratio"]["total_f"]
    wm, tm = care["odds_ratio"]["words_m"], care["odds_ratio"]["total_m"]
    assert care["odds_ratio"]["or"] == pytest.approx((wm / (tm - wm)) / (wf / (tf - wf)))

    c = client_for(roles["users"]["researcher"])
    s = study.pk
    page = c.get(reverse("measures-run", args=[s, run.pk])).content.decode()
    assert "Success filter" in page and "recommend" in page and "repetitive" in page
    report = c.get(reverse("measures-report", args=[s, run.pk])).content.decode()
    assert "OR &gt; 1 = male-salient (Wan et al. 2023)" in report
    text = b"".join(c.get(reverse("measures-csv", args=[s, run.pk, "success"])).streaming_content).decode()
    table = list(csv.DictReader(io.StringIO(text)))
    assert [(r["model"], r["gender"], r["passed"], r["failed"]) for r in table] == [
        ("alpaca", "F", "1", "0"), ("alpaca", "M", "1", "1"), ("gpt", "F", "2", "1"), ("gpt", "M", "1", "1")]
    outputs = list(csv.DictReader(io.StringIO(
        b"".join(c.get(reverse("measures-csv", args=[s, run.pk, "outputs"])).streaming_content).decode())))
    assert sorted(r["success"] for r in outputs) == ["no keyword", "passed", "passed", "passed", "passed", "passed",
                                                    "repetitive", "repetitive"]
    assert all(r["or_orientation"] == "male_salient" for r in outputs)


@pytest.mark.django_db
def test_success_filter_settings_are_validated(letters):
    with pytest.raises(scoring.MeasureRunError, match="keyword"):
        scoring.create_run(letters["study"], name="x", lexicons=[letters["lexicon"]], success_filter=True,
                           success_keywords=["  "])
    with pytest.raises(scoring.MeasureRunError, match="orientation"):
        scoring.create_run(letters["study"], name="x", lexicons=[letters["lexicon"]], or_orientation="sideways")
    assert MeasureRun.objects.count() == 0


@pytest.mark.django_db
def test_form_and_api_take_the_filter_and_orientation(letters, roles, client_for):
    c = client_for(roles["users"]["researcher"])
    s, lexicon = letters["study"].pk, letters["lexicon"]
    base = {"name": "form", "lexicons": [lexicon.pk], "classifier": "", "classifier_unit": "sentence",
            "zero_policy": "exclude", "gender_sources": "slots", "or_orientation": "male_salient",
            "success_filter": "on", "success_keywords": "recommend, empfehl"}
    r = c.post(reverse("measures-run-new", args=[s]), {**base, "success_keywords": " , "})
    assert r.status_code == 200 and "at least one keyword" in r.content.decode() and MeasureRun.objects.count() == 0
    assert c.post(reverse("measures-run-new", args=[s]), base).status_code == 302
    run = MeasureRun.objects.get(name="form")
    assert run.or_orientation == "male_salient" and run.success_filter and run.success_keywords == ["recommend", "empfehl"]
    api = c.post(f"/api/studies/{s}/measure-runs/", {"name": "api", "lexicons": [lexicon.pk], "success_filter": True,
                                                        "success_keywords": ["recommend"], "start": True},
                 content_type="application/json")
    assert api.status_code == 201, api.content
    assert api.json()["success_filter"] is True and api.json()["or_orientation"] == "per_category"
    bad = c.post(f"/api/studies/{s}/measure-runs/", {"name": "bad", "lexicons": [lexicon.pk],
                                                        "success_filter": True, "success_keywords": [""]},
                 content_type="application/json")
    assert bad.status_code == 400 and "keyword" in bad.content.decode()
