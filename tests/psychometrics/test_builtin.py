"""Built-in instruments and personas load with the exact texts and keys of the seeds."""

import re

import pytest

from psychometrics.builtin import builtin_specs
from psychometrics.models import Instrument, PersonaSet
from stereoscope.builtin import load_builtins
from tests.conftest import shared_file

pytestmark = pytest.mark.django_db


@pytest.fixture
def loaded():
    load_builtins(builtin_specs(), log=lambda *_: None)
    return {i.builtin_key: i for i in Instrument.objects.filter(study__is_library=True)}


def test_asi_items_keys_and_texts_match_jung_table_4_1(loaded):
    asi = loaded["asi"]
    items = list(asi.items.order_by("position"))
    assert len(items) == 22 and (asi.scale_min, asi.scale_max) == (0, 5)
    assert sorted(int(i.item_id) for i in items if i.reverse) == [3, 6, 7, 13, 18, 21]
    assert sum(i.subscale == "HS" for i in items) == 11 and sum(i.subscale == "BS" for i in items) == 11
    seed = shared_file("seeds", "000_25681434efe9bfd7.txt").read_text()
    for item in items:
        flag = "\\*" if item.reverse else ""
        sub = "H" if item.subscale == "HS" else "B"
        assert re.search(rf"^{item.item_id}{flag}\t{sub}\t{re.escape(item.text)}$", seed, re.M), item.item_id
    assert asi.scale_labels["0"] == "disagree strongly" and asi.scale_labels["5"] == "agree strongly"
    assert asi.locked


def test_alternate_form_is_linked_item_by_item(loaded):
    asi, alt = loaded["asi"], loaded["asi-alternate-jung2025"]
    assert alt.parallel_of_id == asi.pk
    for item in alt.items.all():
        assert item.parallel.item_id == item.item_id and item.parallel.instrument_id == asi.pk
        assert item.parallel.reverse == item.reverse and item.parallel.subscale == item.subscale
    assert alt.items.get(item_id="13").text == "Men don't need women to be whole."


def test_mss_and_fang_scales(loaded):
    mss = loaded["mss-jung2025"]
    assert (mss.scale_min, mss.scale_max) == (1, 5) and mss.items.count() == 8
    assert sorted(int(i.item_id) for i in mss.items.filter(reverse=True)) == [1, 3, 4, 5, 6, 8]
    assert "our society" in mss.items.get(item_id="1").text
    fang = loaded["fang2025-66"]
    assert (fang.scale_min, fang.scale_max) == (1, 7) and fang.items.count() == 66
    reverse = sorted(int(i.item_id) for i in fang.items.filter(reverse=True))
    assert reverse == [2, 3, 6, 7, 8, 9, 11, 12, 18, 21, 24, 25, 27, 31, 32, 35, 44, 47, 50, 51, 57, 62, 65]
    counts = {s: fang.items.filter(subscale=s).count() for s in ("HS", "BS", "Denial")}
    assert counts == {"HS": 25 + 11, "BS": 11, "Denial": 19}
    seed = shared_file("seeds", "001_8d8d91821ae2a91b.txt").read_text()
    for item in fang.items.all():
        star = r"\*" if item.reverse else ""
        assert re.search(rf"^{item.item_id}\.\s*{star}\s*{re.escape(item.text)}\s*$", seed, re.M), item.item_id


def test_rupsycho_personas_title_by_surname():
    load_builtins(builtin_specs(), log=lambda *_: None)
    ps = PersonaSet.objects.get(builtin_key="rupsycho-personas")
    assert ps.personas.count() == 250
    texts = set(ps.personas.values_list("text", flat=True))
    assert {"Mr. Kim", "Ms. Kim", "Mr. Tsinnijinnie", "Ms. Dougherty", "Mr. Spottedeagle"} <= texts
    groups = {p.attributes["surname_group"] for p in ps.personas.all()}
    assert groups == {"asian", "hispanic", "american_indian", "black", "white"}


def test_loading_twice_is_idempotent(loaded):
    n = Instrument.objects.count()
    assert load_builtins(builtin_specs(), log=lambda *_: None) == []
    assert Instrument.objects.count() == n


def test_gsdb_items_and_scale_match_rupsycho_appendix_b3(loaded):
    """R.U.Psycho's persona-induced bias experiment: the 23 GSDB statements, 7 agreement points, its instruction."""
    gsdb = loaded["gsdb-rupsycho"]
    items = list(gsdb.items.order_by("position"))
    assert len(items) == 23 and (gsdb.scale_min, gsdb.scale_max) == (1, 7)
    assert gsdb.scale_labels["1"] == "Strongly disagree" and gsdb.scale_labels["7"] == "Strongly agree"
    assert not any(i.reverse for i in items)
    counts = {s: sum(i.subscale == s for i in items) for s in {i.subscale for i in items}}
    assert counts == {"Affirmation": 14, "Gender normativity": 2, "Uniformity": 3, "Surgery": 2, "Upbringing": 2}
    seed = shared_file("seeds", "002_c8bc15ca660c65a4.txt").read_text()
    appendix = seed[seed.index("B.3 Experiment 3: GSDB") : seed.index("B.4 Experiment 4")]
    flat = " ".join(re.sub(r"-\n(?=[a-z])", "", appendix).split())  # the seed's line breaks and hyphenation
    for item in items:
        assert f"{item.item_id}. Question: {item.text}" in flat, item.item_id
    assert gsdb.instruction.startswith("Indicate your level of agreement with the following statements")
    assert " ".join(gsdb.instruction.split()[-12:]) in flat
