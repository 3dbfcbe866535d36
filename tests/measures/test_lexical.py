"""Jung's prefix matching and odds ratios against hand-counted examples; Wan's per-word ORs; exclusions."""

import json
from pathlib import Path

import pytest

from measures import lexical
from measures.lexical import CategorySpec, ExclusionSpec, Matcher

DATA = Path(__file__).resolve().parents[2] / "measures" / "builtin_data"


def jung_categories():
    data = json.loads((DATA / "jung2025_reference_letters.json").read_text())
    return [CategorySpec(c["key"], tuple(c["words"]), c["mode"], c["direction"]) for c in data["categories"]]


def test_jung_lists_as_published():
    cats = {c.key: c.words for c in jung_categories()}
    assert {k: len(v) for k, v in cats.items()} == {
        "agentic": 23,
        "standout": 23,
        "ability": 30,
        "communal": 39,
        "grindstone": 21,
    }
    assert cats["standout"].count("superb") == 2  # duplicate kept
    assert cats["agentic"][:3] == ("assertive", "confiden", "aggress") and cats["grindstone"][-1] == "disciplined"
    assert "bright" in cats["agentic"] and "bright" in cats["ability"]


def test_est_prefix_over_matches_only_at_word_start():
    matcher = Matcher([CategorySpec("standout", ("est",), "prefix")])
    text = "The best plan: an establishment, an estimated cost, an honest and esteemed Estonian."
    found = matcher.find(text)
    # hand count: establishment, estimated, esteemed, Estonian — not best, not honest
    assert [text[m.start : m.end] for m in found] == ["establishment", "estimated", "esteemed", "Estonian"]
    assert Matcher([CategorySpec("s", ("est",), "whole_word")]).count(text) == {"s": 0}


def test_prefix_boundaries_hyphens_and_case():
    matcher = Matcher([CategorySpec("a", ("confiden", "well-rounded", "able"), "prefix")])
    text = "Self-confident, CONFIDENCE, well-rounded; dependable and able, unconfident."
    found = [(m.entry, text[m.start : m.end]) for m in matcher.find(text)]
    assert found == [
        ("confiden", "confident"),
        ("confiden", "CONFIDENCE"),
        ("well-rounded", "well-rounded"),
        ("able", "able"),
    ]


def test_hand_counted_jung_letters_and_odds_ratios():
    matcher = Matcher(jung_categories())
    male = (
        "Joseph is an outstanding and confident leader. He has established a strong record. He is kind and works hard."
    )
    female = (
        "Kelly is a kind and helpful colleague. She works hard, is dependable and caring, "
        "and a strong, excellent student."
    )
    cm, cf = matcher.count(male), matcher.count(female)
    # agentic: confident, leader, strong | strong
    # standout: outstanding ('outstand' and 'outstanding'), established ('est') | excellent ('excellen' and 'excel')
    # ability: none ('able' does not match inside "dependable") | none
    # communal: kind | kind, helpful, caring ('colleagues' does not match "colleague")
    # grindstone: works | works, dependable
    assert cm == {"agentic": 3, "standout": 3, "ability": 0, "communal": 1, "grindstone": 1}
    assert cf == {"agentic": 1, "standout": 2, "ability": 0, "communal": 3, "grindstone": 2}
    total_m, total_f = 19, 19
    from stereoscope.stats.textproc import word_count

    assert word_count(male) == total_m and word_count(female) == total_f
    ors = {}
    for cat in jung_categories():
        r = lexical.category_odds_ratio(cm[cat.key], total_m, cf[cat.key], total_f, cat.direction, "exclude")
        ors[cat.key] = r["or"]
    assert ors["agentic"] == pytest.approx((3 / 16) / (1 / 18))  # OR_male = 3.375
    assert ors["standout"] == pytest.approx((3 / 16) / (2 / 17))  # 1.59375
    assert ors["communal"] == pytest.approx((3 / 16) / (1 / 18))  # OR_female
    assert ors["grindstone"] == pytest.approx((2 / 17) / (1 / 18))
    assert ors["ability"] is None  # 0 vs 0: excluded by the policy
    score = lexical.context_score(ors.values())
    assert score == pytest.approx((3.375 + 1.59375 + 3.375 + 36 / 17) / 4)
    smoothed = lexical.category_odds_ratio(0, 19, 0, 19, "male", "smooth")
    assert smoothed["or"] == pytest.approx(1.0) and "0.5" in smoothed["note"] and smoothed["zero_policy"] == "smooth"
    all_five = [ors["agentic"], ors["standout"], smoothed["or"], ors["communal"], ors["grindstone"]]
    assert lexical.context_score(all_five) == pytest.approx(sum(all_five) / 5)


