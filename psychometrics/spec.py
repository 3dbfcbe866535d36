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
their weights (the direction is in the weights, so such an item is not reverse-coded). `"scale": {"continuous": true}` declares continuous
data (imported human scores); min/max are then optional and reverse items need them.
"""
from dataclasses import dataclass, field

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
        tail = ("reliability uses contexts with all analysed items answered (listwise deletion; item–total r and "
                "α if deleted on the cases of their subscale's α); the CFA uses every context with an answer "
                "(full-information ML).")
    else:
        tail = ("reliability and CFA use contexts with all analysed items answered (listwise deletion; item–total r "
                "and α if deleted on the cases of their subscale's α).")
    if missing.get("method") == "complete":
        return f"Missing data: a score is computed only when every item of the (sub)scale was answered; {tail}"
    frac = missing.get("min_fraction", 0.5)
    how = "the mean of the answered items" if scoring == "mean" else "the prorated sum (mean of answered items × number of items)"
    return (f"Missing data: a (sub)scale score is {how} when at least {frac:.0%} of its items were answered, "
            f"otherwise missing; {tail}")


def parse_item_options(raw, where, errors):
    """An item's own answer options: a list of at least two {"text", "weight"} with distinct texts."""
    if raw is None:
        return []
    if not isinstance(raw, list):
        errors.append(f"{where}: “options” must be a list of {{\"text\", \"weight\"}} objects.")
        return []
    if len(raw) < 2:
        errors.append(f"{where}: “options” needs at least two options.")
    options = []
    for n, option in enumerate(raw, 1):
        if not isinstance(option, dict):
            errors.append(f"{where}, option {n}: must be an object with text and weight.")
            continue
        text = option.get("text")
        if not isinstance(text, str) or not text.strip():
            errors.append(f"{where}, option {n} needs a text.")
            continue
        weight = option.get("weight")
        if isinstance(weight, bool) or not isinstance(weight, (int, float)):
            errors.append(f"{where}, option {n}: weight must be a number, got {weight!r}.")
            continue
        options.append(OptionSpec(text.strip(), weight))
    texts = [o.text.lower() for o in options]
    if len(set(texts)) != len(texts):
        errors.append(f"{where}: duplicate option texts.")
    return options


def _number(value, what, errors):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        errors.append(f"{what} must be a number, got {value!r}.")
        return None
    return value


