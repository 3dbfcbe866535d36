"""Export datasets of the judging app: verdicts and per-prompt toolkit weights."""

from stereoscope.datasets import Column, person, register_dataset

from .models import HumanCheck
from .reports import VERDICT_COLUMNS, detected, verdict_export_rows
from .services import toolkit_weights

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
    Column("mean_model_rate", "ē: mean over generator models of the prompt's per-model detection rate."),
    Column(
        "mean_pairwise_difference",
        "d: mean over pairs of generator models of |e_a - e_b| (empty with fewer than two models).",
    ),
    Column(
        "consistency",
        "Cross-model consistency 1 - mean |p_a - p_b| over pairs of generator models' detection "
        "rates (empty with fewer than two models).",
    ),
    Column("shrunk_rate", "Rate shrunk toward the dimension mean by its reliability (empirical Bayes)."),
    Column("reliability", "Shrinkage reliability lambda = n_eff / (n_eff + kappa)."),
    Column(
        "weight",
        "Prompt detection weight. efficiency (default): ē × (1 - d) normalised to sum to the number of prompts in "
        "the dimension; consistency, shrunk, raw: normalised to sum to 1 within the dimension.",
    ),
    Column(
        "method",
        "Weight method: efficiency (default, the seed's reading), consistency, shrunk or raw; the formula is in the "
        "weights JSON.",
    ),
    Column("flags", "Reasons to revise the prompt: weak detection, unstable judges, few outputs."),
)


@register_dataset(
    "verdicts",
    title="Judge verdicts",
    app="judging",
    columns=tuple(Column(name, text) for name, text in VERDICT_COLUMNS),
)
def verdict_rows(study, options):
    yield from verdict_export_rows(
        study,
        round_ids=options.get("round_ids"),
        models=options.get("models"),
        item_numbers=options.get("item_numbers"),
    )


@register_dataset("toolkit_weights", title="Prompt detection weights", app="judging", columns=WEIGHT_COLUMNS)
def toolkit_weight_rows(study, options):

    rows = toolkit_weights(study, options.get("round_ids") or None)
    numbers = set(options.get("item_numbers") or [])
    for row in rows:
        if not numbers or row["item_number"] in numbers:
            yield row


CHECK_COLUMNS = (
    Column("round_id", "Judge round id."),
    Column("verdict_id", "Verdict id."),
    Column("output_id", "Judged output id."),
    Column("item_number", "Prompt item number."),
    Column("target_stereotype", "The question: is this stereotype present?"),
    Column("generator_model", "Model that wrote the output."),
    Column("judge_model", "Judge model."),
    Column("judge_value", "The judge's value (0/1, or the Likert score)."),
    Column("judge_detected", "The judge's 0/1 detection."),
    Column("coder", "The human verifier (pseudonym when the export pseudonymises)."),
    Column("human_value", "The human answer: 1 = present, 0 = absent."),
    Column("note", "The human's note."),
    Column("answered_at", "When the human answered (ISO 8601, UTC)."),
)


@register_dataset(
    "judge_human_checks", title="Human verification of judge verdicts", app="judging", columns=CHECK_COLUMNS
)
def human_check_rows(study, options):

    qs = (
        HumanCheck.objects.filter(verdict__round__study=study)
        .select_related("verdict", "verdict__round__template", "verdict__output", "verdict__output__item", "user")
        .order_by("verdict__round_id", "verdict_id", "user_id")
    )
    if options.get("round_ids"):
        qs = qs.filter(verdict__round_id__in=options["round_ids"])
    for c in qs:
        v = c.verdict
        yield {
            "round_id": v.round_id,
            "verdict_id": v.pk,
            "output_id": v.output_id,
            "item_number": v.output.item.number if v.output.item_id else "",
            "target_stereotype": v.question,
            "generator_model": v.output.model_identity,
            "judge_model": v.judge_model,
            "judge_value": v.value,
            "judge_detected": detected(v.value, v.round.template) if v.value is not None else None,
            "coder": person(options, c.user),
            "human_value": c.value,
            "note": c.note,
            "answered_at": c.created_at.isoformat(),
        }
