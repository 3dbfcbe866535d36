"""stereoscope.bulk.bulk_insert stores exactly what the ORM stores (JSON, dates, decimals, foreign keys, defaults)."""

import functools
from datetime import datetime, timezone
from decimal import Decimal

import pytest
from django.db import connection, transaction

from generation.models import Dimension, GenerationRun, ModelEndpoint, Output, PromptItem, ProviderCall, Toolkit
from stereoscope.bulk import bulk_insert, insert_rows
from stereoscope.models import Study

pytestmark = pytest.mark.django_db
FIELDS = [
    "study_id",
    "run_id",
    "item_id",
    "endpoint_id",
    "model_name",
    "trial",
    "variant_key",
    "slot_values",
    "prompt_text",
    "text",
    "external_id",
    "status",
    "error",
    "input_tokens",
    "cost_usd",
    "provenance",
    "completed_at",
]


def stored(outputs):
    return [{name: getattr(o, name) for name in FIELDS} for o in outputs]


def test_bulk_insert_matches_the_orm():
    study = Study.objects.create(name="bulk")
    run = GenerationRun.objects.create(study=study, name="r", is_import=True)
    when = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=timezone.utc)
    shared = {"name": "Kelly"}
    specs = [
        {
            "model_name": "m",
            "trial": i + 1,
            "text": f"=text {i} “é”",
            "slot_values": shared,
            "provenance": {"row": i, "extra": {"seed": [1, None, "x"]}},
            "completed_at": when if i % 2 else None,
            "cost_usd": Decimal("0.000123") if i == 1 else None,
            "input_tokens": i or None,
            "status": "done",
            "variant_key": f"k{i}",
        }
        for i in range(3)
    ]
    orm = [Output.objects.create(study=study, run=run, external_id=f"orm{i}", **spec) for i, spec in enumerate(specs)]
    with transaction.atomic():
        count = bulk_insert(
            Output,
            [{"study": study, "run_id": run.pk, "external_id": f"bulk{i}", **spec} for i, spec in enumerate(specs)],
            batch_size=2,
        )
    assert count == 3
    bulk = list(Output.objects.filter(external_id__startswith="bulk").order_by("trial"))
    expected = stored(orm)
    for row in expected:
        row["external_id"] = row["external_id"].replace("orm", "bulk")
    assert stored(bulk) == expected
    assert all(o.created_at is not None and o.latency_ms is None for o in bulk)  # defaults filled in


def test_bulk_insert_of_nothing_inserts_nothing():
    assert bulk_insert(Output, []) == 0 and not Output.objects.exists()


# --- the other writers of the one bulk module (also run on PostgreSQL by the CI's second pass) --------------------


def test_insert_values_returns_what_it_inserted_and_leaves_conflicts_alone():
    from stereoscope.bulk import insert_values
    from stereoscope.models import BuiltinRecord

    columns = ["kind", "key", "version", "content_hash", "object_id", "loaded_at"]
    now = datetime(2026, 11, 28, tzinfo=timezone.utc).isoformat()
    first = insert_values(
        BuiltinRecord, columns, [("toolkit", f"k{i}", "1", "h", i, now) for i in range(3)], returning=["key"]
    )
    assert sorted(r[0] for r in first) == ["k0", "k1", "k2"]
    again = insert_values(
        BuiltinRecord,
        columns,
        [("toolkit", "k1", "1", "other", 9, now), ("toolkit", "k3", "1", "h", 3, now)],
        ignore_conflicts=True,
        returning=["key"],
    )
    assert again == [("k3",)]
    assert BuiltinRecord.objects.get(key="k1").content_hash == "h"  # the conflicting row was left alone


