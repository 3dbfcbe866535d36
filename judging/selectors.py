"""Reads of judging that other apps use; offered through stereoscope.providers as "judging" (see apps.py)."""
from .models import JudgeRound, Verdict, VerdictStatus


def study_rounds(study, round_ids=None):
    """The study's judge rounds (with their templates) in creation order, optionally only `round_ids`."""
    rounds = JudgeRound.objects.filter(study=study).select_related("template").order_by("pk")
    if round_ids:
        rounds = rounds.filter(pk__in=round_ids)
    return list(rounds)


def round_judges(judge_round):
    """The judge models with any verdict in the round, sorted."""
    return sorted(set(Verdict.objects.filter(round=judge_round).values_list("judge_model", flat=True)))


def ok_verdicts(rounds, outputs):
    """Verdicts with a value for these outputs in these rounds (round objects or ids)."""
    return Verdict.objects.filter(round__in=rounds, output__in=outputs, status=VerdictStatus.OK, value__isnull=False)


def label_verdicts(study, round_ids=None):
    """(round id, output id, judge model, label) for each OK verdict of the study's categorical rounds."""
    verdicts = Verdict.objects.filter(round__study=study, round__template__kind="categorical", status=VerdictStatus.OK
                                      ).exclude(label="")
    if round_ids:
        verdicts = verdicts.filter(round_id__in=round_ids)
    return list(verdicts.order_by("round_id", "output_id", "judge_model")
                .values_list("round_id", "output_id", "judge_model", "label"))


def categorical_rounds(study):
    """The study's rounds whose template answers with labels, with those labels."""
    return [(r, list(r.template.labels)) for r in study_rounds(study) if r.template.kind == "categorical"]
