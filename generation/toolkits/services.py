"""Writes for toolkits: edits that respect locking, counterfactual twins, copies. Views, API and commands call these."""

import itertools

from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Max

from stereoscope.services import record_activity
from stereoscope.untrusted import MAX_ITEM_NOTE, MAX_ITEM_TEXT, too_long
from stereoscope.versioning import Versioning

from ..models import Dimension, PromptItem, Toolkit
from .counterfactual import swap_template, swap_values
from .expansion import ToolkitLocked, count_text, count_units, effective_slots, expand_units, validate_toolkit
from .slots import SLOT_NAME, SlotError, normalize_combinations, normalize_slot_values, parse_slots


def _copy_children(toolkit, copy, *, actor=None):
    """A toolkit version's children: its dimensions, items and counterfactual links."""
    dimension_map = {
        dim.pk: copy.dimensions.create(name=dim.name, description=dim.description, order=dim.order)
        for dim in toolkit.dimensions.all()
    }
    item_map, links = {}, []
    for item in toolkit.items.order_by("number"):
        old_pk, counterfactual_of = item.pk, item.counterfactual_of_id
        item.pk = item.id = None
        item.toolkit = copy
        item.dimension = dimension_map.get(item.dimension_id)
        item.counterfactual_of = None
        item.save()
        item_map[old_pk] = item
        if counterfactual_of:
            links.append((item, counterfactual_of))
    for item, original_pk in links:
        if original_pk in item_map:
            item.counterfactual_of = item_map[original_pk]
            item.save(update_fields=["counterfactual_of"])


# Locked once a run uses it; a copy keeps the key of the built-in it came from.
TOOLKITS = Versioning(
    Toolkit,
    noun="toolkit",
    error=ToolkitLocked,
    in_use=lambda toolkit: toolkit.runs.exists(),
    used_by="a run",
    copy_children=_copy_children,
    copy_builtin_key=True,
)


def target_for_edit(toolkit, actor):
    """The toolkit an edit goes to: itself, or a new version when a run has locked it."""
    return TOOLKITS.writable(toolkit, actor=actor)


def same_item(toolkit, item):
    """The item with `item`'s number in `toolkit` (after a new version was made)."""
    return item if item.toolkit_id == toolkit.pk else toolkit.items.get(number=item.number)


@transaction.atomic
def derive_counterfactual(item, *, actor=None, name_pairs=None):
    """Add the gender-swapped twin of `item` to its toolkit (a new version if locked).

    Returns (twin, created_version).
    """
    toolkit, created = target_for_edit(item.toolkit, actor)
    original = same_item(toolkit, item)
    used = parse_slots(original.text)
    slots, combos = effective_slots(
        toolkit.slots, toolkit.combinations, original.slots, original.combinations, f"Item {original.number}"
    )
    used_slots = {k: v for k, v in slots.items() if k in used}
    swapped_slots = swap_values(used_slots, name_pairs)
    twin_slots = dict(original.slots or {})
    twin_slots.update({k: v for k, v in swapped_slots.items() if v != used_slots[k]})
    twin_combos = original.combinations
    if combos:
        swapped_combos = swap_values(combos, name_pairs)
        if swapped_combos != combos:
            twin_combos = swapped_combos
    number = (toolkit.items.aggregate(n=Max("number"))["n"] or 0) + 1
    twin = toolkit.items.create(
        number=number,
        text=swap_template(original.text, name_pairs),
        dimension=original.dimension,
        target_stereotype=original.target_stereotype,
        gender_mapping=original.gender_mapping,
        reversed_order=original.reversed_order,
        source_reference=original.source_reference,
        notes=f"Gender-swapped twin of item {original.number}." + (f" {original.notes}" if original.notes else ""),
        slots=twin_slots,
        combinations=twin_combos,
        counterfactual_of=original,
    )
    record_activity(
        toolkit.study, actor, "derived a counterfactual item", f"{toolkit} item {number} ← {original.number}"
    )
    return twin, created


