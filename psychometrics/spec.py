"""The instrument JSON format (no Django imports).

Minimal file::

    {"name": "Mini", "version": "1",
     "scale": {"min": 0, "max": 5, "labels": {"0": "disagree strongly", "5": "agree strongly"}},
     "subscales": ["HS", "BS"],
     "items": [{"id": "1", "text": "...", "subscale": "BS", "reverse": false}]}

Optional keys: description, source, instruction, scoring ("mean" | "sum"), missing ({"method": "prorate" |
"complete", "min_fraction": 0.5}), parallel_form ({"name": ..., "version": ...}: the form this one is an alternate
of), and per item `parallel` (the linked item id in that form) and `options`: the item's own answer options,
[{"text": "not at all", "weight": 0}, {"text": "a lot", "weight": 4}], shown instead of the scale and scored by
their weights (the direction is in the weights, so such an item is not reverse-coded).
`"scale": {"continuous": true}` declares continuous data (imported human scores); min/max are then optional
and reverse items need them.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from stereoscope import schemas

SCORING = ("mean", "sum")
MISSING_METHODS = ("prorate", "complete")
CFA_MISSING = ("listwise", "fiml")
DEFAULT_MISSING = {"method": "prorate", "min_fraction": 0.5}


class SpecError(ValueError):
    """The instrument file is invalid; the message lists every problem found."""


@dataclass
class Scale:
    min: float | None
    max: float | None
    labels: dict = field(default_factory=dict)  # {int point: label}
    continuous: bool = False

    def points(self):
        if self.continuous:
            return []
        return list(range(int(self.min), int(self.max) + 1))

    @property
    def midpoint(self):
        return None if self.min is None or self.max is None else (self.min + self.max) / 2


@dataclass(frozen=True)
class OptionSpec:
    text: str
    weight: float


@dataclass
class ItemSpec:
    id: str
    text: str
    subscale: str
    reverse: bool = False
    parallel: str | None = None
    options: list = field(default_factory=list)  # [OptionSpec]: the item's own answer options, empty = the scale


@dataclass
class InstrumentSpec:
    name: str
    version: str
    scale: Scale
    subscales: list
    items: list
    description: str = ""
    source: str = ""
    instruction: str = ""
    scoring: str = "mean"
    missing: dict = field(default_factory=lambda: dict(DEFAULT_MISSING))
    parallel_form: dict | None = None

    def item_ids(self):
        return [item.id for item in self.items]

    def subscale_items(self):
        """{subscale: [item ids]} in item order, only subscales with items."""
        groups = {s: [] for s in self.subscales}
        for item in self.items:
            groups.setdefault(item.subscale, []).append(item.id)
        return {s: ids for s, ids in groups.items() if ids}

    def reverse_ids(self):
        """Reverse-coded items; an item with its own weighted options is never recoded."""
        return {item.id for item in self.items if item.reverse and not item.options}

    def missing_policy_text(self):
        return missing_policy_text(self.missing, self.scoring)


def missing_policy_text(missing, scoring="mean"):
    if missing.get("cfa") == "fiml":
        tail = (
            "reliability uses contexts with all analysed items answered (listwise deletion; item–total r and "
            "α if deleted on the cases of their subscale's α); the CFA uses every context with an answer "
            "(full-information ML)."
        )
    else:
        tail = (
            "reliability and CFA use contexts with all analysed items answered (listwise deletion; item–total r "
            "and α if deleted on the cases of their subscale's α)."
        )
    if missing.get("method") == "complete":
        return f"Missing data: a score is computed only when every item of the (sub)scale was answered; {tail}"
    frac = missing.get("min_fraction", 0.5)
    how = (
        "the mean of the answered items"
        if scoring == "mean"
        else "the prorated sum (mean of answered items × number of items)"
    )
    return (
        f"Missing data: a (sub)scale score is {how} when at least {frac:.0%} of its items were answered, "
        f"otherwise missing; {tail}"
    )


SCHEMA = schemas.register("instrument", Path(__file__).resolve().parent / "schema" / "instrument.schema.json")


def parse_item_options(raw, where, errors):
    """An item's own answer options (shape checked by the schema): [OptionSpec], noting duplicate texts."""
    options = [OptionSpec(option["text"].strip(), option["weight"]) for option in raw or []]
    texts = [o.text.lower() for o in options]
    if len(set(texts)) != len(texts):
        errors.append(f"{where}: duplicate option texts.")
    return options


def _scale(data, errors):
    """The scale and its cross-field rules: min below max, a discrete scale's whole points, labels inside it."""
    lo, hi, continuous = data.get("min"), data.get("max"), data.get("continuous", False)
    if not continuous:
        if lo is None or hi is None:
            errors.append("scale.min and scale.max are required unless the scale is continuous.")
        elif lo != int(lo) or hi != int(hi):
            errors.append("A discrete scale has whole-number min and max.")
        elif hi - lo > 100:
            errors.append("A discrete scale has at most 101 points.")
    if lo is not None and hi is not None and hi <= lo:
        errors.append(f"scale.max ({hi}) must be greater than scale.min ({lo}).")
    labels = {int(key.strip()): label.strip() for key, label in (data.get("labels") or {}).items()}
    for point in labels:
        if lo is not None and hi is not None and not (lo <= point <= hi):
            errors.append(f"scale.labels has point {point} outside {lo}–{hi}.")
    return Scale(lo, hi, labels, continuous)