def test_upsert_add_creates_then_adds_and_update_rows_changes_only_what_matches():
    from generation.models import ProviderConnection, SpendingLedger
    from stereoscope.bulk import update_rows, upsert_add

    study = Study.objects.create(name="ledger")
    connection = ProviderConnection.objects.create(name="c", provider="openai", status="approved")
    month = datetime(2026, 11, 1).date()
    keys = ["study_id", "connection_id", "month"]
    counters = ["calls", "input_tokens", "output_tokens", "cost_usd", "reserved_usd"]
    upsert_add(SpendingLedger, keys, counters, [[study.pk, connection.pk, month, 1, 10, 20, "0.5", "0"]])
    upsert_add(SpendingLedger, keys, counters, [[study.pk, connection.pk, month, 2, 5, -20, "0.25", "0"]])
    row = SpendingLedger.objects.get()
    assert (row.calls, row.input_tokens, row.output_tokens, row.cost_usd) == (3, 15, 0, Decimal("0.75"))
    changed = update_rows(SpendingLedger, ["calls"], [(row.pk, {"calls": 7})], where={"input_tokens": 99})
    assert changed == 0 and SpendingLedger.objects.get().calls == 3
    assert update_rows(SpendingLedger, ["calls"], [(row.pk, {"calls": 7})], where={"input_tokens": 15}) == 1
    assert SpendingLedger.objects.get().calls == 7


def test_update_rows_writes_what_the_orm_would():
    """update_rows sets JSON, text, dates, decimals and None as the ORM does; a name missing from a row gets the
    default; a pk given twice takes its last values; `where` leaves other rows alone."""
    from stereoscope.bulk import update_rows

    study = Study.objects.create(name="update")
    run = GenerationRun.objects.create(study=study, name="r", is_import=True)
    outputs = [
        Output.objects.create(study=study, run=run, model_name="m", trial=t, variant_key=f"k{t}") for t in range(1200)
    ]
    when = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=timezone.utc)
    names = ["text", "status", "provenance", "completed_at", "cost_usd", "input_tokens", "error"]
    rows = [
        (o.pk, {"text": f"=é {o.trial}", "status": "done", "provenance": {"t": [o.trial, None]}, "completed_at": when})
        for o in outputs[:1100]
    ]
    rows.append((outputs[0].pk, {"text": "last", "status": "done", "cost_usd": Decimal("0.5"), "input_tokens": 7}))
    Output.objects.filter(pk=outputs[1].pk).update(status="failed", error="kept")
    changed = update_rows(Output, names, rows, where={"status": "pending"})
    assert changed == 1099  # 1,100 distinct rows asked, one of them no longer pending
    first, failed, done, untouched = (
        Output.objects.get(pk=o.pk) for o in outputs[:2] + outputs[5:6] + outputs[1150:1151]
    )
    assert (first.text, first.cost_usd, first.input_tokens, first.provenance, first.completed_at) == (
        "last",
        Decimal("0.5"),
        7,
        {},  # the default: not given in its last row
        None,
    )
    assert (failed.status, failed.error, failed.text) == ("failed", "kept", "")
    assert (done.text, done.provenance, done.completed_at, done.error) == ("=é 5", {"t": [5, None]}, when, "")
    assert (untouched.status, untouched.text) == ("pending", "")


def raw_sql_writers(source):
    """Raw-SQL writes in a module's source: executemany, COPY, or an INSERT/UPDATE statement built in a string."""
    import re

    pattern = re.compile(r"\.executemany\(|\bCOPY\b.*FROM STDIN|[\"']\s*INSERT INTO\b|f?[\"']UPDATE \{|ON CONFLICT")
    return [line.strip() for line in source.splitlines() if pattern.search(line)]


def test_the_writer_check_sees_raw_sql():
    probe = 'sql = f"INSERT INTO {table} (a) VALUES (%s)"\ncursor.executemany(sql, rows)\nx = "UPDATE me"\n'
    assert len(raw_sql_writers(probe)) == 2


def test_no_module_but_the_bulk_module_writes_sql_itself():
    from pathlib import Path

    from stereoscope.app_names import PROJECT_APPS

    root = Path(__file__).resolve().parents[2]
    found = {}
    for folder in ("stereoscope", *PROJECT_APPS):
        for path in (root / folder).rglob("*.py"):
            if "migrations" in path.parts or path == root / "stereoscope" / "bulk.py":
                continue
            hits = raw_sql_writers(path.read_text(encoding="utf-8"))
            if hits:
                found[str(path.relative_to(root))] = hits
    assert found == {}


