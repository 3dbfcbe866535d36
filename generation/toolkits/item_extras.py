"""Per-item figures that other apps attach to a toolkit version (judging's prompt detection weights).

generation may not import those apps; they offer a `TOOLKIT_ITEM_EXTRAS` spec through stereoscope.providers
({"fields", "label", "values": f(toolkit) -> {item_id: {field: value}}, "summary": f(values) -> text}). The toolkit
page shows one column per spec beside the items; the toolkit's JSON/CSV export includes the fields; imports ignore
them. An app that is not installed offers nothing.
"""

from stereoscope.providers import provider

SOURCES = ("judging",)


def _specs():
    for name in SOURCES:
        spec = getattr(provider(name), "TOOLKIT_ITEM_EXTRAS", None)
        if spec:
            yield spec


def extra_fields():
    return [field for spec in _specs() for field in spec["fields"]]


def item_extras(toolkit):
    """(fields present, {item_id: {field: value}}) for this toolkit version; fields only of specs with data."""
    fields, merged = [], {}
    for spec in _specs():
        values = spec["values"](toolkit)
        if values:
            fields += spec["fields"]
            for item_id, row in values.items():
                merged.setdefault(item_id, {}).update(row)
    return fields, merged


def annotate_items(toolkit, items):
    """Set `item.extra_cells` (one text per column) on each item; returns (items, column labels with data)."""
    items = list(items)
    columns = []
    for spec in _specs():
        values = spec["values"](toolkit)
        if not values:
            continue
        columns.append(spec["label"])
        for item in items:
            cells = getattr(item, "extra_cells", None) or []
            cells.append(spec["summary"](values[item.pk]) if item.pk in values else "")
            item.extra_cells = cells
    return items, columns