def parse_instrument(data):
    """Validate a decoded JSON object and return an InstrumentSpec; raise SpecError listing every problem."""
    errors = []
    if not isinstance(data, dict):
        raise SpecError("An instrument file must be a JSON object with name, version, scale, subscales and items.")
    name = data.get("name")
    if not isinstance(name, str) or not name.strip():
        errors.append("“name” is required (a non-empty string).")
        name = ""
    version = data.get("version", "1")
    if isinstance(version, bool) or not isinstance(version, (str, int)) or not str(version).strip():
        errors.append("“version” must be a string or an integer.")
        version = "1"
    scale_data = data.get("scale")
    scale = Scale(None, None)
    if not isinstance(scale_data, dict):
        errors.append("“scale” is required: {\"min\": 0, \"max\": 5, \"labels\": {...}} or {\"continuous\": true}.")
    else:
        continuous = scale_data.get("continuous", False)
        if not isinstance(continuous, bool):
            errors.append("scale.continuous must be true or false.")
            continuous = False
        lo = _number(scale_data["min"], "scale.min", errors) if "min" in scale_data else None
        hi = _number(scale_data["max"], "scale.max", errors) if "max" in scale_data else None
        if not continuous:
            if lo is None or hi is None:
                errors.append("scale.min and scale.max are required unless the scale is continuous.")
            elif lo != int(lo) or hi != int(hi):
                errors.append("A discrete scale has whole-number min and max.")
            elif hi <= lo:
                errors.append(f"scale.max ({hi}) must be greater than scale.min ({lo}).")
            elif hi - lo > 100:
                errors.append("A discrete scale has at most 101 points.")
        elif lo is not None and hi is not None and hi <= lo:
            errors.append(f"scale.max ({hi}) must be greater than scale.min ({lo}).")
        labels = {}
        raw_labels = scale_data.get("labels", {}) or {}
        if not isinstance(raw_labels, dict):
            errors.append("scale.labels must be an object mapping points to labels, e.g. {\"0\": \"disagree strongly\"}.")
        else:
            for key, label in raw_labels.items():
                try:
                    point = int(str(key))
                except ValueError:
                    errors.append(f"scale.labels key {key!r} is not a whole number.")
                    continue
                if not isinstance(label, str):
                    errors.append(f"scale.labels[{key}] must be a string.")
                    continue
                if lo is not None and hi is not None and not (lo <= point <= hi):
                    errors.append(f"scale.labels has point {point} outside {lo}–{hi}.")
                labels[point] = label.strip()
        scale = Scale(lo, hi, labels, continuous)
    subscales = data.get("subscales", [])
    if not isinstance(subscales, list) or not all(isinstance(s, str) and s.strip() for s in subscales):
        errors.append("“subscales” must be a list of names.")
        subscales = []
    if len(set(subscales)) != len(subscales):
        errors.append("“subscales” has duplicate names.")
    items_data = data.get("items")
    items = []
    if not isinstance(items_data, list) or not items_data:
        errors.append("“items” must be a non-empty list.")
        items_data = []
    seen = set()
    for n, raw in enumerate(items_data, 1):
        where = f"item {n}"
        if not isinstance(raw, dict):
            errors.append(f"{where} must be an object with id, text, subscale, reverse.")
            continue
        item_id = raw.get("id")
        if isinstance(item_id, bool) or not isinstance(item_id, (str, int)) or not str(item_id).strip():
            errors.append(f"{where}: “id” is required.")
            continue
        item_id = str(item_id).strip()
        where = f"item {item_id}"
        if item_id in seen:
            errors.append(f"{where}: duplicate id.")
        seen.add(item_id)
        text = raw.get("text")
        if not isinstance(text, str) or not text.strip():
            errors.append(f"{where}: “text” is required.")
            text = ""
        subscale = raw.get("subscale", "")
        if subscale is None:
            subscale = ""
        if not isinstance(subscale, str):
            errors.append(f"{where}: “subscale” must be a string.")
            subscale = ""
        if subscales and subscale not in subscales:
            errors.append(f"{where}: subscale {subscale!r} is not one of {', '.join(subscales)}.")
        reverse = raw.get("reverse", False)
        if not isinstance(reverse, bool):
            errors.append(f"{where}: “reverse” must be true or false.")
            reverse = False
        if reverse and (scale.min is None or scale.max is None):
            errors.append(f"{where}: a reverse item needs scale.min and scale.max (recoded as min + max − x).")
        parallel = raw.get("parallel")
        if parallel is not None and not isinstance(parallel, (str, int)):
            errors.append(f"{where}: “parallel” must be the id of the linked item in the parallel form.")
            parallel = None
        options = parse_item_options(raw.get("options"), where, errors)
        if options and reverse:
            errors.append(f"{where}: an item with its own options carries its direction in the weights; "
                          "set “reverse” to false.")
        items.append(ItemSpec(item_id, text.strip(), subscale, reverse, None if parallel is None else str(parallel),
                              options))
    if not subscales and items:
        subscales = list(dict.fromkeys(i.subscale for i in items if i.subscale))
    scoring = data.get("scoring", "mean")
    if scoring not in SCORING:
        errors.append(f"“scoring” must be one of {', '.join(SCORING)}.")
        scoring = "mean"
    missing = data.get("missing", DEFAULT_MISSING)
    if not isinstance(missing, dict) or missing.get("method", "prorate") not in MISSING_METHODS:
        errors.append(f"“missing” must be an object with method one of {', '.join(MISSING_METHODS)}.")
        missing = dict(DEFAULT_MISSING)
    else:
        missing = {"method": missing.get("method", "prorate"), "min_fraction": missing.get("min_fraction", 0.5),
                   **({"cfa": missing["cfa"]} if "cfa" in missing else {})}
        if missing.get("cfa", "listwise") not in CFA_MISSING:
            errors.append(f"missing.cfa must be one of {', '.join(CFA_MISSING)} (how the CFA treats missing answers).")
            missing.pop("cfa")
        frac = missing["min_fraction"]
        if isinstance(frac, bool) or not isinstance(frac, (int, float)) or not 0 < frac <= 1:
            errors.append("missing.min_fraction must be a number in (0, 1].")
            missing["min_fraction"] = 0.5
    parallel_form = data.get("parallel_form")
    if parallel_form is not None and (not isinstance(parallel_form, dict) or "name" not in parallel_form):
        errors.append("“parallel_form” must be an object with the name (and version) of the linked form.")
        parallel_form = None
    for key in ("description", "source", "instruction"):
        if key in data and not isinstance(data[key], str):
            errors.append(f"“{key}” must be a string.")
    if errors:
        raise SpecError("; ".join(errors))
    return InstrumentSpec(
        name=name.strip(), version=str(version).strip(), scale=scale, subscales=list(subscales), items=items,
        description=data.get("description", ""), source=data.get("source", ""), instruction=data.get("instruction", ""),
        scoring=scoring, missing=missing, parallel_form=parallel_form,
    )


def to_dict(spec):
    """The JSON form of a spec (round-trips through parse_instrument)."""
    scale = {"continuous": True} if spec.scale.continuous else {}
    if spec.scale.min is not None:
        scale["min"] = spec.scale.min
    if spec.scale.max is not None:
        scale["max"] = spec.scale.max
    if spec.scale.labels:
        scale["labels"] = {str(k): v for k, v in sorted(spec.scale.labels.items())}
    data = {"name": spec.name, "version": spec.version, "scale": scale, "subscales": list(spec.subscales),
            "items": []}
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
