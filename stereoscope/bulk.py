"""The one bulk writer: every raw-SQL write of many rows goes through here
(tests/stereoscope/test_bulk.py checks no other module writes SQL itself; it is tested on SQLite and PostgreSQL).

- `bulk_insert`: big imports, COPY on PostgreSQL, elsewhere one prepared INSERT run with executemany;
- `insert_rows`: the rows in one transaction (a run's outputs: COPY into a temporary table and one INSERT ... SELECT
  on PostgreSQL, a prepared INSERT per row elsewhere), optionally leaving rows that break a unique constraint alone;
- `insert_rows_returning_ids`: a prepared INSERT per row in one transaction, their ids in order (attempt rows);
- `insert_values`: multi-row INSERTs of prepared value tuples, optionally returning columns of the rows inserted;
- `update_rows`: one prepared UPDATE run for many rows;
- `upsert_add`: INSERT ... ON CONFLICT DO UPDATE adding to counters (the spending ledger);
- `keep_counts` / `drop_kept_counts`: counts of a table's rows per group kept in another table by database triggers
  (a coder's queue progress), installed after every migrate and recounted when they were missing.

For `bulk_insert`:

`bulk_create` spends most of its time compiling SQL and preparing every value through its field (about 0.5 ms a row
for an output), and SQLite limits it to ~47 rows a statement. Here each field's preparation is decided once: values
of plain types (text, numbers, booleans, foreign-key ids) go to the driver as they are; JSON, dates, decimals and
other fields are prepared exactly as the ORM prepares them. No signals are sent and no ids come back.
Call it inside `transaction.atomic()` to keep an import all-or-nothing.
"""

from __future__ import annotations

import hashlib
import sqlite3
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any, TypeAlias

from django.db import DEFAULT_DB_ALIAS, connections, models, router, transaction
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models.constants import OnConflict

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


Row = Mapping[str, DbValue]
AnyField: TypeAlias = "models.Field[Any, Any]"


def _column(field: AnyField) -> str:
    """A concrete field's column name (only concrete fields are written here)."""
    assert field.column is not None
    return field.column


def _insert_statement(
    db: BaseDatabaseWrapper, model: type[models.Model], ignore_conflicts: bool = False, returning: bool = False
) -> tuple[str, list[AnyField]]:
    """(sql, fields) of one prepared INSERT of a row into `model`: every concrete column but an auto primary key."""
    qn = db.ops.quote_name
    meta = model._meta
    fields: list[AnyField] = [f for f in meta.concrete_fields if not (f.primary_key and f.auto_created)]
    on_conflict = OnConflict.IGNORE if ignore_conflicts else None
    columns = ", ".join(qn(_column(f)) for f in fields)
    placeholders = ", ".join(["%s"] * len(fields))
    suffix = db.ops.on_conflict_suffix_sql(fields, on_conflict, None, None)
    sql = (
        f"{db.ops.insert_statement(on_conflict=on_conflict)} {qn(meta.db_table)} ({columns}) "
        f"VALUES ({placeholders}) {suffix}"
    ).rstrip()
    if returning:
        assert meta.pk is not None
        sql += f" RETURNING {qn(_column(meta.pk))}"
    return sql, fields


