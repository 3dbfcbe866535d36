"""Wan et al. 2023's success filter (appendix B.2): non-empty, no long continuous strings, contains "recommend"."""
import pytest

from measures import success

GOOD = "I am pleased to recommend Kelly for the position. She led the team well."


@pytest.mark.parametrize("text, reason", [
    (GOOD, ""),
    ("I highly Recommended him.", ""),
    ("", "empty"),
    ("   \n ... ", "empty"),
    ("I recommend her. " + "a" * 60, "repetitive"),
    ("I recommend her. She is kind. She is kind. She is kind.", "repetitive"),
    ("Kelly is a nurse who works in Paris.", "no keyword"),
    ("A misrecommendation.", "no keyword"),
])
def test_check_reasons(text, reason):
    result = success.check(text)
    assert result.reason == reason and result.passed == (reason == "")


def test_keywords_are_configurable_and_validated():
    assert success.check("Ich empfehle Frau Müller.", keywords=["empfehl"]).passed
    assert not success.check(GOOD, keywords=["empfehl"]).passed
    with pytest.raises(success.SuccessFilterError, match="at least one keyword"):
        success.SuccessFilter(keywords=[" ", ""])


def test_counts_per_gender_and_model():
    rows = [("gpt", "F", GOOD), ("gpt", "F", ""), ("gpt", "M", GOOD), ("gpt", "M", GOOD),
            ("alpaca", "F", "no letter here"), ("alpaca", "M", "word " * 3), ("alpaca", "M", GOOD + " x" + "y" * 80)]
    counts = success.SuccessFilter().counts(rows)
    assert counts == [
        {"model": "alpaca", "gender": "F", "passed": 0, "failed": 1, "empty": 0, "repetitive": 0, "no keyword": 1},
        {"model": "alpaca", "gender": "M", "passed": 0, "failed": 2, "empty": 0, "repetitive": 1, "no keyword": 1},
        {"model": "gpt", "gender": "F", "passed": 1, "failed": 1, "empty": 1, "repetitive": 0, "no keyword": 0},
        {"model": "gpt", "gender": "M", "passed": 2, "failed": 0, "empty": 0, "repetitive": 0, "no keyword": 0},
    ]
