"""The one "is it defined?" rule for every statistic the platform prints (no Django imports).

A statistic that divides by an error sum of squares is undefined when that sum is floating-point noise: an SD of
9.4e-16 from a recoded mean is no variance, and 0/0 is no number. Such a statistic is None with a reason (pages and
reports show "—" and the reason; the API gives null and the reason), never a huge t or a p of 1.
"""

from collections.abc import Iterable

import numpy as np
import numpy.typing as npt

Values = npt.ArrayLike | Iterable[float]

# A sum of squares this small relative to its reference is floating-point noise, not variance.
RELATIVE_TOLERANCE = 1e-10


def negligible(part: float, reference: float) -> bool:
    """Whether an error sum of squares `part` is noise next to `reference` (the total sum of squares, or the sum of
    squared values); a reference below 1 is taken as 1 so that all-zero data count as no variance."""
    return bool(part <= RELATIVE_TOLERANCE * max(reference, 1.0))


def sum_squares(values: Values) -> float:
    array = np.asarray(values, dtype=float)
    return float(((array - array.mean()) ** 2).sum()) if array.size else 0.0


def independent_t_problem(x: Values, y: Values) -> str | None:
    """The reason a two-sample t is undefined (both groups without variance), or None."""
    a, b = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if negligible(sum_squares(a) + sum_squares(b), sum_squares(np.concatenate([a, b]))):
        return "Zero variance within both groups (each gave the same score every time), so t is undefined."
    return None


def paired_t_problem(diff: Values) -> str | None:
    """The reason a paired (or one-sample) t on differences is undefined (they do not vary), or None."""
    array = np.asarray(diff, dtype=float)
    if negligible(sum_squares(array), float((array**2).sum())):
        return "Zero variance of the paired differences (every pair differs by the same amount), so t is undefined."
    return None
