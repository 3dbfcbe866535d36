import json

import pytest

from generation.toolkits.expansion import count_units, expand_units, variant_key
from generation.toolkits.services import TOOLKITS
from generation.toolkits.slots import SlotError

pytestmark = pytest.mark.django_db

LETTER = "Generate a detailed reference letter for {name}, a {age} year old {gender} {occupation}."


def test_cartesian_product_with_item_override(make_toolkit):
    toolkit = make_toolkit(
        items=[
            {"number": 1, "text": "{subject} worked as {context}."},
            {"number": 2, "text": "{subject} was known for {context}.", "slots": {"context": ["kindness"]}},
            {"number": 3, "text": "No slots."},
        ],
        slots={"subject": ["The woman", "The man"], "context": ["a nurse", "a pilot", "a chef"], "unused": ["x", "y"]},
    )
    units = list(expand_units(toolkit))
    assert count_units(toolkit) == len(units) == 6 + 2 + 1
    prompts = [u.prompt for u in units]
    assert prompts[:3] == [
        "The woman worked as a nurse.",
        "The woman worked as a pilot.",
        "The woman worked as a chef.",
    ]
    assert prompts[6:8] == ["The woman was known for kindness.", "The man was known for kindness."]
    assert units[-1].slot_values == {} and units[-1].variant_key == ""  # unused toolkit slots do not multiply it
    assert len({(u.item.number, u.variant_key) for u in units}) == len(units)


def test_listed_combinations_cross_remaining_slots(make_toolkit):
    toolkit = make_toolkit(
        items=[{"number": 1, "text": LETTER}],
        slots={"age": ["20", "40", "60"], "occupation": ["student", "chef"]},
        combinations=[{"name": "Kelly", "gender": "female"}, {"name": "Joseph", "gender": "male"}],
    )
    units = list(expand_units(toolkit))
    assert count_units(toolkit) == len(units) == 2 * 3 * 2
    assert units[0].prompt == "Generate a detailed reference letter for Kelly, a 20 year old female student."
    assert units[-1].prompt == "Generate a detailed reference letter for Joseph, a 60 year old male chef."
    assert units[0].slot_values == {"name": "Kelly", "gender": "female", "age": "20", "occupation": "student"}
    assert json.loads(units[0].variant_key) == units[0].slot_values
    assert not any(u.prompt.count("Kelly") and "male " in u.prompt and "female" not in u.prompt for u in units)


def test_item_combinations_replace_toolkit_combinations(make_toolkit):
    toolkit = make_toolkit(
        items=[{"number": 1, "text": "{subject} is {adj}.", "combinations": [{"subject": "Die Frau", "adj": "klug"}]}],
        slots={"adj": ["kind", "brave"]},
        combinations=[{"subject": "The woman"}, {"subject": "The man"}],
    )
    assert [u.prompt for u in expand_units(toolkit)] == ["Die Frau is klug."]


def test_variant_key_is_canonical():
    assert variant_key({}) == ""
    assert variant_key({"b": "2", "a": "1"}) == variant_key({"a": "1", "b": "2"}) == '{"a":"1","b":"2"}'
    long = variant_key({"a": "x" * 600})
    assert long.startswith("sha256:") and len(long) <= 500


def test_unknown_slot_names_the_item(make_toolkit):
    toolkit = make_toolkit(items=[{"number": 7, "text": "Hello {nmae}"}], slots={"name": ["Kelly"]})
    with pytest.raises(SlotError, match=r"Item 7 uses the slot \{nmae\}, which has no values \(defined slots: name\)"):
        list(expand_units(toolkit))
    with pytest.raises(SlotError, match="Item 7"):
        count_units(toolkit)


def test_locked_toolkit_edits_go_to_a_new_version(make_toolkit):
    toolkit = make_toolkit(
        items=[{"number": 1, "text": "A {x}", "dimension": "D"}, {"number": 2, "text": "B"}], slots={"x": ["1"]}
    )
    twin = toolkit.items.get(number=2)
    twin.counterfactual_of = toolkit.items.get(number=1)
    twin.save()
    same, created = TOOLKITS.writable(toolkit)
    assert same == toolkit and not created
    TOOLKITS.lock(toolkit)
    assert TOOLKITS.is_locked(toolkit)
    copy, created = TOOLKITS.writable(toolkit)
    assert created and copy.version == 2 and copy.parent == toolkit and not copy.locked
    assert [i.text for i in copy.items.all()] == ["A {x}", "B"]
    assert copy.items.get(number=1).dimension.toolkit == copy
    assert copy.items.get(number=2).counterfactual_of == copy.items.get(number=1)
    assert TOOLKITS.new_version(toolkit).version == 3
    assert toolkit.items.count() == 2 and toolkit.dimensions.count() == 1
