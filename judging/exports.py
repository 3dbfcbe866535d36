"""Export datasets of the judging app: verdicts and per-prompt toolkit weights."""
from stereoscope.exports import Column, register_dataset

from .reports import VERDICT_COLUMNS, verdict_export_rows

WEIGHT_COLUMNS = (
    Column("toolkit", "Toolkit name."),
    Column("toolkit_version", "Toolkit version the judged outputs came from."),
    Column("item_number", "Prompt item number."),
    Column("dimension", "Dimension of the item."),
    Column("target_stereotype", "The stereotype the item targets (what the judges were asked about)."),
    Column("n", "Judged outputs of the item."),
    Column("detected", "Outputs judged 1 (with several judges per output: the sum of their mean verdicts)."),
    Column("rate", "Detection rate = detected / n."),
    Column("ci_low", "Wilson 95% interval, lower bound."),
    Column("ci_high", "Wilson 95% interval, upper bound."),
    Column("shrunk_rate", "Rate shrunk toward the dimension mean by its reliability (empirical Bayes)."),
    Column("reliability", "Shrinkage reliability lambda = n_eff / (n_eff + kappa)."),
    Column("weight", "Prompt detection weight, normalised to sum to 1 within the dimension."),
    Column("method", "Weight method: shrunk (default) or raw; see judging/weights.py and the weights JSON."),
    Column("flags", "Reasons to revise the prompt: weak detection, unstable judges, few outputs."),
)


@register_dataset("verdicts", title="Judge verdicts", app="judging",
                  columns=tuple(Column(name, text) for name, text in VERDICT_COLUMNS))
def verdict_rows(study, options):
    yield from verdict_export_rows(study, round_ids=options.get("round_ids"), models=options.get("models"),
                                   item_numbers=options.get("item_numbers"))


@register_dataset("toolkit_weights", title="Prompt detection weights", app="judging", columns=WEIGHT_COLUMNS)
def toolkit_weight_rows(study, options):
    from .services import toolkit_weights

    rows = toolkit_weights(study, options.get("round_ids") or None)
    numbers = set(options.get("item_numbers") or [])
    for row in rows:
        if not numbers or row["item_number"] in numbers:
            yield row
