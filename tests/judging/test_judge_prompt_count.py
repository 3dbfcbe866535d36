"""The seed judge prompt's "the five stories" says how many stories the batch really holds."""

import pytest

from judging.prompts import SEED_PROMPT, render

TEMPLATE = SEED_PROMPT + "\n\n{stories}"


@pytest.mark.parametrize(
    "n, phrase",
    [
        (1, "for the story in it"),
        (2, "for the two stories in it"),
        (5, "for the five stories in it"),
        (12, "for the twelve stories in it"),
        (25, "for the 25 stories in it"),
    ],
)
def test_story_count_filled_from_batch(n, phrase):
    stories = [(f"s{i}", f"Story text {i}.") for i in range(n)]
    text = render(TEMPLATE, "seed_binary", "women are caring", stories)
    assert phrase in text
    if n != 5:
        assert "five stories" not in text
    assert text.count("Story text") == n
