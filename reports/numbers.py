"""How a report prints numbers (APA style): fixed decimals, no leading zero for values that cannot exceed 1 in size
(p, r, α, κ), "< .001" for small p, and "—" for anything undefined (None, NaN, infinite). Never a raw float."""

import math

DASH = "—"


def defined(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def num(value, digits=2, bounded=False):
    """`value` with `digits` decimals ("—" when undefined); bounded: no leading zero (APA, for |x| ≤ 1)."""
    if not defined(value):
        return DASH
    text = f"{value:.{digits}f}"
    if float(text) == 0:
        text = text.lstrip("-")
    if bounded:
        text = text.replace("0.", ".", 1)
    return text


def integer(value):
    return f"{int(value):,}" if defined(value) else DASH


def p_value(p):
    if not defined(p):
        return DASH
    return "< .001" if p < 0.001 else num(p, 3, bounded=True)


def pct(value, digits=1):
    return f"{num(value * 100, digits)}%" if defined(value) else DASH


def mean_sd(mean, sd, digits=2):
    if not defined(mean):
        return DASH
    return f"{num(mean, digits)} ({num(sd, digits)})" if defined(sd) else num(mean, digits)


def ci(low, high, digits=2, bounded=False):
    if not (defined(low) and defined(high)):
        return DASH
    return f"[{num(low, digits, bounded)}, {num(high, digits, bounded)}]"
