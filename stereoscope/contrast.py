"""WCAG 2.1 colour contrast (relative luminance, contrast ratio), for colours the server computes."""

import re

RGB = tuple[int, int, int]

INK = "#1d232b"  # the body text colour in static/stereoscope/app.css
AA_TEXT, AA_LARGE = 4.5, 3.0
_RGB = re.compile(r"rgb\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)")


def parse_colour(colour: str) -> RGB:
    """(r, g, b) 0-255 from #rgb, #rrggbb or rgb(r, g, b)."""
    colour = colour.strip()
    m = _RGB.fullmatch(colour)
    if m:
        r, g, b = (int(x) for x in m.groups())
        return r, g, b
    h = colour.lstrip("#")
    if len(h) == 3:
        h = "".join(c * 2 for c in h)
    if len(h) != 6:
        raise ValueError(f"not a colour: {colour!r}")
    return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)


def luminance(colour: str) -> float:
    """Relative luminance (WCAG 2.1, 1.4.3)."""

    def channel(value: int) -> float:
        c = value / 255
        return c / 12.92 if c <= 0.04045 else float(((c + 0.055) / 1.055) ** 2.4)

    r, g, b = (channel(c) for c in parse_colour(colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(a: str, b: str) -> float:
    hi, lo = sorted([luminance(a), luminance(b)], reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def readable_ink(background: str, dark: str = INK, light: str = "#ffffff") -> str:
    """The text colour (dark or light) with the higher contrast on a background."""
    return dark if contrast_ratio(dark, background) >= contrast_ratio(light, background) else light