def _number(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _well_formed_scale(scale):
    """The parts of a scale the schema accepts (the schema reports the rest)."""
    labels = scale.get("labels") if isinstance(scale.get("labels"), dict) else {}
    return {
        "min": _number(scale.get("min")),
        "max": _number(scale.get("max")),
        "continuous": scale.get("continuous") is True,
        "labels": {k: v for k, v in labels.items() if isinstance(v, str) and re.fullmatch(r"\s*[+-]?\d+\s*", k)},
    }


def _well_formed_item(raw):
    options = raw.get("options") if isinstance(raw, dict) else None
    return (
        isinstance(raw, dict)
        and isinstance(raw.get("id"), (str, int))
        and not isinstance(raw.get("id"), bool)
        and isinstance(raw.get("text"), str)
        and isinstance(raw.get("subscale") or "", str)
        and isinstance(raw.get("reverse", False), bool)
        and (
            options is None
            or all(
                isinstance(o, dict) and isinstance(o.get("text"), str) and _number(o.get("weight")) is not None
                for o in options
                if isinstance(options, list)
            )
            and isinstance(options, list)
        )
    )


def _item(raw, scale, subscales, errors):
    item_id = str(raw["id"]).strip()
    where = f"item {item_id}"
    subscale = raw.get("subscale") or ""
    if subscales and subscale not in subscales:
        errors.append(f"{where}: subscale {subscale!r} is not one of {', '.join(subscales)}.")
    reverse = raw.get("reverse", False)
    if reverse and (scale.min is None or scale.max is None):
        errors.append(f"{where}: a reverse item needs scale.min and scale.max (recoded as min + max − x).")
    options = parse_item_options(raw.get("options"), where, errors)
    if options and reverse:
        errors.append(
            f"{where}: an item with its own options carries its direction in the weights; set “reverse” to false."
        )
    parallel = raw.get("parallel")
    return ItemSpec(
        item_id, raw["text"].strip(), subscale, reverse, None if parallel is None else str(parallel), options
    )


def _missing(data):
    missing = data.get("missing", DEFAULT_MISSING)
    return {
        "method": missing.get("method", "prorate"),
        "min_fraction": missing.get("min_fraction", 0.5),
        **({"cfa": missing["cfa"]} if "cfa" in missing else {}),
    }


def parse_instrument(data: Any) -> InstrumentSpec:
    """Validate a decoded JSON object and return an InstrumentSpec; raise SpecError listing every problem.

    The shape is the schema's (psychometrics/schema/instrument.schema.json); code checks the rules across fields."""
    errors = schemas.messages(data, SCHEMA, what="The instrument")
    if not isinstance(data, dict):
        raise SpecError("; ".join(errors))
    # the rules across fields are checked on the parts the schema found well formed, so one pass reports both
    has_scale = isinstance(data.get("scale"), dict)
    scale = _scale(_well_formed_scale(data["scale"]), errors) if has_scale else Scale(None, None)
    subscales = [s for s in data.get("subscales") or [] if isinstance(s, str)]
    items, seen = [], set()
    for raw in data.get("items") if isinstance(data.get("items"), list) else []:
        if not _well_formed_item(raw):
            continue
        item = _item(raw, scale, subscales, errors)
        if item.id in seen:
            errors.append(f"item {item.id}: duplicate id.")
        seen.add(item.id)
        items.append(item)
    if not subscales:
        subscales = list(dict.fromkeys(i.subscale for i in items if i.subscale))
    if errors:
        raise SpecError("; ".join(errors))
    return InstrumentSpec(
        name=data["name"].strip(),
        version=str(data.get("version", "1")).strip(),
        scale=scale,
        subscales=subscales,
        items=items,
        description=data.get("description", ""),
        source=data.get("source", ""),
        instruction=data.get("instruction", ""),
        scoring=data.get("scoring", "mean"),
        missing=_missing(data),
        parallel_form=data.get("parallel_form"),
    )


def to_dict(spec: InstrumentSpec) -> dict[str, Any]:
    """The JSON form of a spec (round-trips through parse_instrument)."""
    scale = {"continuous": True} if spec.scale.continuous else {}
    if spec.scale.min is not None:
        scale["min"] = spec.scale.min
    if spec.scale.max is not None:
        scale["max"] = spec.scale.max
    if spec.scale.labels:
        scale["labels"] = {str(k): v for k, v in sorted(spec.scale.labels.items())}
    data = {"name": spec.name, "version": spec.version, "scale": scale, "subscales": list(spec.subscales), "items": []}
    for item in spec.items:
        row = {"id": item.id, "text": item.text, "subscale": item.subscale, "reverse": item.reverse}
        if item.parallel:
            row["parallel"] = item.parallel
        if item.options:
            row["options"] = [{"text": o.text, "weight": o.weight} for o in item.options]
        data["items"].append(row)
    for key in ("description", "source", "instruction"):
        if getattr(spec, key):
            data[key] = getattr(spec, key)
    data["scoring"] = spec.scoring
    data["missing"] = dict(spec.missing)
    if spec.parallel_form:
        data["parallel_form"] = dict(spec.parallel_form)
    return data
