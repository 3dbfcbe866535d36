"""A researcher's regular expression (a regex category entry or exclusion) searches one text for at most
lexical.USER_PATTERN_SECONDS: one that backtracks catastrophically, such as (a|a)+b, stops with a message naming it,
in the API's highlight (a 400), in the highlight layer of a page (that lexicon skipped, said so) and in a measure
run, instead of holding a web request or a worker (found by the API sweep of 2026-11-29: 24 characters took 1.5 s,
and each more doubles it)."""

import pytest

from measures import lexical, services
from measures.highlight import render_layer
from measures.lexical import CategorySpec, ExclusionSpec, LexiconError, Matcher

SLOW = r"(a|a)+b"
TEXT = "a" * 22  # the re module takes about 1.4 s here, so the bound below must stop it


def slow_lexicon(study):
    data = {"name": "Slow", "categories": [{"key": "slow", "name": "Slow", "mode": "regex", "words": [SLOW]}]}
    return services.create_lexicon(study, services.validate_lexicon_data(data))


@pytest.fixture
def short_bound(monkeypatch):
    monkeypatch.setattr(lexical, "USER_PATTERN_SECONDS", 0.05)


def test_a_backtracking_category_regex_stops_with_a_message(short_bound):
    matcher = Matcher([CategorySpec("slow", (SLOW,), "regex")])
    with pytest.raises(LexiconError, match=r"took more than 0\.05 s on one text, '\(a\|a\)\+b' when"):
        matcher.find(TEXT)
    with pytest.raises(LexiconError, match=r"\(a\|a\)\+b"):
        matcher.count(TEXT)


def test_a_lexicons_regexes_share_one_budget_per_text(monkeypatch):
    """Many patterns each under the limit do not add up to many times it: a lexicon's regexes share one budget per
    text (a researcher may list thousands of entries), and the next text gets a new one."""
    monkeypatch.setattr(lexical, "USER_PATTERN_SECONDS", 0.3)
    slow_ones = tuple(f"(a|a)+b{'x' * i}" for i in range(20))  # each about 0.2 s on 18 characters
    matcher = Matcher([CategorySpec("slow", slow_ones, "regex")])
    with pytest.raises(LexiconError, match="took more than 0.3 s on one text"):
        matcher.find("a" * 18)
    found = {m.entry for m in matcher.find("ab and abx")}  # a new text, a new budget: every pattern runs
    assert found == {"(a|a)+b", "(a|a)+bx"}


def test_a_backtracking_exclusion_regex_stops_with_a_message(short_bound):
    matcher = Matcher([CategorySpec("a", ("aaa",), "prefix")], [ExclusionSpec(SLOW, is_regex=True)])
    with pytest.raises(LexiconError, match="took more than"):
        matcher.find(TEXT)


def test_bounded_patterns_find_what_re_finds():
    """The `regex` package in its re-compatible mode finds what `re` finds, case-insensitively, for the kinds of
    pattern lexicons hold (the run-equivalence tests compare whole runs)."""
    import re

    text = "Not aggressive. NOT  calm; she's a self-made leader, Leader's plan: 3 nurses & 2 doctors. Über-Mutter."
    for pattern in [r"\bnot\s+\w+", r"lead(?:er|ing)\b", r"\d+\s+\w+s\b", r"(?<=a )\w+-\w+", r"über\W?mutter", r"'s"]:
        want = [(m.start(), m.end()) for m in re.finditer(pattern, text, re.IGNORECASE)]
        got = [(m.start(), m.end()) for m in lexical.UserPattern(pattern).finditer(text)]
        assert got == want and want, pattern


@pytest.mark.django_db
def test_the_highlight_api_answers_400_and_the_layer_skips_the_lexicon(short_bound, roles, api_for):
    study = roles["a"]
    lexicon = slow_lexicon(study)
    coder = api_for(roles["users"]["coder"])
    answer = coder.post(f"/api/studies/{study.pk}/lexicons/{lexicon.pk}/highlight/", {"text": TEXT}, format="json")
    assert answer.status_code == 400 and "took more than" in answer.json()["detail"]
    html = render_layer(f"<b>{TEXT}</b>", lexicon)
    assert "Not highlighted: Slow." in html and "took more than" in html
    assert "&lt;b&gt;" + TEXT in html and "<mark" not in html


@pytest.mark.django_db
def test_a_measure_run_with_a_backtracking_regex_fails_saying_which(short_bound, roles, make_outputs):
    from measures import scoring
    from measures.models import MeasureRun

    study = roles["a"]
    lexicon = slow_lexicon(study)
    make_outputs(study, [{"text": f"Kelly is here. {TEXT}", "slot_values": {"name": "Kelly"}}])
    run = scoring.create_run(study, name="slow", lexicons=[lexicon], classifier="")
    with pytest.raises(LexiconError):
        scoring.run_foreground(run)
    run = MeasureRun.objects.get(pk=run.pk)
    assert run.status == "failed" and "(a|a)+b" in run.message and "took more than" in run.message
