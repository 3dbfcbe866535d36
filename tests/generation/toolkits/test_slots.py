import pytest

from generation.toolkits.slots import (
    SlotError,
    escape_braces,
    normalize_combinations,
    normalize_slot_values,
    parse_slots,
    render,
)


def test_parse_slots_in_order_without_repeats():
    assert parse_slots("Letter for {name}, a {age} year old {gender} {occupation}. {name}!") == [
        "name",
        "age",
        "gender",
        "occupation",
    ]
    assert parse_slots("No slots here.") == []


def test_render_fills_values_and_keeps_literal_braces():
    assert render('Say {{"answer": "{option}"}}', {"option": "3"}) == 'Say {"answer": "3"}'
    assert render("{a}{b}", {"a": 1, "b": "x"}) == "1x"


def test_unknown_slot_names_the_known_ones():
    with pytest.raises(SlotError, match=r"Unknown slot \{occupation\}; the slots defined here are: age, name"):
        render("{name} {age} {occupation}", {"name": "Kelly", "age": "20"})


@pytest.mark.parametrize(
    "text, message",
    [
        ("Hello {name", "Invalid placeholder"),
        ("Hello {first name}", "Invalid placeholder '{first name}'"),
        ("Hello {1st}", "Invalid placeholder"),
        ("Hello name}", "Unmatched '}'"),
    ],
)
def test_stray_braces_are_errors(text, message):
    with pytest.raises(SlotError, match=message):
        parse_slots(text)


def test_escape_braces_round_trips_through_render():
    text = "JSON {like} this }{"
    assert render(escape_braces(text), {}) == text


def test_slot_values_are_validated_and_stringified():
    assert normalize_slot_values({"age": [20, 40], "name": "Kelly"}) == {"age": ["20", "40"], "name": ["Kelly"]}
    for bad, message in [
        ([1], "must be an object"),
        ({"a b": ["x"]}, "not a valid slot name"),
        ({"a": []}, "non-empty list"),
        ({"a": ["x", "x"]}, "twice"),
        ({"a": [None]}, "not text or a number"),
    ]:
        with pytest.raises(SlotError, match=message):
            normalize_slot_values(bad)


def test_combinations_need_the_same_slots_and_no_repeats():
    assert normalize_combinations(None) is None
    assert normalize_combinations([{"name": "Kelly", "gender": "female"}]) == [{"name": "Kelly", "gender": "female"}]
    with pytest.raises(SlotError, match="same slots"):
        normalize_combinations([{"name": "Kelly"}, {"gender": "male"}])
    with pytest.raises(SlotError, match="repeats"):
        normalize_combinations([{"name": "Kelly"}, {"name": "Kelly"}])
