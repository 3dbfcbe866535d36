from stereoscope.stats.textproc import split_sentences, word_count, words


def test_words_keep_hyphens_and_apostrophes():
    assert words("Kelly's well-rounded, self-confident work (2024).") == [
        "Kelly's",
        "well-rounded",
        "self-confident",
        "work",
        "2024",
    ]
    assert word_count("") == 0


def test_sentence_rule_is_documented_and_offsets_exact():
    text = (
        "Dr. Smith met Ms. Jones at 5 p.m. today. She said: “Great!” Then J. K. Rowling left…\n"
        "# Heading\n\n- a list item\nIs it done? yes it is."
    )
    sents = split_sentences(text)
    assert [s.text for s in sents] == [
        "Dr. Smith met Ms. Jones at 5 p.m. today.",
        "She said: “Great!”",
        "Then J. K. Rowling left…",
        "# Heading",
        "- a list item",
        "Is it done? yes it is.",
    ]
    assert all(text[s.start : s.end] == s.text for s in sents)
    assert [s.index for s in sents] == list(range(6))
    assert split_sentences("") == [] and split_sentences("...\n\n") == []
