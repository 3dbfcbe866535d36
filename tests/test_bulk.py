"""stereoscope.bulk.bulk_insert stores exactly what the ORM stores (JSON, dates, decimals, foreign keys, defaults)."""
from datetime import datetime, timezone
from decimal import Decimal

import pytest
from django.db import transaction

from generation.models import GenerationRun, Output
from stereoscope.bulk import bulk_insert
from stereoscope.models import Study

pytestmark = pytest.mark.django_db
FIELDS = ["study_id", "run_id", "item_id", "endpoint_id", "model_name", "trial", "variant_key", "slot_values",
          "prompt_text", "text", "external_id", "status", "error", "input_tokens", "cost_usd", "provenance",
          "completed_at"]


def stored(outputs):
    return [{name: getattr(o, name) for name in FIELDS} for o in outputs]


def test_bulk_insert_matches_the_orm():
    study = Study.objects.create(name="bulk")
    run = GenerationRun.objects.create(study=study, name="r", is_import=True)
    when = datetime(2026, 1, 2, 3, 4, 5, 678000, tzinfo=timezone.utc)
    shared = {"name": "Kelly"}
    specs = [{"model_name": "m", "trial": i + 1, "text": f"=text {i} “é”", "slot_values": shared,
              "provenance": {"row": i, "extra": {"seed": [1, None, "x"]}}, "completed_at": when if i % 2 else None,
              "cost_usd": Decimal("0.000123") if i == 1 else None, "input_tokens": i or None,
              "status": "done", "variant_key": f"k{i}"} for i in range(3)]
    orm = [Output.objects.create(study=study, run=run, external_id=f"orm{i}", **spec) for i, spec in enumerate(specs)]
    with transaction.atomic():
        count = bulk_insert(Output, [{"study": study, "run_id": run.pk, "external_id": f"bulk{i}", **spec}
                                     for i, spec in enumerate(specs)], batch_size=2)
    assert count == 3
    bulk = list(Output.objects.filter(external_id__startswith="bulk").order_by("trial"))
    expected = stored(orm)
    for row in expected:
        row["external_id"] = row["external_id"].replace("orm", "bulk")
    assert stored(bulk) == expected
    assert all(o.created_at is not None and o.latency_ms is None for o in bulk)  # defaults filled in


def test_bulk_insert_of_nothing_inserts_nothing():
    assert bulk_insert(Output, []) == 0 and not Output.objects.exists()