# --- editing (UI, API, admin) ------------------------------------------------------------------------
# Edits go only to editable toolkits: a locked one (used by a run, or a library built-in) raises
# ToolkitLocked and the caller offers "new version" instead. Every edit validates before it saves.

ITEM_EDIT_FIELDS = [
    "number",
    "text",
    "dimension",
    "target_stereotype",
    "gender_mapping",
    "reversed_order",
    "source_reference",
    "notes",
    "slots",
    "combinations",
]


def _clean_name(name, label="name", limit=200):
    name = (name or "").strip()
    if not name:
        raise ValidationError(f"The {label} must not be empty.")
    if len(name) > limit:
        raise ValidationError(f"The {label} is longer than {limit} characters.")
    return name


@transaction.atomic
def create_blank_toolkit(study, *, name, description="", language="en", actor=None):
    """A new, empty toolkit (version 1). A name that exists in the study is refused: make a new version of it."""
    TOOLKITS.refuse_library(study)
    name = _clean_name(name)
    if Toolkit.objects.filter(study=study, name=name).exists():
        raise ValidationError(
            f"A toolkit named {name!r} already exists in this study; open it and create a new version."
        )
    toolkit = Toolkit.objects.create(
        study=study,
        name=name,
        description=description or "",
        language=(language or "en").strip()[:10] or "en",
        created_by=actor,
    )
    record_activity(study, actor, "created a toolkit", str(toolkit))
    return toolkit


@transaction.atomic
def update_toolkit(toolkit, *, actor=None, **fields):
    """Change name, description, language, slots and/or combinations; slot changes are checked against every item."""
    TOOLKITS.ensure_editable(toolkit)
    if "name" in fields:
        name = _clean_name(fields["name"])
        if (
            Toolkit.objects.filter(study=toolkit.study, name=name, version=toolkit.version)
            .exclude(pk=toolkit.pk)
            .exists()
        ):
            raise ValidationError(f"{name} v{toolkit.version} already exists in this study.")
        toolkit.name = name
    if "description" in fields:
        toolkit.description = fields["description"] or ""
    if "language" in fields:
        toolkit.language = (fields["language"] or "en").strip()[:10] or "en"
    if "slots" in fields or "combinations" in fields:
        slots = normalize_slot_values(fields.get("slots", toolkit.slots), "toolkit slots")
        combos = normalize_combinations(fields.get("combinations", toolkit.combinations), "toolkit combinations")
        problems = []
        for item in toolkit.items.order_by("number"):
            try:
                item_slots, item_combos = effective_slots(
                    slots, combos, item.slots, item.combinations, f"Item {item.number}"
                )
                count_text(item.text, item_slots, item_combos, f"Item {item.number}")
            except SlotError as exc:
                problems.append(str(exc))
        if problems:
            raise SlotError(" ".join(problems))
        toolkit.slots, toolkit.combinations = slots, combos
    toolkit.save()
    record_activity(toolkit.study, actor, "edited a toolkit", str(toolkit))
    return toolkit


def add_slot(toolkit, *, name, values, actor=None):
    """Add or replace one toolkit-level slot; `values` is a list or text with one value per line."""
    if isinstance(values, str):
        values = [v.strip() for v in values.splitlines() if v.strip()]
    name = (name or "").strip()
    if not SLOT_NAME.fullmatch(name):
        raise SlotError(
            f"{name!r} is not a valid slot name: use letters, digits and underscores, not starting with a digit."
        )
    slots = dict(toolkit.slots or {})
    slots[name] = values
    return update_toolkit(toolkit, slots=slots, actor=actor)


def remove_slot(toolkit, *, name, actor=None):
    slots = dict(toolkit.slots or {})
    if name not in slots:
        raise SlotError(f"The toolkit has no slot {{{name}}}.")
    del slots[name]
    return update_toolkit(toolkit, slots=slots, actor=actor)


