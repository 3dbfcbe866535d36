"""Reads of judging's tables used by other apps."""
from .models import ItemWeight

WEIGHT_FIELDS = ["weight", "detection_rate", "weight_ci_low", "weight_ci_high", "weight_method", "weight_flags"]


def item_weight_fields(toolkit):
    """{item_id: {weight, detection_rate, ...}} of the weights attached to this toolkit version."""
    return {
        w.item_id: {"weight": w.weight, "detection_rate": w.rate, "weight_ci_low": w.ci_low,
                    "weight_ci_high": w.ci_high, "weight_method": w.method, "weight_flags": list(w.flags or [])}
        for w in ItemWeight.objects.filter(toolkit=toolkit)
    }


def weight_summary(values):
    """The toolkit page's cell: weight, detection rate and flags."""
    text = f"{values['weight']:.3f}"
    if values["detection_rate"] is not None:
        text += f" (rate {values['detection_rate']:.2f})"
    if values["weight_flags"]:
        text += " · " + "; ".join(values["weight_flags"])
    return text
