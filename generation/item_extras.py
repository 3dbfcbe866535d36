"""Per-item figures that other apps attach to a toolkit version (judging's prompt detection weights).

generation may not import those apps, so they register a provider at start-up (AppConfig.ready). The toolkit page
shows the figures beside each item and the toolkit's JSON/CSV export includes them; an import ignores them.
"""
_providers = []  # (fields, label, provider, summary); provider(toolkit) -> {item_id: {field: value}}


def register(fields, label, provider, summary):
    """`fields`: the names of the per-item values the provider returns; `label`: the column heading on the toolkit
    page; `summary(values)`: the short text shown in that column."""
    if all(entry[2] is not provider for entry in _providers):
        _providers.append((list(fields), label, provider, summary))


def extra_fields():
    return [field for fields, *_ in _providers for field in fields]


def item_extras(toolkit):
    """(fields present, {item_id: {field: value}}) for this toolkit version; fields only of providers with data."""
    fields, merged = [], {}
    for provider_fields, _, provider, _ in _providers:
        values = provider(toolkit)
        if values:
            fields += provider_fields
            for item_id, row in values.items():
                merged.setdefault(item_id, {}).update(row)
    return fields, merged


def annotate_items(toolkit, items):
    """Set `item.extra_cells` (one text per column) on each item; returns the column labels with data."""
    items = list(items)
    columns = []
    for _, label, provider, summary in _providers:
        values = provider(toolkit)
        if not values:
            continue
        columns.append(label)
        for item in items:
            cells = getattr(item, "extra_cells", None) or []
            cells.append(summary(values[item.pk]) if item.pk in values else "")
            item.extra_cells = cells
    return items, columns
