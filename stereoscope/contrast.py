"""WCAG 2.1 colour contrast (relative luminance, contrast ratio), for colours the server computes."""
import re

INK = "#1d232b"  # the body text colour in static/stereoscope/app.css
AA_TEXT, AA_LARGE = 4.5, 3.0
_RGB = re.compile(r"rgb\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*\)")


def parse_colour(colour):
    """(r, g, b) 0-255 from #rgb, #rrggbb or rgb(r, g, b)."""
    colour = colour.strip()
    m = _RGB.fullmatch(colour)
    if m:
        return tuple(int(x) for x in m.groups())
    h = colour.lstrip("#")
    if len(h) == 3:
        h = "".join(c * 2 for c in h)
    if len(h) != 6:
        raise ValueError(f"not a colour: {colour!r}")
    return tuple(int(h[i:i + 2], 16) for i in (0, 2, 4))


def luminance(colour):
    """Relative luminance (WCAG 2.1, 1.4.3)."""
    def channel(c):
        c /= 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (channel(c) for c in parse_colour(colour))
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def contrast_ratio(a, b):
    hi, lo = sorted([luminance(a), luminance(b)], reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def readable_ink(background, dark=INK, light="#ffffff"):
    """The text colour (dark or light) with the higher contrast on a background."""
    return dark if contrast_ratio(dark, background) >= contrast_ratio(light, background) else light
