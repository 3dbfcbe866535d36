"""stereoscope.datasets.query_batches: a values_list queryset's rows in order, in batches, read ahead of the caller;
on PostgreSQL outside a transaction through a connection of its own (whose server computes each batch when asked,
not the whole result before the first row), inside a transaction through the caller's own."""

import datetime
import time
from decimal import Decimal

import pytest
from django.db import connection, transaction
from django.db.models import TextField
from django.db.models.expressions import RawSQL

from stereoscope.datasets import iso_datetime, query_batches, uuid_text
from stereoscope.models import Study

pytestmark = pytest.mark.django_db(transaction=True)


def studies():
    start = datetime.datetime(2026, 11, 28, 21, 0, 0, 5, tzinfo=datetime.timezone.utc)
    for n in range(23):
        Study.objects.create(
            name=f'=study {n}, "quoted"\n{n % 3}',
            created_at=start + datetime.timedelta(seconds=n, microseconds=n),
            spending_cap_usd=Decimal("1.50") if n % 2 else None,
        )
    return Study.objects.order_by("-pk")


def test_query_batches_give_the_querysets_rows_in_order_in_batches():
    queryset = studies().annotate(stamp=iso_datetime("created_at")).values_list("pk", "name", "stamp", "is_library")
    expected = list(queryset)
    for size in (1, 5, 23, 1000):
        batches = list(query_batches(queryset, size))
        assert [row for batch in batches for row in batch] == expected
        assert [len(batch) for batch in batches][:-1] == [size] * (len(batches) - 1)
    assert list(query_batches(queryset.none(), 5)) == []
    assert list(query_batches(queryset.filter(name="nobody"), 5)) == []


def test_columns_django_converts_are_converted():
    queryset = studies().values_list("pk", "spending_cap_usd", "created_at")
    assert [row for batch in query_batches(queryset, 4) for row in batch] == list(queryset)


@pytest.mark.skipif(connection.vendor != "postgresql", reason="a connection of its own is for PostgreSQL")
def test_on_postgresql_outside_a_transaction_the_rows_come_through_a_connection_of_their_own():
    studies()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        own = str(cursor.fetchone()[0])
    backend = RawSQL("pg_backend_pid()::text", [], output_field=TextField())  # text: no conversion
    queryset = Study.objects.order_by("pk").annotate(backend=backend).values_list("pk", "backend")
    pids = {row[1] for batch in query_batches(queryset, 5) for row in batch}
    assert len(pids) == 1 and own not in pids
    with transaction.atomic():  # a transaction sees its own writes: its own connection
        Study.objects.create(name="written in this transaction")
        rows = [row for batch in query_batches(queryset, 5) for row in batch]
        assert {row[1] for row in rows} == {own} and len(rows) == 24
    with connection.cursor() as cursor:  # the other connection was closed, also when its batches were abandoned
        batches = query_batches(queryset, 2)
        next(batches)
        batches.close()
        deadline = time.monotonic() + 30
        while True:  # the server ends a closed connection's backend a moment after the client closes it
            cursor.execute("SELECT count(*) FROM pg_stat_activity WHERE pid = ANY(%s)", [[int(pid) for pid in pids]])
            if cursor.fetchone()[0] == 0:
                break
            assert time.monotonic() < deadline, "the connection of the batches was left open"


def test_uuid_text_reads_as_text():
    studies()
    from annotation.models import Codebook

    Codebook.objects.create(study=Study.objects.first(), name="book")
    queryset = Codebook.objects.annotate(text=uuid_text("guid")).values_list("text", flat=False)
    assert [str(row[0]) for batch in query_batches(queryset, 2) for row in batch] == [str(row[0]) for row in queryset]