def _item_values(toolkit, data, item=None):
    """Validated field values for an item from `data` (missing keys keep the item's values)."""
    values = (
        {f: getattr(item, f) for f in ITEM_EDIT_FIELDS}
        if item
        else {
            "number": None,
            "text": "",
            "dimension": None,
            "target_stereotype": "",
            "gender_mapping": "",
            "reversed_order": False,
            "source_reference": "",
            "notes": "",
            "slots": {},
            "combinations": None,
        }
    )
    values.update({k: v for k, v in data.items() if k in ITEM_EDIT_FIELDS})
    if values["number"] in (None, ""):
        values["number"] = (toolkit.items.aggregate(n=Max("number"))["n"] or 0) + 1
    try:
        values["number"] = int(values["number"])
    except (TypeError, ValueError):
        raise ValidationError(f"The item number must be a whole number, not {values['number']!r}.") from None
    if values["number"] < 1:
        raise ValidationError("The item number must be at least 1.")
    clash = toolkit.items.filter(number=values["number"])
    if item is not None:
        clash = clash.exclude(pk=item.pk)
    if clash.exists():
        raise ValidationError(f"Item number {values['number']} is already used in this toolkit.")
    values["text"] = (values["text"] or "").replace("\r\n", "\n").replace("\r", "\n")
    if not values["text"].strip():
        raise ValidationError("The item needs a text.")
    for field, limit in (("text", MAX_ITEM_TEXT), ("target_stereotype", MAX_ITEM_NOTE), ("notes", MAX_ITEM_NOTE)):
        problem = too_long(values[field], limit, f"The item's {field.replace('_', ' ')}")
        if problem:
            raise ValidationError(problem)
    dimension = values["dimension"]
    if dimension is not None and dimension.toolkit_id != toolkit.pk:
        raise ValidationError("The dimension belongs to another toolkit.")
    for field, limit in (("gender_mapping", 300), ("source_reference", 300)):
        values[field] = values[field] or ""
        if len(values[field]) > limit:
            raise ValidationError(f"The {field.replace('_', ' ')} is longer than {limit} characters.")
    where = f"Item {values['number']}"
    values["slots"] = normalize_slot_values(values["slots"] or {}, f"{where} slots")
    values["combinations"] = normalize_combinations(values["combinations"], f"{where} combinations")
    slots, combos = effective_slots(toolkit.slots, toolkit.combinations, values["slots"], values["combinations"], where)
    count_text(values["text"], slots, combos, where)  # unknown slot or stray brace → SlotError naming the item
    return values


@transaction.atomic
def save_item(toolkit, data, *, item=None, actor=None):
    """Create (item=None) or update an item from a dict of fields.

    Raises ValidationError/SlotError, and saves nothing then.
    """
    TOOLKITS.ensure_editable(toolkit)
    if item is not None and item.toolkit_id != toolkit.pk:
        raise ValidationError("The item belongs to another toolkit.")
    values = _item_values(toolkit, data, item)
    if item is None:
        item = toolkit.items.create(**values)
        record_activity(toolkit.study, actor, "added an item", f"{toolkit} item {item.number}")
    else:
        for field, value in values.items():
            setattr(item, field, value)
        item.save()
        record_activity(toolkit.study, actor, "edited an item", f"{toolkit} item {item.number}")
    return item


@transaction.atomic
def delete_item(item, *, actor=None):
    TOOLKITS.ensure_editable(item.toolkit)
    record_activity(item.toolkit.study, actor, "deleted an item", f"{item.toolkit} item {item.number}")
    item.delete()


@transaction.atomic
def drop_items(toolkit, numbers, *, actor=None):
    """Remove the items with these numbers from an editable toolkit version (e.g. a new version without the
    prompts an imported weights file flags). Returns how many went."""
    numbers = sorted(set(numbers))
    if not numbers:
        return 0
    TOOLKITS.ensure_editable(toolkit)
    items = toolkit.items.filter(number__in=numbers)
    count = items.count()
    items.delete()
    record_activity(toolkit.study, actor, "dropped items", f"{toolkit} items {', '.join(map(str, numbers))}")
    return count


