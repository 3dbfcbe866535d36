"""Toolkit expansion (items × slot values → rendered prompts) and validation.

Expansion rules, per item:
- The slot values are the toolkit's slots with the item's own slots overriding them name by name.
- Listed combinations (item-level, else toolkit-level) fix the slots they name; any other slot the
  item uses is crossed over its value list (Cartesian product). Without combinations it is a pure
  Cartesian product. Only the slots an item's text actually uses vary it, so an item without slots
  gives exactly one unit.
- Each unit remembers its slot values and a canonical `variant_key` ("" without slots).
"""

import hashlib
import itertools
import json
import math
from dataclasses import dataclass, field

from stereoscope.versioning import VersionLocked

from .slots import SlotError, normalize_combinations, normalize_slot_values, parse_slots, render

VARIANT_KEY_MAX = 500


@dataclass(frozen=True)
class Unit:
    """One rendered prompt of a toolkit: an item with one set of slot values."""

    item: object
    slot_values: dict = field(hash=False)
    prompt: str
    variant_key: str

    @property
    def item_number(self):
        return getattr(self.item, "number", None)


def variant_key(values):
    """Canonical, order-independent key for a set of slot values; "" when there are none."""
    if not values:
        return ""
    key = json.dumps({k: str(v) for k, v in sorted(values.items())}, ensure_ascii=False, separators=(",", ":"))
    if len(key) > VARIANT_KEY_MAX:
        key = "sha256:" + hashlib.sha256(key.encode()).hexdigest()
    return key


def _plan(text, slots, combinations, where):
    """(fixed combinations restricted to used slots, [(slot, values)] to cross) for one item text."""
    try:
        used = parse_slots(text)
    except SlotError as exc:
        raise SlotError(f"{where}: {exc}") from None
    if not used:
        return [{}], []
    fixed = [{}]
    if combinations:
        fixed = []
        for combo in combinations:
            part = {name: combo[name] for name in used if name in combo}
            if part not in fixed:
                fixed.append(part)
    covered = set(fixed[0])
    crossed = []
    for name in used:
        if name in covered:
            continue
        if name not in slots:
            known = ", ".join(sorted(set(slots) | covered)) or "none"
            raise SlotError(f"{where} uses the slot {{{name}}}, which has no values (defined slots: {known}).")
        crossed.append((name, slots[name]))
    return fixed, crossed


def effective_slots(toolkit_slots, toolkit_combinations, item_slots, item_combinations, where="item"):
    """Merge toolkit- and item-level definitions (item wins) after validating both."""
    slots = dict(normalize_slot_values(toolkit_slots, "toolkit slots"))
    slots.update(normalize_slot_values(item_slots, f"{where} slots"))
    item_combos = normalize_combinations(item_combinations, f"{where} combinations")
    combos = (
        item_combos if item_combos is not None else normalize_combinations(toolkit_combinations, "toolkit combinations")
    )
    return slots, combos


def iter_text(text, slots=None, combinations=None, where="item"):
    """(slot values, rendered prompt) of one template text, one at a time: slots multiply (six slots of 40 values
    are four billion prompts), so a preview renders only the prompts it shows."""
    fixed, crossed = _plan(text, slots or {}, combinations, where)
    names = [name for name, _ in crossed]
    for combo in fixed:
        for values in itertools.product(*[vals for _, vals in crossed]):
            slot_values = {**combo, **dict(zip(names, values, strict=True))}
            yield slot_values, render(text, slot_values)


def count_text(text, slots=None, combinations=None, where="item"):
    fixed, crossed = _plan(text, slots or {}, combinations, where)
    return len(fixed) * math.prod(len(vals) for _, vals in crossed)


def _item_definition(toolkit, item):
    where = f"Item {item.number}"
    slots, combos = effective_slots(toolkit.slots, toolkit.combinations, item.slots, item.combinations, where)
    return item.text, slots, combos, where


def _items(toolkit, items):
    if items is not None:
        return items
    return toolkit.items.select_related("dimension").order_by("number")


def iter_item(toolkit, item):
    """The units of one item, one at a time (see iter_text)."""
    text, slots, combos, where = _item_definition(toolkit, item)
    for values, prompt in iter_text(text, slots, combos, where):
        yield Unit(item=item, slot_values=values, prompt=prompt, variant_key=variant_key(values))


def expand_units(toolkit, items=None):
    """Every unit of a toolkit, item by item in number order, each rendered when it is taken (a preview that takes
    the first 20 renders 20). Raises SlotError with the item number."""
    for item in _items(toolkit, items):
        yield from iter_item(toolkit, item)


def count_units(toolkit, items=None):
    """How many units `expand_units` yields, without rendering them."""
    return sum(count_text(*_item_definition(toolkit, item)) for item in _items(toolkit, items))


def validate_toolkit(toolkit):
    """All problems that would stop an expansion, as a list of messages (empty when fine)."""
    problems = []
    try:
        normalize_slot_values(toolkit.slots, "toolkit slots")
        normalize_combinations(toolkit.combinations, "toolkit combinations")
    except SlotError as exc:
        return [str(exc)]
    for item in _items(toolkit, None):
        try:
            count_text(*_item_definition(toolkit, item))
        except SlotError as exc:
            problems.append(str(exc))
    return problems


# --- locking and versions (the rules: stereoscope/versioning.py; this app's part: generation/toolkits/services.py) ---


class ToolkitLocked(VersionLocked):
    pass
