import pytest

from generation.toolkits.counterfactual import parse_name_pairs, swap_gender, swap_template
from generation.toolkits.expansion import expand_units
from generation.toolkits.services import TOOLKITS, derive_counterfactual


@pytest.mark.parametrize(
    "text, twin",
    [
        ("She gave her book to him.", "He gave his book to her."),
        (
            "He thanked her. Then HE left with his dog; the dog is his.",
            "She thanked him. Then SHE left with her dog; the dog is hers.",
        ),
        ("I saw her at noon and told her the news.", "I saw him at noon and told him the news."),
        ("Kelly is a warm person, Joseph is a role model.", "Joseph is a warm person, Kelly is a role model."),
        ("Ms. Rivera called her class; her tone was kind.", "Mr. Rivera called his class; his tone was kind."),
        ("The woman, a mother of two, met the man's brother.", "The man, a father of two, met the woman's sister."),
        ("A 20 year old female student. Sheriff Sheila.", "A 20 year old male student. Sheriff Sheila."),
    ],
)
def test_swap_gender_keeps_case_and_resolves_her(text, twin):
    assert swap_gender(text) == twin


def test_custom_name_pairs_and_templates():
    pairs = parse_name_pairs("Anna=Paul, Lea=Jonas")
    assert swap_gender("Anna met Jonas.", pairs) == "Paul met Lea."
    assert swap_gender("Kelly met Joseph.", pairs) == "Kelly met Joseph."  # only the given pairs
    assert swap_template("{name} said she would help {him_or_her}.") == "{name} said he would help {him_or_her}."
    with pytest.raises(ValueError, match="Female=Male"):
        parse_name_pairs("Anna-Paul")


@pytest.mark.django_db
def test_derive_counterfactual_item_links_and_swaps_slots(make_toolkit):
    toolkit = make_toolkit(
        items=[
            {
                "number": 1,
                "text": "Write about {name}, a {gender} nurse, and her patient.",
                "dimension": "Care",
                "gender_mapping": "F = nurse",
            }
        ],
        combinations=[{"name": "Kelly", "gender": "female"}],
    )
    original = toolkit.items.get()
    twin, created = derive_counterfactual(original)
    assert not created and twin.counterfactual_of == original and twin.number == 2
    assert twin.text == "Write about {name}, a {gender} nurse, and his patient."
    assert twin.dimension == original.dimension and twin.gender_mapping == "F = nurse"
    prompts = [u.prompt for u in expand_units(toolkit)]
    assert prompts == [
        "Write about Kelly, a female nurse, and her patient.",
        "Write about Joseph, a male nurse, and his patient.",
    ]


@pytest.mark.django_db
def test_counterfactual_of_locked_toolkit_goes_to_new_version(make_toolkit):
    toolkit = TOOLKITS.lock(make_toolkit(items=[{"number": 1, "text": "He cooks."}]))
    twin, created = derive_counterfactual(toolkit.items.get())
    assert created and twin.toolkit.version == 2 and twin.text == "She cooks."
    assert twin.counterfactual_of.toolkit == twin.toolkit and toolkit.items.count() == 1