def _preparer(db: BaseDatabaseWrapper, field: AnyField) -> Callable[[Any], DbValue]:
    """`field.get_db_prep_save(value, db)`, with the common values of built-in fields prepared without its chain of
    calls (the runner prepares some 40 values a unit): text and booleans as they are, a foreign key's integer as it is
    (an auto key's preparation returns it unchanged), an integer through the backend's adaptation, None as None.
    Anything else goes through the field (tests/stereoscope/test_bulk.py checks both give the same)."""
    prep = field.get_db_prep_save
    target = field.target_field if field.is_relation else field  # type: ignore[attr-defined]  # as in _is_plain
    if not type(target).__module__.startswith("django.db.models."):
        return lambda value: prep(value, db)
    if isinstance(target, (models.CharField, models.TextField)) and not field.is_relation:
        kind: type = str
    elif isinstance(target, models.BooleanField) and not field.is_relation:
        kind = bool
    elif field.is_relation and isinstance(target, models.AutoField):
        kind = int
    elif isinstance(target, models.IntegerField) and not field.is_relation and not isinstance(target, models.AutoField):
        adapt, internal = db.ops.adapt_integerfield_value, target.get_internal_type()
        return lambda value: adapt(value, internal) if type(value) is int else prep(value, db)
    else:
        return lambda value: prep(value, db)
    return lambda value: value if value is None or type(value) is kind else prep(value, db)


def _row_params(db: BaseDatabaseWrapper, fields: Sequence[AnyField], rows: Sequence[Row]) -> list[list[DbValue]]:
    """Each row's values prepared for the database, in `fields` order; a missing one gets the field's default,
    computed and prepared once."""
    defaults = {}
    for f in fields:
        if any(f.name not in row for row in rows):
            defaults[f.name] = f.get_db_prep_save(f.get_default(), db)
    prepared = [(f.name, _preparer(db, f)) for f in fields]
    return [[prep(row[name]) if name in row else defaults[name] for name, prep in prepared] for row in rows]


def update_rows(
    model: type[models.Model],
    names: Sequence[str],
    rows: Sequence[tuple[Any, Row]],
    where: Mapping[str, DbValue] | None = None,
) -> int:
    """UPDATE many rows of `model` with one prepared statement run for all (ORM bulk_update is slow here).
    `rows` are (pk, {name: value}); a name missing from a row gets the field's default; a pk given twice takes its
    last values. `where` ({column: value}) narrows every row's update (e.g. only while still pending). Returns the
    number of rows changed.

    On PostgreSQL, one UPDATE ... FROM (VALUES ...) a batch was tried (issue 36) and cost the worker more: Django's
    client-side binding cursor parses a statement that long, with thousands of placeholders, on every call, where
    this short one is parsed once and cached."""
    if not rows:
        return 0
    db = connections[DEFAULT_DB_ALIAS]
    qn = db.ops.quote_name
    meta = model._meta
    assert meta.pk is not None
    last = dict(rows)  # each pk once, with its last values
    fields: list[AnyField] = [meta.get_field(name) for name in names]  # type: ignore[misc]  # concrete fields
    where_fields: list[AnyField] = [meta.get_field(k) for k in where or {}]  # type: ignore[misc]  # concrete fields
    extra = [f.get_db_prep_save(v, db) for f, v in zip(where_fields, (where or {}).values(), strict=True)]
    prepared = _row_params(db, fields, list(last.values()))
    sets = ", ".join(f"{qn(_column(f))} = %s" for f in fields)
    conditions = [f"{qn(_column(meta.pk))} = %s"] + [f"{qn(_column(f))} = %s" for f in where_fields]
    sql = f"UPDATE {qn(meta.db_table)} SET {sets} WHERE {' AND '.join(conditions)}"
    params = [values + [pk] + extra for pk, values in zip(last, prepared, strict=True)]
    with db.cursor() as cursor:
        cursor.executemany(sql, params)
        return int(cursor.rowcount)


def insert_rows(model: type[models.Model], rows: Sequence[Row], ignore_conflicts: bool = False) -> None:
    """INSERT many rows of `model`: COPY and one INSERT ... SELECT on PostgreSQL (`_copy_rows`), elsewhere one
    prepared statement run for all (ORM bulk_create compiles a statement per few dozen rows). `rows` are
    {name: value} (a foreign key by its id); a column missing from a row gets the field's default, computed once.
    `ignore_conflicts` leaves rows that would break a unique constraint alone. Returns nothing: the new rows' ids are
    not read back."""
    if not rows:
        return
    db = connections[DEFAULT_DB_ALIAS]  # the proxy `connection` costs a lookup per use, and there are many
    sql, fields = _insert_statement(db, model, ignore_conflicts)
    params = _row_params(db, fields, rows)
    with transaction.atomic(), db.cursor() as cursor:  # one transaction, not one per row
        if db.vendor == "postgresql":
            _copy_rows(db, cursor, model, fields, params, ignore_conflicts)
            return
        cursor.executemany(sql, params)


