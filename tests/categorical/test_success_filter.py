"""Wan's success filter (applied before measures, counts reported) and the odds-ratio orientation choice."""
import pytest
from django.urls import reverse

from measures import scoring, success
from measures.models import ContrastResult, OutputMeasure
from tests.measures.conftest import library_lexicons, make_outputs  # noqa: F401

MALE = ("Joseph is an outstanding and confident leader. He has established a strong record. "
        "He is kind and works hard. I recommend him.")
FEMALE = ("Kelly is a kind and helpful colleague. She works hard, is dependable and caring, "
          "and a strong, excellent student. I highly recommend her.")
LOOP = "He is a great leader and I recommend him. " + "great leader great leader great leader " * 8


def test_filter_rules():
    settings = success.clean_settings({"keywords": "recommend"})
    assert success.failure("", settings) == "empty" and success.failure("   \n", settings) == "empty"
    assert success.failure(LOOP, settings) == "repetitive"
    assert success.failure("A fine letter about a colleague.", settings) == "no_keyword"
    assert success.failure("Highest Recommendation for her.", settings) is None
    assert success.failure("I recommend him.", settings) is None  # too short to call repetitive
    with pytest.raises(success.FilterError):
        success.clean_settings({"min_distinct_trigrams": 0})


def test_filter_before_measures_and_orientation(make_outputs, library_lexicons, roles, client_for):  # noqa: F811
    study = roles["a"]
    jung = library_lexicons["jung2025-reference-letters"]
    outs = make_outputs(study, [
        {"text": MALE, "slot_values": {"name": "Joseph"}}, {"text": FEMALE, "slot_values": {"name": "Kelly"}},
        {"text": " ", "slot_values": {"name": "Kelly"}}, {"text": LOOP, "slot_values": {"name": "Joseph"}},
        {"text": "Kelly is a colleague. She is kind.", "slot_values": {"name": "Kelly"}}])
    runs = {}
    for orientation in ("category", "male"):
        run = scoring.create_run(study, name=orientation, lexicons=[jung], or_orientation=orientation,
                                 success_filter={"keywords": ["recommend"]})
        scoring.start(run)
        run.refresh_from_db()
        assert run.status == "completed", run.message
        runs[orientation] = run
    report = runs["male"].filter_report
    assert {k: report[k] for k in ("checked", "passed", "empty", "repetitive", "no_keyword")} == {
        "checked": 5, "passed": 2, "empty": 1, "repetitive": 1, "no_keyword": 1}
    assert report["failed"] == {"empty": [outs[2].pk], "repetitive": [outs[3].pk], "no_keyword": [outs[4].pk]}
    assert set(OutputMeasure.objects.filter(run=runs["male"]).values_list("output_id", flat=True)) == {
        outs[0].pk, outs[1].pk}

    def ors(run):
        return {c.result["category"]: (c.result["odds_ratio"]["or"], c.result["or_orientation"])
                for c in ContrastResult.objects.filter(run=run, kind="category", grouping="overall")}

    per_category, male = ors(runs["category"]), ors(runs["male"])
    communal = jung.categories.get(key="communal").name
    agentic = jung.categories.get(key="agentic").name
    assert male[agentic][0] == pytest.approx(per_category[agentic][0])  # a male-typed category: the same OR
    assert male[communal][0] == pytest.approx(1 / per_category[communal][0])  # female-typed: inverted
    assert {o for _, o in male.values()} == {"male"} and {o for _, o in per_category.values()} == {"category"}
    client = client_for(roles["users"]["researcher"])
    page = client.get(reverse("measures-report", args=[study.pk, runs["male"].pk])).content.decode()
    assert "male-salient, for every category" in page and "2 of 5 texts passed" in page
