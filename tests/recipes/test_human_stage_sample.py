"""A coding stage's mode and story sample in the recipe format: what validates, and every bad one named by path."""

import pytest

from recipes import services


@pytest.mark.django_db
def test_a_stage_with_mode_and_sample_validates(recipe):
    recipe["human_stages"][0].update(
        mode="consensus", sample={"runs": ["Stories", "Cross judging"], "n": 15, "stratify": "model_item", "seed": 3}
    )
    assert services.check(recipe) == []


@pytest.mark.django_db
@pytest.mark.parametrize(
    "change, path, words",
    [
        ({"mode": "open"}, "human_stages[0].mode", "is not one of"),
        ({"sample": {"runs": ["Stories"], "n": 0}}, "human_stages[0].sample.n", "minimum"),
        ({"sample": {"runs": ["Nowhere"], "n": 5}}, "human_stages[0].sample.runs[0]", "no run or judge round named"),
        ({"sample": {"runs": []}}, "human_stages[0].sample.runs", "non-empty"),
        ({"sample": {"n": 5, "stratify": "gender"}}, "human_stages[0].sample.stratify", "is not one of"),
        (
            {"sample": {"n": 5, "size": 3}},
            "human_stages[0].sample",
            "unknown field(s) 'size'; allowed: runs, n, stratify, seed",
        ),
    ],
)
def test_bad_stages_name_their_path(recipe, change, path, words):
    recipe["human_stages"][0].update(change)
    problems = services.check(recipe)
    assert any(p.path == path and words in p.message for p in problems), problems
