"""The one "is it defined?" rule for every statistic the platform prints (no Django imports).

A statistic that divides by an error sum of squares is undefined when that sum is floating-point noise: an SD of
9.4e-16 from a recoded mean is no variance, and 0/0 is no number. Such a statistic is None with a reason (pages and
reports show "—" and the reason; the API gives null and the reason), never a huge t or a p of 1.
"""

import numpy as np

# A sum of squares this small relative to its reference is floating-point noise, not variance.
RELATIVE_TOLERANCE = 1e-10


def negligible(part, reference):
    """Whether an error sum of squares `part` is noise next to `reference` (the total sum of squares, or the sum of
    squared values); a reference below 1 is taken as 1 so that all-zero data count as no variance."""
    return part <= RELATIVE_TOLERANCE * max(reference, 1.0)


def sum_squares(values):
    values = np.asarray(values, dtype=float)
    return float(((values - values.mean()) ** 2).sum()) if values.size else 0.0


def independent_t_problem(x, y):
    """The reason a two-sample t is undefined (both groups without variance), or None."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if negligible(sum_squares(x) + sum_squares(y), sum_squares(np.concatenate([x, y]))):
        return "Zero variance within both groups (each gave the same score every time), so t is undefined."
    return None


def paired_t_problem(diff):
    """The reason a paired (or one-sample) t on differences is undefined (they do not vary), or None."""
    diff = np.asarray(diff, dtype=float)
    if negligible(sum_squares(diff), float((diff**2).sum())):
        return "Zero variance of the paired differences (every pair differs by the same amount), so t is undefined."
    return None
