"""swap_gender as other apps use it: persona/context texts (psychometrics), both directions, idempotent pairs."""

from generation.toolkits.counterfactual import parse_name_pairs, swap_gender, swap_template


def test_persona_context_twin():
    persona = "You are Mary, a 35-year-old woman. Her husband is a nurse and she is an engineer."
    twin = swap_gender(persona)
    assert twin == "You are John, a 35-year-old man. His wife is a nurse and he is an engineer."
    assert swap_gender(twin) == persona  # the twin of the twin is the original


def test_custom_name_pairs_and_templates():
    pairs = parse_name_pairs("Anna=Paul")
    assert swap_gender("Anna told her brother.", pairs) == "Paul told his sister."
    assert swap_template("{name} told her brother about {{this}}.") == "{name} told his sister about {{this}}."
