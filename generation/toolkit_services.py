"""Writes for toolkits: edits that respect locking, counterfactual twins, copies. Views, API and commands call these."""
from django.db import transaction
from django.db.models import Max

from stereoscope.services import record_activity

from .counterfactual import swap_template, swap_values
from .slots import parse_slots
from .toolkits import clone_toolkit, effective_slots, next_version, writable_version


def target_for_edit(toolkit, actor):
    """The toolkit an edit goes to: itself, or a new version when a run has locked it."""
    target, created = writable_version(toolkit, created_by=actor)
    if created:
        record_activity(toolkit.study, actor, "created a new toolkit version", f"{target} (v{toolkit.version} is locked)")
    return target, created


def same_item(toolkit, item):
    """The item with `item`'s number in `toolkit` (after a new version was made)."""
    return item if item.toolkit_id == toolkit.pk else toolkit.items.get(number=item.number)


@transaction.atomic
def derive_counterfactual(item, *, actor=None, name_pairs=None):
    """Add the gender-swapped twin of `item` to its toolkit (a new version if locked); returns (twin, created_version)."""
    toolkit, created = target_for_edit(item.toolkit, actor)
    original = same_item(toolkit, item)
    used = parse_slots(original.text)
    slots, combos = effective_slots(toolkit.slots, toolkit.combinations, original.slots, original.combinations,
                                    f"Item {original.number}")
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
        number=number, text=swap_template(original.text, name_pairs), dimension=original.dimension,
        target_stereotype=original.target_stereotype, gender_mapping=original.gender_mapping,
        reversed_order=original.reversed_order, source_reference=original.source_reference,
        notes=f"Gender-swapped twin of item {original.number}." + (f" {original.notes}" if original.notes else ""),
        slots=twin_slots, combinations=twin_combos, counterfactual_of=original,
    )
    record_activity(toolkit.study, actor, "derived a counterfactual item", f"{toolkit} item {number} ← {original.number}")
    return twin, created


def copy_toolkit(toolkit, *, study, actor=None):
    """Copy a toolkit (e.g. a built-in) into a study as a new editable toolkit or version."""
    copy = clone_toolkit(toolkit, study=study, name=toolkit.name, version=next_version(study, toolkit.name),
                         parent=toolkit if toolkit.study_id == study.pk else None, created_by=actor)
    record_activity(study, actor, "copied a toolkit", f"{copy} from {toolkit.study.name}")
    return copy
