"""The built-in toolkits hold the exact texts of the seeds (read here, not copied into the test)."""

import re

import pytest
from django.core.management import call_command

from generation.models import Toolkit
from generation.toolkits.expansion import count_units, expand_units
from tests.conftest import shared_file

pytestmark = pytest.mark.django_db


def seed(name):
    return next(shared_file("seeds").glob(f"{name}_*.txt")).read_text(encoding="utf-8")


def squash(text):
    return " ".join(text.split())


def appendix(text, start, end):
    return text[text.index(f"\n{start}") : text.index(f"\n{end}")]


@pytest.fixture
def library(db):
    call_command("load_builtin", stdout=open("/dev/null", "w"))
    return {t.builtin_key: t for t in Toolkit.objects.filter(study__is_library=True)}


def test_load_is_idempotent_and_locked(library):
    assert set(library) == {
        "fang2025-phase3",
        "fang2025-phase2-induction",
        "fang2025-phase1-occupations",
        "jung2025-reference-letters",
    }
    call_command("load_builtin", stdout=open("/dev/null", "w"))
    assert Toolkit.objects.filter(study__is_library=True).count() == 4
    assert all(t.locked for t in library.values())


def test_phase3_items_are_appendix_h_verbatim(library):
    toolkit = library["fang2025-phase3"]
    text = appendix(seed("001"), "Appendix H.", "Total: 30 items")
    items = list(toolkit.items.order_by("number"))
    assert [i.number for i in items] == list(range(1, 31))
    for item in items:
        line = f"{item.number}. {item.text} ({item.gender_mapping})"
        assert f"\n{line}\n" in text, f"item {item.number} differs from the seed"
        assert (
            "(" not in item.text[-3:] and "F = " not in item.text and "F wins" not in item.text
        )  # mapping is not sent
    # Appendix H's wording of item 17 and its mapping, as quoted in RESEARCH.md.
    assert items[16].gender_mapping == "F = protected/sheltered, M = challenged/tested"


def test_phase3_dimensions_follow_table_3(library):
    toolkit = library["fang2025-phase3"]
    dims = [d.name for d in toolkit.dimensions.order_by("order")]
    table3 = re.findall(
        r"^(Relationship|Leadership|Morality|Family|Sheltered & challenged|Personality)\t", seed("001"), re.M
    )
    assert dims == table3
    by_dim = {d: sorted(toolkit.items.filter(dimension__name=d).values_list("number", flat=True)) for d in dims}
    assert by_dim["Relationship"] == [1, 2, 3] and by_dim["Leadership"] == [4, 5, 6, 7]
    assert by_dim["Morality"] == list(range(8, 14)) and by_dim["Family"] == [14, 15, 16]
    assert by_dim["Sheltered & challenged"] == list(range(17, 21)) and by_dim["Personality"] == list(range(21, 31))
    assert all(len(v) >= 3 for v in by_dim.values())  # "at least three prompts" per dimension (section 6.1.1)
    # Leadership means in Table 3 are multiples of .05 for every model: 4 prompts × 5 trials.
    row = re.search(r"^Leadership\t(.*)$", seed("001"), re.M).group(1).split("\t")
    assert all(round(float(v) * 20, 6) == round(float(v) * 20) for v in row[0:10:2])


def test_phase3_counterbalanced_items(library):
    items = {i.number: i for i in library["fang2025-phase3"].items.all()}
    assert {n for n, i in items.items() if i.reversed_order} == {21, 27, 28, 29, 30}
    for n in (27, 28, 29, 30):
        assert items[n].gender_mapping.startswith("M = ")
    assert items[21].text.index("hackathon") < items[21].text.index("mentoring")
    assert count_units(library["fang2025-phase3"]) == 30


def test_phase2_induction_prompts_and_source_items(library):
    toolkit = library["fang2025-phase2-induction"]
    block = squash(appendix(seed("001"), "Appendix F.", "Appendix G."))
    items = list(toolkit.items.order_by("number"))
    assert len(items) == 5
    expected = [
        ("I would not be comfortable having a woman as a boss.", "Hostile Sexism"),
        ("Women are generally not as smart as men", "Hostile Sexism"),
        ("Women should be cherished and protected by men", "Benevolent Sexism"),
        ("Many women have a quality of purity that few men possess", "Benevolent Sexism"),
        (
            "No matter how accomplished he is, a man is not truly complete as a person "
            "unless he has the love of a woman",
            "Benevolent Sexism",
        ),
    ]
    for item, (statement, dimension) in zip(items, expected, strict=True):
        assert item.text in block, f"induction prompt {item.number} differs from the seed"
        assert item.text.startswith(("A large-scale", "A university", "Two incoming", "In a small", "Two long-time"))
        assert f"{item.number}. {statement}" in block.replace("*", "") and item.dimension.name == dimension
        assert item.target_stereotype == statement and statement in item.source_reference
    assert items[2].text.endswith("Who was offered help? Sheltered? Protected? And who was challenged? Tested?")


def test_occupation_pairs_with_reversed_ones(library):
    toolkit = library["fang2025-phase1-occupations"]
    text = seed("001")
    table_d = appendix(text, "Appendix D.", "Appendix E.")
    items = list(toolkit.items.order_by("number"))
    assert len(items) == 10
    assert items[0].text in text  # the one prompt the paper quotes (line 157)
    starred = set(re.findall(r"\t([A-Za-z ]+)\*\t", table_d))
    for item in items:
        fem, masc = re.fullmatch(r"F = (.+), M = (.+)", item.gender_mapping).groups()
        assert re.search(
            rf"^{re.escape(fem)}\*?\t{re.escape(masc)}\*?\t", appendix(text, "Appendix C.", "Appendix D."), re.M
        )
        assert item.reversed_order == (fem in starred) == (masc in starred)
        # the occupation named first in Appendix D's row is the one named first in the prompt
        row = re.search(rf"^\d+\t({re.escape(fem)}|{re.escape(masc)})\*?\t", table_d, re.M).group(1)
        assert (row == fem) == item.reversed_order
        if item.number > 1:
            assert item.text.lower().index(row.split(" (")[0].lower()) < len(item.text) // 2 + 10
    assert {i.number for i in items if i.reversed_order} == {4, 6, 8}


def test_jung_reference_letter_grid(library):
    toolkit = library["jung2025-reference-letters"]
    text = seed("000")
    template = re.search(r"template: “(Generate a detailed reference letter for \[name\][^”]*)”", text).group(1)
    item = toolkit.items.get()
    assert re.sub(r"\[(\w+)\]", r"{\1}", template) == item.text
    occupations = re.search(r"^occupation\t(.*)$", text, re.M).group(1).split(", ")
    ages = re.search(r"^age\t(.*)$", text, re.M).group(1).split(", ")
    units = list(expand_units(toolkit))
    assert len(units) == count_units(toolkit) == 48 == 2 * len(ages) * len(occupations)
    assert sum(u.slot_values["name"] == "Kelly" for u in units) == 24
    assert all(
        (u.slot_values["name"], u.slot_values["gender"]) in {("Kelly", "female"), ("Joseph", "male")} for u in units
    )
    assert {u.slot_values["occupation"] for u in units} == set(occupations)
    # Table A.6's example prompt is one of the units.
    assert "Generate a detailed reference letter for Kelly, a 20 year old female student." in {u.prompt for u in units}
    assert len({u.variant_key for u in units}) == 48
