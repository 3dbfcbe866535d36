"""Reads of judging that other apps use; offered through stereoscope.providers as "judging" (see apps.py)."""

from collections.abc import Callable, Collection, Iterable
from typing import TypedDict

from django.db.models import QuerySet

from generation.models import Output, Toolkit
from stereoscope.models import Study

from .models import HumanCheck, ItemWeight, JudgeRound, JudgeTemplate, Verdict, VerdictStatus

RoundIds = Collection[int] | None  # None or empty: every round


class WeightFields(TypedDict):
    """One item's detection weight, as the toolkit page and export show it."""

    weight: float
    detection_rate: float | None
    weight_ci_low: float | None
    weight_ci_high: float | None
    weight_method: str
    weight_flags: list[str]


def study_rounds(study: Study, round_ids: RoundIds = None) -> list[JudgeRound]:
    """The study's judge rounds (with their templates) in creation order, optionally only `round_ids`."""
    rounds = JudgeRound.objects.filter(study=study).select_related("template").order_by("pk")
    if round_ids:
        rounds = rounds.filter(pk__in=round_ids)
    return list(rounds)


def round_judges(judge_round: JudgeRound) -> list[str]:
    """The judge models with any verdict in the round, sorted."""
    return sorted(set(Verdict.objects.filter(round=judge_round).values_list("judge_model", flat=True)))


def ok_verdicts(rounds: Iterable[JudgeRound | int], outputs: Iterable[Output | int]) -> QuerySet[Verdict]:
    """Verdicts with a value for these outputs in these rounds (round objects or ids)."""
    return Verdict.objects.filter(round__in=rounds, output__in=outputs, status=VerdictStatus.OK, value__isnull=False)


def label_verdicts(study: Study, round_ids: RoundIds = None) -> list[tuple[int, int, str, str]]:
    """(round id, output id, judge model, label) for each OK verdict of the study's categorical rounds."""
    verdicts = Verdict.objects.filter(
        round__study=study, round__template__kind="categorical", status=VerdictStatus.OK
    ).exclude(label="")
    if round_ids:
        verdicts = verdicts.filter(round_id__in=round_ids)
    return list(
        verdicts.order_by("round_id", "output_id", "judge_model").values_list(
            "round_id", "output_id", "judge_model", "label"
        )
    )


def categorical_rounds(study: Study) -> list[tuple[JudgeRound, list[str]]]:
    """The study's rounds whose template answers with labels, with those labels."""
    return [(r, list(r.template.labels)) for r in study_rounds(study) if r.template.kind == "categorical"]


WEIGHT_FIELDS = ["weight", "detection_rate", "weight_ci_low", "weight_ci_high", "weight_method", "weight_flags"]


def item_weight_fields(toolkit: Toolkit) -> dict[int, WeightFields]:
    """{item_id: {weight, detection_rate, ...}} of the weights attached to this toolkit version."""
    return {
        w.item_id: {
            "weight": w.weight,
            "detection_rate": w.rate,
            "weight_ci_low": w.ci_low,
            "weight_ci_high": w.ci_high,
            "weight_method": w.method,
            "weight_flags": list(w.flags or []),
        }
        for w in ItemWeight.objects.filter(toolkit=toolkit)
    }


def weight_summary(values: WeightFields) -> str:
    """The toolkit page's cell: weight, detection rate and flags."""
    text = f"{values['weight']:.3f}"
    if values["detection_rate"] is not None:
        text += f" (rate {values['detection_rate']:.2f})"
    if values["weight_flags"]:
        text += " · " + "; ".join(values["weight_flags"])
    return text


# The detection weights shown beside a toolkit version's items and in its export
# (see generation/toolkits/item_extras.py).
class ItemExtras(TypedDict):
    fields: list[str]
    label: str
    values: Callable[[Toolkit], dict[int, WeightFields]]
    summary: Callable[[WeightFields], str]


TOOLKIT_ITEM_EXTRAS: ItemExtras = {
    "fields": WEIGHT_FIELDS,
    "label": "Detection weight",
    "values": item_weight_fields,
    "summary": weight_summary,
}


def study_round_queryset(study: Study) -> QuerySet[JudgeRound]:
    """The study's judge rounds as a queryset to narrow (with their templates)."""
    return JudgeRound.objects.filter(study=study).select_related("template")


def round_named(study: Study, name: str) -> JudgeRound | None:
    """The study's first judge round called `name`, or None."""
    return JudgeRound.objects.filter(study=study, name=name).order_by("pk").first()


def latest_template(study: Study, name: str) -> JudgeTemplate | None:
    """The newest version of the study's judge template `name`, or None."""
    return JudgeTemplate.objects.filter(study=study, name=name).order_by("-version").first()


def rounds_with_ok_verdicts(study: Study) -> list[tuple[int, int, int, str]]:
    """(id, scale min, scale max, name) of the study's rounds with any OK verdict, newest first."""
    return list(
        JudgeRound.objects.filter(study=study, verdicts__status=VerdictStatus.OK)
        .distinct()
        .order_by("-created_at", "-id")
        .values_list("pk", "template__scale_min", "template__scale_max", "name")
    )


def study_verdicts(study: Study, round_ids: RoundIds = None, ok_only: bool = True) -> QuerySet[Verdict]:
    """The study's verdicts (OK ones with a value unless `ok_only` is false), optionally of some rounds."""
    verdicts = Verdict.objects.filter(round__study=study)
    if ok_only:
        verdicts = verdicts.filter(status=VerdictStatus.OK, value__isnull=False)
    return verdicts.filter(round_id__in=round_ids) if round_ids else verdicts


def study_human_checks(study: Study, round_ids: RoundIds = None) -> QuerySet[HumanCheck]:
    """Human verification answers on the study's verdicts, optionally of some rounds."""
    checks = HumanCheck.objects.filter(verdict__round__study=study)
    return checks.filter(verdict__round_id__in=round_ids) if round_ids else checks


def library_templates() -> QuerySet[JudgeTemplate]:
    """Judge templates of the built-in library."""
    return JudgeTemplate.objects.filter(study__is_library=True)