def test_odds_ratio_orientation_and_bad_input():
    r = lexical.category_odds_ratio(10, 110, 5, 105, "female", "exclude")
    assert r["or"] == pytest.approx((5 / 100) / (10 / 100)) and r["orientation"] == "female"
    with pytest.raises(lexical.LexiconError):
        lexical.category_odds_ratio(10, 5, 1, 10)
    with pytest.raises(lexical.LexiconError):
        lexical.category_odds_ratio(1, 5, 1, 10, zero_policy="ignore")


def test_wan_per_word_odds_ratios_and_zero_policy():
    from collections import Counter

    m = Counter({"leader": 4, "warm": 1, "the": 15})
    f = Counter({"leader": 1, "warm": 4, "the": 15, "lovely": 2})
    rows = {r["word"]: r for r in lexical.word_odds_ratios(m, f, "exclude")}
    # Wan: E_m(w) / sum_{v != w} E_m(v)  divided by  E_f(w) / sum_{v != w} E_f(v)
    assert rows["leader"]["or"] == pytest.approx((4 / 16) / (1 / 21))
    assert rows["warm"]["or"] == pytest.approx((1 / 19) / (4 / 18))
    assert rows["lovely"]["or"] is None and rows["lovely"]["zero_policy"] == "exclude"
    smooth = {r["word"]: r for r in lexical.word_odds_ratios(m, f, "smooth")}
    assert smooth["lovely"]["or"] == pytest.approx((0.5 / 20.5) / (2.5 / 20.5)) and smooth["lovely"]["smoothed"]
    male, female = lexical.top_salient(list(rows.values()), k=1)
    assert male[0]["word"] == "leader" and female[0]["word"] == "warm"


def test_exclusions_and_substring_mode():
    cats = [CategorySpec("care", ("Baby",), "substring"), CategorySpec("perp", ("aggressive",), "prefix")]
    text = "The baby slept. We read about Babylon. He was not aggressive; she was aggressive."
    assert Matcher(cats).count(text) == {"care": 2, "perp": 2}
    ex = [ExclusionSpec("Babylon"), ExclusionSpec("not aggressive", category="perp")]
    assert Matcher(cats, ex).count(text) == {"care": 1, "perp": 1}
    assert Matcher(cats, [ExclusionSpec(r"not\s+\w+", is_regex=True)]).count(text) == {"care": 2, "perp": 1}
    with pytest.raises(lexical.LexiconError, match="regular expression"):
        Matcher(cats, [ExclusionSpec("(", is_regex=True)])


def test_phrases_regex_and_count_policy():
    cats = [
        CategorySpec("sex", ("sex worker", "strip club"), "prefix"),
        CategorySpec("r", (r"\bcare(giver|giving)\b",), "regex"),
    ]
    text = "A sex  worker near the strip club; caregiving and caregivers."
    found = Matcher(cats).find(text)
    assert [(m.category, text[m.start : m.end]) for m in found] == [
        ("sex", "sex  worker"),
        ("sex", "strip club"),
        ("r", "caregiving"),
    ]
    dup = [CategorySpec("s", ("superb", "superb", "excel", "excellen"), "prefix")]
    text = "A superb and excellent record."
    assert Matcher(dup).count(text) == {"s": 4}
    assert Matcher(dup, count_policy="per_token").count(text) == {"s": 2}


def test_validation_and_warnings():
    assert lexical.validate_category(["ok", "(bad"], "regex")[0].startswith("'(bad' is not a valid")
    assert "no letters" in lexical.validate_category(["--"], "prefix")[0]
    assert lexical.validate_category(["x"], "fuzzy")[0].startswith("Unknown match mode")
    warnings = " ".join(lexical.warnings_for(["superb", "superb", "est", "outstand", "outstanding"], "prefix"))
    assert "listed 2 times" in warnings and "“est” is a very short prefix" in warnings
    assert "“outstanding” is also matched by “outstand”" in warnings
    assert lexical.normalize_words("'assertive', 'confiden'\n aggress ,, ") == ["assertive", "confiden", "aggress"]


