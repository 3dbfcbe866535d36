"""Dataset registry: every app declares its tabular datasets in `<app>/datasets.py` with `@register_dataset`.

A dataset is a key, a title, the owning app, documented columns (they make the data dictionary) and a
`rows(study, options)` generator yielding one dict per row. Writers (CSV / JSONL / XLSX) stream those rows. A large
dataset may also offer `batches(study, options)`: the same rows as batches given column-wise (a list per column, in
column order; neighbouring columns that hang on one key, such as a code's name and path, may come as one
`stereoscope.tables.Lookup`), which the CSV writer takes without a Python step per row. `query_batches` reads a big
query's rows in batches, ahead of the code that formats them.

Options (all optional): run_ids, models, item_numbers, code_ids, round_ids (lists), pseudonymise (bool),
pseudonym (callable user -> stable id, supplied by the exports layer).
"""

import importlib
import threading
from dataclasses import dataclass
from itertools import islice
from typing import Callable, Iterator

from django.apps import apps
from django.core.exceptions import EmptyResultSet
from django.db import connections

from .models import Role
from .permissions import LEVELS
from .pipeline import read_ahead


@dataclass(frozen=True)
class Column:
    name: str
    description: str


@dataclass(frozen=True)
class Dataset:
    key: str
    title: str
    app: str
    columns: tuple[Column, ...]
    rows: Callable[..., Iterator[dict]]
    min_role: str = Role.RESEARCHER
    # Optional additions: columns that depend on the study (e.g. one per code), and a cheap row count for progress.
    extra_columns: Callable[..., list] | None = None
    count: Callable[..., int] | None = None
    batches: Callable[..., Iterator[list]] | None = None

    def columns_for(self, study, options) -> tuple[Column, ...]:
        if self.extra_columns is None:
            return self.columns
        extra = self.extra_columns(study, options)  # none at all for a study with nothing to add (e.g. no codes)
        return self.columns + _as_columns(extra) if extra else self.columns

    @property
    def column_names(self) -> list[str]:
        return [column.name for column in self.columns]


class RegistryError(ValueError):
    pass


_registry: dict[str, Dataset] = {}
_discovered = False
_lock = threading.Lock()


def _as_columns(columns) -> tuple[Column, ...]:
    result = []
    for column in columns:
        if isinstance(column, Column):
            result.append(column)
        elif isinstance(column, (tuple, list)) and len(column) == 2:
            result.append(Column(str(column[0]), str(column[1])))
        else:
            raise RegistryError(f"column {column!r} must be a Column or a (name, description) pair")
    names = [column.name for column in result]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise RegistryError(f"duplicate column names: {', '.join(duplicates)}")
    if not result:
        raise RegistryError("a dataset needs at least one column")
    return tuple(result)


def register_dataset(
    key, *, title, app, columns, min_role=Role.RESEARCHER, extra_columns=None, count=None, batches=None
):
    """Decorator: `@register_dataset("codings", title=..., app="annotation", columns=[Column(...), ...])`
    on a function `rows(study, options) -> Iterator[dict]`.

    extra_columns(study, options) -> [Column] adds study-specific columns after the fixed ones;
    count(study, options) -> int gives the expected row count (for progress); batches(study, options) yields the
    same rows as `rows` in column-wise batches (for a dataset without extra columns)."""
    if not key or not str(key).replace("_", "").replace("-", "").isalnum():
        raise RegistryError(f"dataset key {key!r} must be letters, digits, '-' or '_'")
    if str(min_role) not in LEVELS:
        raise RegistryError(f"dataset {key!r}: unknown min_role {min_role!r}")
    cols = _as_columns(columns)

    def decorator(rows):
        existing = _registry.get(key)
        if existing is not None and (existing.app != app or existing.rows.__qualname__ != rows.__qualname__):
            raise RegistryError(f"dataset {key!r} is already registered by app {existing.app!r}")
        _registry[key] = Dataset(
            key=key,
            title=title,
            app=app,
            columns=cols,
            rows=rows,
            min_role=str(min_role),
            extra_columns=extra_columns,
            count=count,
            batches=batches,
        )
        return rows

    return decorator


def discover():
    """Import `<app>.datasets` for every installed app once (like builtin.all_specs)."""
    global _discovered
    if _discovered:
        return
    with _lock:
        if _discovered:
            return
        for config in apps.get_app_configs():
            module_name = f"{config.name}.datasets"
            if module_name == __name__:
                continue
            try:
                importlib.import_module(module_name)
            except ModuleNotFoundError as exc:
                if exc.name != module_name:
                    raise
        _discovered = True


