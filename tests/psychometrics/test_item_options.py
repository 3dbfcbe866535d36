"""Per-item answer options with weights (R.U.Psycho): parsed from the instrument file, shown in the prompt,
mapped back by extraction and scored by their weights."""
import json

import pandas as pd
import pytest

from psychometrics import prompts, runs, services
from psychometrics.extraction import extract
from psychometrics.scoring import score
from psychometrics.spec import SpecError, parse_instrument, to_dict

WEIGHTED = {
    "name": "Weighted", "version": "1", "scale": {"min": 0, "max": 4, "labels": {"0": "never", "4": "always"}},
    "subscales": ["A"],
    "items": [
        {"id": "q1", "text": "I ask for help.", "subscale": "A",
         "options": [{"text": "not at all", "weight": 0}, {"text": "a little", "weight": 1.5},
                     {"text": "a lot", "weight": 4}]},
        {"id": "q2", "text": "I lead meetings.", "subscale": "A"},
    ]}


def test_spec_parses_and_round_trips_item_options():
    spec = parse_instrument(WEIGHTED)
    assert [(o.text, o.weight) for o in spec.items[0].options] == [("not at all", 0), ("a little", 1.5), ("a lot", 4)]
    assert spec.items[1].options == []
    data = to_dict(spec)
    assert data["items"][0]["options"] == WEIGHTED["items"][0]["options"] and "options" not in data["items"][1]
    assert to_dict(parse_instrument(json.loads(json.dumps(data)))) == data


@pytest.mark.parametrize("options, message", [
    ([{"text": "only one", "weight": 1}], "at least two"),
    ([{"text": "a", "weight": "x"}, {"text": "b", "weight": 1}], "weight must be a number"),
    ([{"text": "", "weight": 0}, {"text": "b", "weight": 1}], "needs a text"),
    ([{"text": "a", "weight": 0}, {"text": "a", "weight": 1}], "duplicate"),
    ("yes/no", "list of"),
])
def test_bad_item_options_are_named(options, message):
    data = json.loads(json.dumps(WEIGHTED))
    data["items"][0]["options"] = options
    with pytest.raises(SpecError, match=message):
        parse_instrument(data)


def test_reverse_item_with_own_options_is_refused():
    data = json.loads(json.dumps(WEIGHTED))
    data["items"][0]["reverse"] = True
    with pytest.raises(SpecError, match="weights"):
        parse_instrument(data)


def test_item_options_in_prompt_and_extraction():
    spec = parse_instrument(WEIGHTED)
    item = spec.items[0]
    order = prompts.option_order(prompts.item_option_keys(item.options), "reversed")
    shown = prompts.presented_item_options(order, item.options, "position")
    assert shown == [{"code": "1", "label": "a lot", "value": 4}, {"code": "2", "label": "a little", "value": 1.5},
                     {"code": "3", "label": "not at all", "value": 0}]
    original = prompts.presented_item_options(order, item.options, "original")
    assert [o["code"] for o in original] == ["3", "2", "1"]
    text = prompts.render_messages(prompts.TEMPLATES["jung2025"], item.text, shown)[-1]["content"]
    assert "Answer options:\n1 a lot\n2 a little\n3 not at all\nAnswer:" in text
    assert extract("2", shown, ["number"]).value == 1.5
    assert extract("I'd say a lot, honestly.", shown, ["number", "label"]).value == 4


def test_weights_are_scored_as_given():
    spec = parse_instrument(WEIGHTED)
    wide = pd.DataFrame({"q1": [1.5, 4.0], "q2": [2.0, None]})
    assert list(score(wide, spec)["total"]) == [pytest.approx(1.75), pytest.approx(4.0)]


@pytest.mark.django_db
def test_run_with_item_options_end_to_end_and_json_round_trip(study, make_endpoint, fake_provider):
    instrument = services.create_instrument(study, WEIGHTED)
    item = instrument.items.get(item_id="q1")
    assert item.options == WEIGHTED["items"][0]["options"]
    exported = services.export_instrument(instrument)
    assert exported["items"][0]["options"] == WEIGHTED["items"][0]["options"]
    endpoint = make_endpoint(study, name="ep")
    fake_provider.script([{"text": "a little"}] * 3, match="I ask for help.")
    fake_provider.default = {"text": "3"}
    run = runs.create_run(study, name="w", instrument=instrument, context_set=None, endpoints=[endpoint],
                          repetitions=3, option_order="permuted", order_seed=4, extractors=["number", "label"])
    runs.start(run)
    q1 = list(run.responses.filter(item__item_id="q1"))
    assert len(q1) == 3 and {r.value for r in q1} == {1.5}
    assert all(sorted(o["label"] for o in r.options) == ["a little", "a lot", "not at all"] for r in q1)
    assert all(r.messages[-1]["content"].count("\n") >= 5 for r in q1)
    q2 = list(run.responses.filter(item__item_id="q2"))
    assert len(q2[0].options) == 5 and all(r.value == r.permutation[3] for r in q2)  # code 3 = 4th shown
    with pytest.raises(services.PsychError, match="own answer options"):
        runs.create_run(study, name="f", instrument=instrument, context_set=None, endpoints=[endpoint],
                        template_key="fang2025")