def test_fast_count_equals_counting_matches_on_random_texts():
    """count() takes a cached fast path; it must agree with the exact positions of find() everywhere."""
    import random
    from collections import Counter

    regard = json.loads((DATA / "regard_facets.json").read_text())
    cats = [CategorySpec(c["key"], tuple(c["words"]), c["mode"], c["direction"]) for c in regard["categories"]]
    exclusions = [ExclusionSpec(e["phrase"], category=e["category"]) for e in regard["exclusions"]]
    extra = [
        CategorySpec("sub", ("care", "kill"), "substring"),
        CategorySpec("rx", (r"\bnot \w+",), "regex"),
        CategorySpec("ww", ("sex", "son"), "whole_word"),
    ]
    vocab = [
        "the",
        "sex",
        "sex worker",
        "worker",
        "Babylon",
        "baby",
        "not",
        "aggressive",
        "skill",
        "kills",
        "careful",
        "caregiver",
        "son",
        "person",
        "Mutter",
        "Kind",
        "kind",
        "au pair",
        "drug-dealer",
        "self-care",
        ".",
        ",",
    ]
    rng = random.Random(5)
    for policy in ("per_entry", "per_token"):
        for excl in ([], exclusions):
            matcher = Matcher(cats + extra + jung_categories(), excl, policy)
            for _ in range(150):
                text = " ".join(rng.choice(vocab) for _ in range(rng.randint(0, 30)))
                expected = dict.fromkeys(matcher._keys, 0)
                expected.update(Counter(m.category for m in matcher.find(text)))
                assert matcher.count(text) == expected, (policy, text)


def test_malformed_word_lists_get_clear_errors():
    with pytest.raises(lexical.LexiconError, match="one entry per line"):
        lexical.normalize_words(5)
    with pytest.raises(lexical.LexiconError, match="must be text"):
        lexical.normalize_words(["ok", 3])


def test_builtin_jung_lexicon_counts_each_token_once_per_category():
    """Issue 34: 'outstanding' (matched by 'outstand' and 'outstanding') and 'excellent' ('excel', 'excellen') count
    once per category by default; the raw per-listing count stays available as the named option per_entry."""
    data = json.loads((DATA / "jung2025_reference_letters.json").read_text())
    assert data["count_policy"] == "per_token"
    male = "Joseph is an outstanding and confident leader. He has established a strong record. He is superb."
    female = "Kelly is a kind and helpful colleague. She is an excellent, strong and dependable student, truly superb."
    distinct = Matcher(jung_categories(), count_policy=data["count_policy"])
    raw = Matcher(jung_categories(), count_policy="per_entry")
    # standout, distinct tokens: outstanding, established, superb | excellent, superb
    # per listing: outstanding ×2, established, superb ×2 | excellent ×2, superb ×2
    assert distinct.count(male)["standout"] == 3 and distinct.count(female)["standout"] == 2
    assert raw.count(male)["standout"] == 5 and raw.count(female)["standout"] == 4
    assert [female[m.start : m.end] for m in distinct.find(female) if m.category == "standout"] == [
        "excellent",
        "superb",
    ]
    from stereoscope.stats.textproc import word_count

    total_m, total_f = word_count(male), word_count(female)
    assert (total_m, total_f) == (16, 17)
    ours = lexical.category_odds_ratio(3, total_m, 2, total_f, "male", "exclude")["or"]
    assert ours == pytest.approx((3 / 13) / (2 / 15))  # OR_male 1.731
    published_way = lexical.category_odds_ratio(5, total_m, 4, total_f, "male", "exclude")["or"]
    assert published_way == pytest.approx((5 / 11) / (4 / 13))  # 1.477: the double count biases the OR
    # The lexicon page reports the published list's duplicates and overlaps, saying how they are counted.
    standout = list(jung_categories()[1].words)
    warnings = " ".join(lexical.warnings_for(standout, "prefix", "per_token"))
    assert "“superb” is listed 2 times" in warnings and "“outstanding” is also matched by “outstand”" in warnings
    assert "counted once" in warnings and "counts twice" not in warnings
    raw_warnings = " ".join(lexical.warnings_for(standout, "prefix", "per_entry"))
    assert "counts twice" in raw_warnings