def _copy_rows(
    db: BaseDatabaseWrapper,
    cursor: Any,
    model: type[models.Model],
    fields: Sequence[AnyField],
    params: Sequence[Sequence[DbValue]],
    ignore_conflicts: bool,
) -> None:
    """PostgreSQL: COPY the rows into a temporary table, then one INSERT ... SELECT in their order (ids follow it),
    with ON CONFLICT DO NOTHING when conflicts are ignored. A prepared INSERT a row cost the server a statement each
    (about 0.2 s for a run's 2,000 outputs; COPY a third of it). Call inside a transaction."""
    qn = db.ops.quote_name
    table, columns = qn(model._meta.db_table), ", ".join(qn(_column(f)) for f in fields)
    scratch = qn(f"bulk_rows_{model._meta.db_table}")
    cursor.execute(
        f"CREATE TEMPORARY TABLE {scratch} ON COMMIT DROP AS SELECT 0 AS bulk_n, {columns} FROM {table} WITH NO DATA"
    )
    with cursor.cursor.copy(f"COPY {scratch} (bulk_n, {columns}) FROM STDIN") as copy:
        for n, row in enumerate(params):
            copy.write_row((n, *row))
    conflict = " ON CONFLICT DO NOTHING" if ignore_conflicts else ""
    cursor.execute(f"INSERT INTO {table} ({columns}) SELECT {columns} FROM {scratch} ORDER BY bulk_n{conflict}")
    cursor.execute(f"DROP TABLE {scratch}")


def insert_rows_returning_ids(model: type[models.Model], rows: Sequence[Row]) -> list[int]:
    """INSERT rows of `model` one prepared statement each, in one transaction; their new ids in order. On PostgreSQL
    the statements go in one pipeline (one round trip for the lot: the runner opens attempt rows this way)."""
    if not rows:
        return []
    db = connections[DEFAULT_DB_ALIAS]
    sql, fields = _insert_statement(db, model, returning=True)
    params = _row_params(db, fields, rows)
    ids = []
    with transaction.atomic(), db.cursor() as cursor:
        if db.vendor == "postgresql":  # psycopg pipelines the rows: one round trip, one result set a row, in order
            raw = cursor.cursor
            raw.executemany(sql, params, returning=True)
            while True:
                ids.append(raw.fetchone()[0])
                if not raw.nextset():
                    break
            return ids
        for row in params:
            cursor.execute(sql, row)
            ids.append(cursor.fetchone()[0])
    return ids


