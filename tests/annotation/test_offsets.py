import pytest

from annotation.offsets import OffsetError, codepoint_to_utf16, segments, utf16_to_codepoint, validate_span

TEXT = "Zoë 👩‍🔬 met José\u0301 at the café 🎉."


def js_utf16_length(s):
    return len(s.encode("utf-16-le")) // 2


def test_utf16_roundtrip_for_every_boundary():
    for i in range(len(TEXT) + 1):
        u = codepoint_to_utf16(TEXT, i)
        assert u == js_utf16_length(TEXT[:i])
        assert utf16_to_codepoint(TEXT, u) == i


def test_offset_inside_surrogate_pair_is_rejected():
    emoji_at = TEXT.index("👩")
    with pytest.raises(OffsetError, match="inside"):
        utf16_to_codepoint(TEXT, codepoint_to_utf16(TEXT, emoji_at) + 1)
    with pytest.raises(OffsetError, match="past the end"):
        utf16_to_codepoint(TEXT, js_utf16_length(TEXT) + 1)


def test_validate_span():
    start = TEXT.index("José")
    assert validate_span(TEXT, start, start + 5)[2] == "José\u0301"
    assert validate_span(TEXT, None, None) == (None, None, "")
    for bad in [(5, 5), (-1, 3), (0, len(TEXT) + 1), (None, 3), (1.5, 3), (True, 3)]:
        with pytest.raises(OffsetError):
            validate_span(TEXT, *bad)


def test_segments_keep_overlaps():
    text = "abcdefghij"
    segs = segments(text, [("a", 1, 5), ("b", 3, 8), ("c", 3, 4)])
    assert [(s, e) for s, e, _ in segs] == [(0, 1), (1, 3), (3, 4), (4, 5), (5, 8), (8, 10)]
    assert [keys for _, _, keys in segs] == [[], ["a"], ["a", "b", "c"], ["a", "b"], ["b"], []]
    assert "".join(text[s:e] for s, e, _ in segs) == text
    assert segments("", []) == []
