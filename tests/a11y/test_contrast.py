"""Contrast of colours the server computes: the formula against WCAG's published values, and every heatmap shade."""
import pytest

from judging.reports import shade
from stereoscope.contrast import AA_TEXT, INK, contrast_ratio, luminance, readable_ink


@pytest.mark.parametrize("a, b, expected", [
    ("#000000", "#ffffff", 21.0),   # the maximum, WCAG 2.1 definition of contrast ratio
    ("#ffffff", "#ffffff", 1.0),
    ("#777777", "#ffffff", 4.48),   # the well-known grey that just fails AA (WebAIM contrast checker)
    ("#767676", "#ffffff", 4.54),   # ... and the lightest grey that passes
    ("#0000ff", "#ffffff", 8.59),
])
def test_contrast_ratio_matches_published_values(a, b, expected):
    assert contrast_ratio(a, b) == pytest.approx(expected, abs=0.01)
    assert contrast_ratio(b, a) == pytest.approx(expected, abs=0.01)


def test_luminance_of_primaries_matches_the_definition():
    assert luminance("#ff0000") == pytest.approx(0.2126)
    assert luminance("rgb(0, 255, 0)") == pytest.approx(0.7152)
    assert luminance("#00f") == pytest.approx(0.0722)


def test_every_heatmap_shade_keeps_its_values_readable():
    for step in range(101):
        fill = shade(step / 100)
        assert contrast_ratio(INK, fill) >= AA_TEXT, (step, fill)
    assert contrast_ratio(INK, shade(None)) >= AA_TEXT


def test_readable_ink_picks_the_better_text_colour():
    assert readable_ink("#ffffff") == INK
    assert readable_ink("#1d232b") == "#ffffff"