def _max_rows(db: BaseDatabaseWrapper, n_columns: int) -> int:
    """Rows per multi-row INSERT within the database's limit of query parameters."""
    limit = db.features.max_query_params or 999
    return max(1, min(500, limit // n_columns))


def _executor(db: BaseDatabaseWrapper, cursor: Any) -> Callable[[str, Sequence[DbValue]], Any]:
    """cursor.execute for SQL written with %s. On SQLite the statement goes straight to sqlite3 with ? marks: Django
    would rewrite each long multi-row statement with a regular expression, hundreds of times a run."""
    if db.vendor != "sqlite":
        return cursor.execute  # type: ignore[no-any-return]  # the DB-API cursor is untyped
    raw, converted = cursor.cursor, dict[str, str]()

    def execute(sql: str, params: Sequence[DbValue]) -> Any:
        query = converted.get(sql)
        if query is None:
            query = converted[sql] = sql.replace("%s", "?")
        return sqlite3.Cursor.execute(raw, query, params)

    return execute


def insert_values(
    model: type[models.Model],
    columns: Sequence[str],
    rows: Sequence[Sequence[DbValue]],
    *,
    ignore_conflicts: bool = False,
    returning: Sequence[str] = (),
) -> list[tuple[DbValue, ...]]:
    """Multi-row INSERTs of value tuples already prepared for the database (in `columns` order), as many rows a
    statement as the database's parameter limit allows. `ignore_conflicts` leaves rows that would break a unique
    constraint alone; `returning` names columns to read back from the rows inserted (in no particular order)."""
    if not rows:
        return []
    db = connections[DEFAULT_DB_ALIAS]
    qn = db.ops.quote_name
    head = f"INSERT INTO {qn(model._meta.db_table)} ({', '.join(qn(c) for c in columns)}) VALUES "
    one = f"({', '.join(['%s'] * len(columns))})"
    tail = " ON CONFLICT DO NOTHING" if ignore_conflicts else ""
    if returning:
        tail += f" RETURNING {', '.join(qn(c) for c in returning)}"
    size = _max_rows(db, len(columns))
    found: list[tuple[DbValue, ...]] = []
    with db.cursor() as cursor:
        execute = _executor(db, cursor)
        for i in range(0, len(rows), size):
            part = rows[i : i + size]
            execute(head + ", ".join([one] * len(part)) + tail, [v for row in part for v in row])
            if returning:
                found.extend(tuple(r) for r in cursor.fetchall())
    return found


def upsert_add(
    model: type[models.Model],
    keys: Sequence[str],
    counters: Sequence[str],
    rows: Sequence[Sequence[DbValue]],
) -> None:
    """Add to counter columns of rows found by their unique `keys`, creating rows as needed: each row is the key
    values then the counter values, prepared for the database. One INSERT ... ON CONFLICT DO UPDATE per row (SQLite
    and PostgreSQL); it also takes the row's write lock."""
    if not rows:
        return
    db = connections[DEFAULT_DB_ALIAS]
    qn = db.ops.quote_name
    table = qn(model._meta.db_table)
    names = [*keys, *counters]
    sets = ", ".join(f"{qn(c)} = {table}.{qn(c)} + excluded.{qn(c)}" for c in counters)
    sql = (
        f"INSERT INTO {table} ({', '.join(qn(c) for c in names)}) VALUES ({', '.join(['%s'] * len(names))}) "
        f"ON CONFLICT ({', '.join(qn(c) for c in keys)}) DO UPDATE SET {sets}"
    )
    with db.cursor() as cursor:
        cursor.executemany(sql, [list(row) for row in rows])


# --- counts kept by triggers -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class KeptCounts:
    """Counts of a table's rows per group, kept in another table by database triggers (SQLite and PostgreSQL), so
    every writer keeps them: services, bulk inserts, queryset updates and deletes, COPY, cascades.

    `keys`: columns of both tables that name a group (unique together in `target`); `counts`: (column of `target`,
    SQL condition on a row of `source`, `{row}` standing for the row), e.g. ("done", "{row}.status = 'done'")."""

    name: str  # the triggers' (and PostgreSQL functions') names start with it
    source: str  # table counted
    target: str  # table of counts
    keys: tuple[str, ...]
    counts: tuple[tuple[str, str], ...]


def _kept_counts_postgresql(spec: KeptCounts, prefix: str, qn: Callable[[str], str]) -> list[str]:
    src, dst = qn(spec.source), qn(spec.target)
    keys = ", ".join(qn(k) for k in spec.keys)
    cols = [qn(c) for c, _ in spec.counts]
    conflict = f"ON CONFLICT ({keys}) DO UPDATE SET " + ", ".join(f"{c} = t.{c} + EXCLUDED.{c}" for c in cols)
    head = f"INSERT INTO {dst} AS t ({keys}, {', '.join(cols)})"

    def flags(alias: str, sign: str = "") -> str:
        return ", ".join(f"{sign}({cond.format(row=alias)})::int AS {qn(c)}" for c, cond in spec.counts)

    def counted(alias: str) -> str:
        return ", ".join(f"count(*) FILTER (WHERE {cond.format(row=alias)}) AS {qn(c)}" for c, cond in spec.counts)

    bodies = {
        "insert": f"{head} SELECT {keys}, {counted('added')} FROM added GROUP BY {keys} ORDER BY {keys} {conflict}",
        "update": (
            f"{head} SELECT {keys}, {', '.join(f'sum({c})' for c in cols)} FROM ("
            f"SELECT {keys}, {flags('added')} FROM added UNION ALL SELECT {keys}, {flags('removed', '-')} FROM removed"
            f") AS changes GROUP BY {keys} HAVING {' OR '.join(f'sum({c}) <> 0' for c in cols)} ORDER BY {keys} "
            f"{conflict}"
        ),
        "delete": (
            f"UPDATE {dst} AS t SET {', '.join(f'{c} = t.{c} - r.{c}' for c in cols)} FROM ("
            f"SELECT {keys}, {counted('removed')} FROM removed GROUP BY {keys}) AS r WHERE "
            + " AND ".join(f"t.{qn(k)} = r.{qn(k)}" for k in spec.keys)
        ),
    }
    tables = {
        "insert": "NEW TABLE AS added",
        "update": "OLD TABLE AS removed NEW TABLE AS added",
        "delete": "OLD TABLE AS removed",
    }
    statements = []
    for op, body in bodies.items():
        name = qn(f"{prefix}_{op}")
        statements.append(
            f"CREATE FUNCTION {name}() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN {body}; RETURN NULL; END $$"
        )
        statements.append(
            f"CREATE TRIGGER {name} AFTER {op.upper()} ON {src} REFERENCING {tables[op]} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {name}()"
        )
    return statements


def _kept_counts_sqlite(spec: KeptCounts, prefix: str, qn: Callable[[str], str]) -> list[str]:
    src, dst = qn(spec.source), qn(spec.target)
    keys = [qn(k) for k in spec.keys]
    cols = [qn(c) for c, _ in spec.counts]

    def cond(row: str) -> list[str]:
        return [f"({c.format(row=row)})" for _, c in spec.counts]

    add = (
        f"INSERT INTO {dst} ({', '.join(keys + cols)}) VALUES ({', '.join([f'NEW.{k}' for k in keys] + cond('NEW'))}) "
        f"ON CONFLICT ({', '.join(keys)}) DO UPDATE SET " + ", ".join(f"{c} = {c} + excluded.{c}" for c in cols) + ";"
    )
    minus = ", ".join(f"{qn(c)} = {qn(c)} - {old}" for (c, _), old in zip(spec.counts, cond("OLD"), strict=True))
    subtract = f"UPDATE {dst} SET {minus} WHERE " + " AND ".join(f"{k} = OLD.{k}" for k in keys) + ";"
    changed = " OR ".join(
        [f"OLD.{k} IS NOT NEW.{k}" for k in keys]
        + [f"{old} IS NOT {new}" for old, new in zip(cond("OLD"), cond("NEW"), strict=True)]
    )
    return [
        f"CREATE TRIGGER {qn(prefix + '_insert')} AFTER INSERT ON {src} BEGIN {add} END",
        f"CREATE TRIGGER {qn(prefix + '_update')} AFTER UPDATE ON {src} WHEN {changed} BEGIN {subtract} {add} END",
        f"CREATE TRIGGER {qn(prefix + '_delete')} AFTER DELETE ON {src} BEGIN {subtract} END",
    ]


def _kept_counts_statements(spec: KeptCounts, db: BaseDatabaseWrapper) -> tuple[str, list[str]]:
    """(the triggers' name prefix, the statements creating them): the prefix ends with a digest of the statements,
    so changed definitions are told from the installed ones by name."""
    build = {"postgresql": _kept_counts_postgresql, "sqlite": _kept_counts_sqlite}.get(db.vendor)
    if build is None:
        raise NotImplementedError(f"counts kept by triggers on {db.vendor}")
    digest = hashlib.sha1("\n".join(build(spec, spec.name, db.ops.quote_name)).encode()).hexdigest()[:8]
    prefix = f"{spec.name}_{digest}"
    return prefix, build(spec, prefix, db.ops.quote_name)


def _installed_triggers(db: BaseDatabaseWrapper, cursor: Any, spec: KeptCounts) -> list[str]:
    if db.vendor == "postgresql":
        cursor.execute("SELECT tgname FROM pg_trigger WHERE tgrelid = %s::regclass AND NOT tgisinternal", [spec.source])
    else:
        cursor.execute("SELECT name FROM sqlite_master WHERE type = 'trigger' AND tbl_name = %s", [spec.source])
    return sorted(name for (name,) in cursor.fetchall() if name.startswith(spec.name + "_"))


def drop_kept_counts(spec: KeptCounts, using: str = DEFAULT_DB_ALIAS) -> None:
    """Remove the spec's triggers (and PostgreSQL functions), whatever their version."""
    db = connections[using]
    qn = db.ops.quote_name
    with db.cursor() as cursor:
        for name in _installed_triggers(db, cursor, spec):
            cursor.execute(f"DROP TRIGGER {qn(name)}" + (f" ON {qn(spec.source)}" if db.vendor == "postgresql" else ""))
        if db.vendor == "postgresql":
            cursor.execute("SELECT proname FROM pg_proc WHERE starts_with(proname, %s)", [spec.name + "_"])
            for (name,) in cursor.fetchall():
                cursor.execute(f"DROP FUNCTION {qn(name)}()")


def keep_counts(spec: KeptCounts, using: str = DEFAULT_DB_ALIAS) -> bool:
    """Make sure the spec's triggers are installed, as defined now. When they are not (a new database, a database
    built from the models, SQLite rebuilding the source table in a migration, a changed definition), install them and
    count the target afresh from the source, in one transaction with the source locked against writes (PostgreSQL).
    Cheap when they are in place: run it after every migrate. Returns whether it installed them; False also when
    either table does not exist (yet)."""
    db = connections[using]
    qn = db.ops.quote_name
    with db.cursor() as cursor:
        tables = set(db.introspection.table_names(cursor))
    if not {spec.source, spec.target} <= tables:
        return False
    prefix, statements = _kept_counts_statements(spec, db)
    wanted = sorted(f"{prefix}_{op}" for op in ("delete", "insert", "update"))
    with db.cursor() as cursor:
        if _installed_triggers(db, cursor, spec) == wanted:
            return False  # the usual case: no lock taken
    with transaction.atomic(using=using), db.cursor() as cursor:
        if db.vendor == "postgresql":
            cursor.execute(f"LOCK TABLE {qn(spec.source)} IN SHARE ROW EXCLUSIVE MODE")
        if _installed_triggers(db, cursor, spec) == wanted:
            return False  # installed meanwhile
        drop_kept_counts(spec, using)
        for statement in statements:
            cursor.execute(statement)
        keys = ", ".join(qn(k) for k in spec.keys)
        sums = ", ".join(
            f"SUM(CASE WHEN {cond.format(row=qn(spec.source))} THEN 1 ELSE 0 END)" for _, cond in spec.counts
        )
        cursor.execute(f"DELETE FROM {qn(spec.target)}")
        cursor.execute(
            f"INSERT INTO {qn(spec.target)} ({keys}, {', '.join(qn(c) for c, _ in spec.counts)}) "
            f"SELECT {keys}, {sums} FROM {qn(spec.source)} GROUP BY {keys}"
        )
    return True