def test_insert_rows_returning_ids_gives_each_rows_id_in_order():
    """The runner opens attempt rows this way (one pipeline on PostgreSQL): each id names the row given at its place."""
    from stereoscope.bulk import insert_rows_returning_ids
    from stereoscope.models import BuiltinRecord

    now = datetime(2026, 11, 28, tzinfo=timezone.utc)
    rows = [
        {"kind": "toolkit", "key": f"r{i}", "version": "1", "content_hash": "h", "object_id": i, "loaded_at": now}
        for i in (5, 2, 9, 1, 7)
    ]
    ids = insert_rows_returning_ids(BuiltinRecord, rows)
    assert len(set(ids)) == 5
    assert [BuiltinRecord.objects.get(pk=pk).key for pk in ids] == ["r5", "r2", "r9", "r1", "r7"]
    assert insert_rows_returning_ids(BuiltinRecord, []) == []


def test_insert_rows_stores_the_rows_in_order_and_leaves_conflicts_alone():
    """A run's start creates its outputs this way: each row as given (defaults filled in), ids in the rows' order,
    and with ignore_conflicts a row that breaks a unique constraint is left out while the others go in."""
    study = Study.objects.create(name="rows")
    run = GenerationRun.objects.create(study=study, name="r")
    toolkit = Toolkit.objects.create(study=study, name="t")
    item = PromptItem.objects.create(
        toolkit=toolkit, number=1, text="p", dimension=Dimension.objects.create(toolkit=toolkit, name="d")
    )
    endpoint = ModelEndpoint.objects.create(study=study, name="e", provider="openai_compatible", model_id="m")
    spec = {
        "study": study.pk,
        "run": run.pk,
        "item": item.pk,
        "endpoint": endpoint.pk,
        "model_name": "m",
        "prompt_text": "p",
        "slot_values": {"n": "é"},
    }
    rows = [{**spec, "trial": t, "variant_key": f"k{t}"} for t in (5, 2, 9)]
    runs = []

    def spy(execute, sql, params, many, context):
        runs.append((sql.split()[0].upper(), many))
        return execute(sql, params, many, context)

    with connection.execute_wrapper(spy):
        insert_rows(Output, rows)
        insert_rows(Output, [{**spec, "trial": t, "variant_key": f"k{t}"} for t in (2, 7)], ignore_conflicts=True)
    stored_rows = list(Output.objects.filter(run=run).order_by("pk").values_list("trial", "slot_values", "status"))
    assert stored_rows == [(t, {"n": "é"}, "pending") for t in (5, 2, 9, 7)]
    if connection.vendor == "postgresql":  # COPY into a temporary table, then one INSERT: not a statement a row
        assert ("INSERT", True) not in runs and runs.count(("INSERT", False)) == 2, runs


@pytest.mark.parametrize("model", [Output, ProviderCall, Study], ids=lambda m: m.__name__)
def test_rows_are_prepared_as_the_fields_prepare_them(model):
    """The bulk writers prepare common values without each field's chain of calls (`_preparer`): the same value, of
    the same type (on PostgreSQL an integer goes as the backend's Int4/Int8), as get_db_prep_save gives."""
    from stereoscope.bulk import _preparer

    samples = [None, 0, 7, 2**40, -3, True, False, "", "x é", 1.5, Decimal("0.000123"), {"a": [1]}, [1, "b"]]
    samples.append(datetime(2026, 1, 2, 3, 4, 5, tzinfo=timezone.utc))

    def prepared(prepare, value):
        try:
            result = prepare(value)
        except Exception as exc:  # the field refuses the value: both must
            return ("refused", type(exc).__name__)
        return (type(result), repr(result))

    for field in model._meta.concrete_fields:
        fast = _preparer(connection, field)
        slow = functools.partial(field.get_db_prep_save, connection=connection)
        for value in samples:
            assert prepared(fast, value) == prepared(slow, value), (field.name, value)
