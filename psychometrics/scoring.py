"""Recoding and scale scores (no Django imports).

Input is a wide DataFrame: one row per respondent (context × repetition), one column per item id, values on the
original response scale, NaN for missing. Reverse items are recoded as min + max − x. A (sub)scale score is the
mean (or the sum) of its recoded items under the instrument's missing-data policy (see spec.missing_policy_text).
"""

import numpy as np
import pandas as pd


def recode(wide, spec):
    """Reverse items recoded as min + max − x; other items unchanged. Returns a new DataFrame."""
    out = wide.copy()
    lo, hi = spec.scale.min, spec.scale.max
    for item_id in spec.reverse_ids():
        if item_id in out.columns:
            out[item_id] = lo + hi - out[item_id]
    return out


def _score_group(values, scoring, missing):
    """values: DataFrame of one group's recoded items."""
    k = values.shape[1]
    answered = values.notna().sum(axis=1)
    mean = values.mean(axis=1, skipna=True)
    if missing.get("method") == "complete":
        ok = answered == k
    else:
        ok = answered >= np.ceil(missing.get("min_fraction", 0.5) * k - 1e-9)
        ok &= answered > 0
    score = mean if scoring == "mean" else mean * k
    return score.where(ok), answered


def score(wide, spec, recoded=False):
    """Scores per respondent: one column per subscale, then "total", plus "<name>__answered" counts."""
    values = wide if recoded else recode(wide, spec)
    result = {}
    groups = dict(spec.subscale_items())
    groups["total"] = spec.item_ids()
    for name, ids in groups.items():
        cols = [i for i in ids if i in values.columns]
        if not cols:
            continue
        s, answered = _score_group(values[cols].astype(float), spec.scoring, spec.missing)
        result[name] = s
        result[f"{name}__answered"] = answered
    return pd.DataFrame(result, index=wide.index)


def score_names(spec):
    return list(spec.subscale_items()) + ["total"]