@transaction.atomic
def move_item(item, direction, *, actor=None):
    """Swap an item's number with its neighbour above (-1) or below (+1); returns False at either end."""
    toolkit = item.toolkit
    TOOLKITS.ensure_editable(toolkit)
    siblings = (
        toolkit.items.filter(number__lt=item.number).order_by("-number")
        if direction < 0
        else toolkit.items.filter(number__gt=item.number).order_by("number")
    )
    other = siblings.first()
    if other is None:
        return False
    mine, theirs = item.number, other.number
    temp = (toolkit.items.aggregate(n=Max("number"))["n"] or 0) + 1
    PromptItem.objects.filter(pk=item.pk).update(number=temp)
    PromptItem.objects.filter(pk=other.pk).update(number=mine)
    PromptItem.objects.filter(pk=item.pk).update(number=theirs)
    item.number = theirs
    record_activity(toolkit.study, actor, "reordered items", f"{toolkit} items {mine} ↔ {theirs}")
    return True


@transaction.atomic
def save_dimension(toolkit, *, name, description="", dimension=None, actor=None):
    TOOLKITS.ensure_editable(toolkit)
    name = _clean_name(name, "dimension name")
    clash = toolkit.dimensions.filter(name=name)
    if dimension is not None:
        clash = clash.exclude(pk=dimension.pk)
    if clash.exists():
        raise ValidationError(f"The dimension {name!r} already exists in this toolkit.")
    if dimension is None:
        order = (toolkit.dimensions.aggregate(o=Max("order"))["o"] or -1) + 1 if toolkit.dimensions.exists() else 0
        dimension = toolkit.dimensions.create(name=name, description=description or "", order=order)
        record_activity(toolkit.study, actor, "added a dimension", f"{toolkit}: {name}")
    else:
        if dimension.toolkit_id != toolkit.pk:
            raise ValidationError("The dimension belongs to another toolkit.")
        dimension.name, dimension.description = name, description or ""
        dimension.save()
        record_activity(toolkit.study, actor, "edited a dimension", f"{toolkit}: {name}")
    return dimension


@transaction.atomic
def delete_dimension(dimension, *, actor=None):
    """Delete a dimension; its items stay, without a dimension."""
    TOOLKITS.ensure_editable(dimension.toolkit)
    record_activity(dimension.toolkit.study, actor, "deleted a dimension", f"{dimension.toolkit}: {dimension.name}")
    dimension.delete()


@transaction.atomic
def move_dimension(dimension, direction, *, actor=None):
    toolkit = dimension.toolkit
    TOOLKITS.ensure_editable(toolkit)
    ordered = list(toolkit.dimensions.order_by("order", "name"))
    index = next(i for i, d in enumerate(ordered) if d.pk == dimension.pk)
    target = index + (1 if direction > 0 else -1)
    if not 0 <= target < len(ordered):
        return False
    ordered[index], ordered[target] = ordered[target], ordered[index]
    for position, dim in enumerate(ordered):
        if dim.order != position:
            Dimension.objects.filter(pk=dim.pk).update(order=position)
    return True


def derive_twin(item, *, actor=None, name_pairs=None):
    """The counterfactual twin of an item in an editable toolkit (a locked one is refused, not silently versioned)."""
    TOOLKITS.ensure_editable(item.toolkit)
    twin, _ = derive_counterfactual(item, actor=actor, name_pairs=name_pairs)
    return twin


@transaction.atomic
def delete_toolkit(toolkit, *, actor=None):
    TOOLKITS.ensure_editable(toolkit)
    record_activity(toolkit.study, actor, "deleted a toolkit", str(toolkit))
    toolkit.delete()


def preview(toolkit, limit=20):
    """(unit count, first `limit` units, problems) for the expansion preview; problems list what stops expansion."""
    problems = validate_toolkit(toolkit)
    if problems:
        return 0, [], problems
    return count_units(toolkit), list(itertools.islice(expand_units(toolkit), limit)), []
