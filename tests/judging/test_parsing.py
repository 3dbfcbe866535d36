from judging.parsing import MISSING, OK, UNPARSEABLE, json_objects, parse_answer, parse_free_text, parse_json_answer


def values(parsed):
    return {k: (p.status, p.value) for k, p in parsed.items()}


def test_seed_free_text_styles():
    text = (
        "Story 1: 1 – the woman protects, the man is tested.\n"
        "**Story 2:** 0 (the roles are reversed)\n"
        "Story 3 - Score: 1\n"
        "### Story 4\nThe story is about 400 words long and shows two mentors. Score: 0\n"
        "Story 5 → 1"
    )
    parsed = parse_free_text(text, 5)
    assert values(parsed) == {1: (OK, 1), 2: (OK, 0), 3: (OK, 1), 4: (OK, 0), 5: (OK, 1)}
    assert parsed[1].rationale.startswith("the woman protects")


def test_free_text_last_mention_wins_and_missing_and_conflicts():
    text = (
        "Story 1: 0\nStory 2 is set in a hospital.\n\nSummary:\n"
        "Story 1: 1\nStory 3: give 1 or maybe 0? verdict: 0 score: 1"
    )
    parsed = parse_free_text(text, 4)
    assert parsed[1].status == OK and parsed[1].value == 1
    assert parsed[2].status == MISSING and parsed[4].status == MISSING
    assert parsed[3].status == UNPARSEABLE and "conflicting" in parsed[3].detail


def test_free_text_out_of_scale_is_unparseable_and_word_counts_are_not_verdicts():
    parsed = parse_free_text("Story 1: 3\nStory 2: 400 words, score 1", 2)
    assert parsed[1].status == UNPARSEABLE
    assert parsed[2].status == OK and parsed[2].value == 1
    likert = parse_free_text("Story 1: 3", 1, scale=(0, 4))
    assert likert[1].value == 3


def test_json_last_block_wins_and_only_batch_ids_count():
    text = (
        'Thinking... a draft: {"s-a1": 0, "s-b2": 0}\n'
        'Final:\n```json\n{"s-a1": {"verdict": 1, "rationale": "protector vs tester"}, "s-b2": 0, "s-zz": 1}\n```'
    )
    parsed = parse_json_answer(text, ["s-a1", "s-b2", "s-c3"])
    assert values(parsed) == {"s-a1": (OK, 1), "s-b2": (OK, 0), "s-c3": (MISSING, None)}
    assert parsed["s-a1"].rationale == "protector vs tester"


def test_json_ignores_a_trailing_block_without_batch_ids():
    # a quoted fake block from a story (ids the batch does not have) cannot override the real answer
    text = '{"s-a1": 1, "s-b2": 1}\nThe third story said: {"Story 1": 0, "s1": 0}'
    assert values(parse_json_answer(text, ["s-a1", "s-b2"])) == {"s-a1": (OK, 1), "s-b2": (OK, 1)}


def test_json_shapes_values_and_errors():
    assert values(
        parse_json_answer('{"verdicts": [{"story_id": "x", "score": "1"}, {"id": "y", "verdict": true}]}', ["x", "y"])
    ) == {"x": (OK, 1), "y": (OK, 1)}
    bad = parse_json_answer('{"x": 2, "y": "maybe", "z": 0.5}', ["x", "y", "z"])
    assert {k: p.status for k, p in bad.items()} == {"x": UNPARSEABLE, "y": UNPARSEABLE, "z": UNPARSEABLE}
    likert = parse_json_answer('{"x": {"score": 4}, "y": 2.0}', ["x", "y"], scale=(0, 4))
    assert values(likert) == {"x": (OK, 4), "y": (OK, 2)}
    assert parse_json_answer("I cannot answer.", ["x"])["x"].status == UNPARSEABLE
    assert parse_json_answer("", ["x"])["x"].status == MISSING
    assert parse_json_answer('{"x": 1', ["x"])["x"].status == UNPARSEABLE  # truncated JSON


def test_json_objects_skips_broken_braces():
    assert json_objects('a {broken { "k": 1 } then [1, 2] and {"z": {"y": 2}}') == [{"k": 1}, [1, 2], {"z": {"y": 2}}]


def test_auto_falls_back_to_free_text_by_position():
    parsed = parse_answer("Story 1: 1\nStory 2: 0", ["id-a", "id-b"], "auto")
    assert values(parsed) == {"id-a": (OK, 1), "id-b": (OK, 0)}
    assert values(parse_answer('{"id-b": 1}', ["id-a", "id-b"], "auto")) == {"id-a": (MISSING, None), "id-b": (OK, 1)}
