"""A measure run's chunk reads (issue 36): the coders' gender answers and the outputs already measured are read by
the chunk's id range, not a list of 1,000 ids (Django takes milliseconds to build one), with exactly the rows an
id list would give: outputs inside the range but outside the chunk are left out."""

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from measures import scoring
from measures.models import OutputMeasure

pytestmark = pytest.mark.django_db


def _reads(fn, *args):
    with CaptureQueriesContext(connection) as ctx:
        result = fn(*args)
    return result, [q["sql"] for q in ctx.captured_queries]


def test_chunk_reads_use_the_id_range_and_keep_only_the_chunk(study, make_outputs, make_user):
    from annotation.models import GenderAttribution

    outputs = make_outputs(study, [{"text": f"Kelly is kind {i}.", "slot_values": {"name": "Kelly"}} for i in range(8)])
    ids = [o.pk for o in outputs]
    chunk = ids[:2] + ids[3:6] + ids[7:]  # outputs 2 and 6 lie inside the range but are not in the chunk
    coder, other = make_user("c1"), make_user("c2")
    for i, o in enumerate(outputs):
        GenderAttribution.objects.create(output=o, coder=coder, gender="F" if i % 2 else "M")
    GenderAttribution.objects.create(output=outputs[0], coder=other, gender="F")

    found, sql = _reads(scoring.attributions_for, chunk)
    assert found == {
        o.pk: (["M", "F"] if i == 0 else ["F" if i % 2 else "M"]) for i, o in enumerate(outputs) if o.pk in chunk
    }
    assert all(" IN (" not in q for q in sql), sql

    run = scoring.create_run(study, name="r", classifier="vader")
    OutputMeasure.objects.create(run=run, output=outputs[4], language="en")
    OutputMeasure.objects.create(run=run, output=outputs[6], language="en")
    units, sql = _reads(scoring.MEASURE_JOB.load_units, run, chunk)
    assert [u.pk for u in units] == [pk for pk in chunk if pk != outputs[4].pk]
    measured = [q for q in sql if "measures_outputmeasure" in q]
    assert measured and all(" IN (" not in q for q in measured), measured


def test_a_chunks_outputs_are_read_by_their_id_range(study, make_outputs):
    outputs = make_outputs(study, [{"text": f"Kelly is kind {i}.", "slot_values": {"name": "Kelly"}} for i in range(8)])
    ids = [o.pk for o in outputs]
    chunk = ids[:2] + ids[3:6] + ids[7:]
    run = scoring.create_run(study, name="r", classifier="vader")
    units, sql = _reads(scoring.MEASURE_JOB.load_units, run, chunk)
    assert [(u.pk, u.text, u.slot_values) for u in units] == [
        (o.pk, o.text, o.slot_values) for o in outputs if o.pk in chunk
    ]
    read = [q for q in sql if "generation_output" in q]
    assert read and all(" IN (" not in q for q in read), read
    sparse = [ids[0], ids[7]]  # far apart (the range would read six other outputs): read by the list
    assert [u.pk for u in scoring.load_outputs(sparse)] == sparse
    assert scoring.load_outputs([]) == []


def test_a_chunks_slot_values_are_decoded_at_once_as_the_orm_decodes_them(study, make_outputs, monkeypatch):
    """The slot values of a chunk's outputs are read as text and decoded by one json.loads: the same values as the
    ORM's (nested, unicode, empty, numbers), not one json.loads per output."""
    import json as json_module

    values = [
        {"name": "Kelly"},
        {},
        {"name": 'Zoë "Q" \u2028', "age": 31, "score": 0.1, "tags": ["a", {"b": None}], "ok": True},
        {"name": "Joseph", "n": -0.0},
    ]
    outputs = make_outputs(study, [{"text": f"Kelly is kind {i}.", "slot_values": v} for i, v in enumerate(values)])
    calls = []
    loads = json_module.loads
    monkeypatch.setattr(json_module, "loads", lambda *a, **k: calls.append(1) or loads(*a, **k))
    units = scoring.load_outputs([o.pk for o in outputs])
    assert len(calls) == 1
    monkeypatch.undo()
    expected = [type(o).objects.get(pk=o.pk) for o in outputs]
    assert [(u.pk, u.text, u.slot_values, u.item_id, u.language) for u in units] == [
        (o.pk, o.text, o.slot_values or {}, o.item_id, "en") for o in expected
    ]
    assert [json_module.dumps(u.slot_values) for u in units] == [json_module.dumps(o.slot_values) for o in expected]
