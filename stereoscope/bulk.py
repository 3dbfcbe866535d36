"""Fast bulk inserts for big imports: COPY on PostgreSQL, elsewhere one prepared INSERT run with executemany.

`bulk_create` spends most of its time compiling SQL and preparing every value through its field (about 0.5 ms a row
for an output), and SQLite limits it to ~47 rows a statement. Here each field's preparation is decided once: values
of plain types (text, numbers, booleans, foreign-key ids) go to the driver as they are; JSON, dates, decimals and
other fields are prepared exactly as the ORM prepares them. No signals are sent and no ids come back.
Call it inside `transaction.atomic()` to keep an import all-or-nothing.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from itertools import islice
from typing import Any

from django.db import connections, models, router

# A value as the database driver takes it: whatever Field.get_db_prep_save returns.
DbValue = Any

# Fields whose Python values the driver takes as they are (get_db_prep_save would only re-check the type).
PLAIN_FIELDS = (models.CharField, models.TextField, models.IntegerField, models.BooleanField, models.FloatField)


def _is_plain(field: models.Field[Any, Any]) -> bool:
    """A built-in text, number or boolean field (or a foreign key to one); custom subclasses are always prepared."""
    # is_relation: a related field, which has target_field (Field does not say so)
    target = field.target_field if field.is_relation else field  # type: ignore[attr-defined]
    return isinstance(target, PLAIN_FIELDS) and type(target).__module__.startswith("django.db.models.")


def bulk_insert(
    model: type[models.Model],
    rows: Iterable[Mapping[str, object]],
    *,
    using: str | None = None,
    batch_size: int = 5000,
) -> int:
    """Insert `rows` (dicts keyed by field name or attname) into `model`'s table; missing fields take their default
    (evaluated once for the whole call). Returns the number of rows inserted."""
    using = using or router.db_for_write(model)
    connection = connections[using]
    fields = [f for f in model._meta.concrete_fields if not isinstance(f, models.AutoField)]
    defaults = {f.attname: f.get_db_prep_save(f.get_default(), connection) for f in fields}
    plain = {f.attname: _is_plain(f) for f in fields}
    by_key = {**{f.name: f for f in fields}, **{f.attname: f for f in fields}}
    quote = connection.ops.quote_name
    sql = (
        # a concrete field has its column (Field.column may be None in general)
        f"INSERT INTO {quote(model._meta.db_table)} ({', '.join(quote(f.column) for f in fields)}) "  # type: ignore[arg-type]
        f"VALUES ({', '.join(['%s'] * len(fields))})"
    )

    # id(value) -> (value, prepared): rows share timestamps and slot values
    memo: dict[str, dict[int, tuple[object, DbValue]]] = {f.attname: {} for f in fields}

    def prepare(field: models.Field[Any, Any], value: object) -> DbValue:
        seen = memo[field.attname].get(id(value))
        if seen is not None and seen[0] is value:
            return seen[1]
        if type(field) is models.JSONField:  # what get_db_prep_save ends in, without three layers of calls
            result = connection.ops.adapt_json_value(value, field.encoder)
        else:
            result = field.get_db_prep_save(value, connection)
        if len(memo[field.attname]) < 1000:
            memo[field.attname][id(value)] = (value, result)
        return result

    lookup = {key: (field.attname, field, plain[field.attname]) for key, field in by_key.items()}

    def prepared(row: Mapping[str, object]) -> tuple[DbValue, ...]:
        values = dict(defaults)
        for key, value in row.items():
            attname, field, is_plain = lookup[key]
            if field.is_relation and isinstance(value, models.Model):
                value = value.pk
            values[attname] = value if is_plain or value is None else prepare(field, value)
        return tuple(values[f.attname] for f in fields)

    count = 0
    rows = iter(rows)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":  # COPY: several times faster than executemany there
            columns = ", ".join(quote(f.column) for f in fields)  # type: ignore[arg-type]  # as in `sql`
            with cursor.cursor.copy(f"COPY {quote(model._meta.db_table)} ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(prepared(row))
                    count += 1
            return count
        while batch := [prepared(row) for row in islice(rows, batch_size)]:
            cursor.executemany(sql, batch)
            count += len(batch)
    return count