def datasets() -> dict[str, Dataset]:
    discover()
    return dict(sorted(_registry.items()))


def get_dataset(key) -> Dataset:
    found = datasets().get(key)
    if found is None:
        raise KeyError(f"unknown dataset {key!r}; known: {', '.join(datasets()) or 'none'}")
    return found


def data_dictionary(selected, study=None, options=None) -> list[dict]:
    """Rows (dataset, column, description) for the given datasets (with study-specific columns when a study
    is given)."""
    return [
        {"dataset": dataset.key, "column": column.name, "description": column.description}
        for dataset in selected
        for column in (dataset.columns if study is None else dataset.columns_for(study, options or {}))
    ]


def person(options, user) -> str:
    """How a dataset names a person: the pseudonym when the export pseudonymises, else the username.
    `user` is a User or a (pk, username) pair."""
    if user is None:
        return ""
    pk, username = (user.pk, user.username) if hasattr(user, "pk") else user
    if options.get("pseudonymise"):
        return options["pseudonym"](pk)
    return username


def iso_datetime(field, pattern='YYYY-MM-DD"T"HH24:MI:SS.US"Z"'):
    """A query expression giving a datetime column as ISO 8601 UTC text on PostgreSQL (much cheaper than
    building datetime objects for millions of rows); elsewhere the column itself (writers format it)."""
    from django.db import connection
    from django.db.models import F, Func, TextField, Value

    if connection.vendor != "postgresql":
        return F(field)
    return Func(
        Func(Value("UTC"), F(field), function="timezone", output_field=TextField()),
        Value(pattern),
        function="to_char",
        output_field=TextField(),
    )


def uuid_text(field):
    """A UUID column as canonical text on PostgreSQL; elsewhere the column (str() it)."""
    from django.db import connection
    from django.db.models import F, TextField
    from django.db.models.functions import Cast

    return Cast(field, TextField()) if connection.vendor == "postgresql" else F(field)


def query_batches(queryset, size):
    """The rows of a `values_list` queryset, in its order, as lists of up to `size` tuples; the next batch is read
    while the caller works on this one (stereoscope.pipeline.read_ahead).

    On PostgreSQL outside a transaction the rows come through a connection of their own, from a cursor inside a
    transaction there: PostgreSQL then computes each batch when it is asked for, beside the caller's work. (A
    server-side cursor outside a transaction, as Django's iterator() makes it there, is WITH HOLD: the server
    computes and stores the whole result before the first row, while the caller waits.) Elsewhere, and inside a
    transaction (which must see its own writes), the queryset's own iterator (read ahead on PostgreSQL only). A
    queryset whose columns need Django's conversions (JSON, ...) always takes its own iterator."""
    connection = connections[queryset.db]
    if connection.vendor == "postgresql" and not connection.in_atomic_block:
        compiler = queryset.query.get_compiler(queryset.db)
        try:
            sql, params = compiler.as_sql()
        except EmptyResultSet:  # a filter no row can match: no query at all
            return iter(())
        if not compiler.get_converters([column[0] for column in compiler.select[: compiler.col_count]]):
            return read_ahead(_own_connection_batches(queryset.db, sql, params, size, compiler.col_count))
    rows = queryset.iterator(chunk_size=size)
    batches = iter(lambda: list(islice(rows, size)), [])
    # psycopg lets the caller query on the connection between the fetches of the thread; SQLite is read in turn
    return read_ahead(batches) if connection.vendor == "postgresql" else batches


def _own_connection_batches(alias, sql, params, size, width):
    """Batches of a query run on a new connection to the database `alias` (set up as Django sets up its own), from
    a cursor without hold inside a transaction; the connection is closed when the batches end or are abandoned."""
    from psycopg import ClientCursor  # lazy: PostgreSQL's driver, only asked for on PostgreSQL

    wrapper = connections.create_connection(alias)
    wrapper.inc_thread_sharing()  # opened in the caller's thread, read and closed in read_ahead's
    try:
        wrapper.ensure_connection()
        raw = wrapper.connection
        bound = ClientCursor(raw).mogrify(sql, params)  # bound as Django binds its own queries (client side)
        with raw.transaction(), raw.cursor(name="stereoscope_query_batches") as cursor:
            cursor.execute(bound)
            while rows := cursor.fetchmany(size):
                yield rows if len(rows[0]) == width else [row[:width] for row in rows]
    finally:
        wrapper.close()
