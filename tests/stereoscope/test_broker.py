"""The embedded filesystem broker: a worker polling while a message is being written never reads half of it."""

import json

import pytest
from kombu import Connection
from kombu.transport import filesystem

import stereoscope.broker as broker
from stereoscope.celery import app  # noqa: F401  (installs the transport for filesystem://)


def test_a_consumer_polling_mid_write_sees_no_message_then_the_whole_one(tmp_path, monkeypatch):
    options = {"data_folder_in": str(tmp_path), "data_folder_out": str(tmp_path), "store_processed": False}
    with (
        Connection("filesystem://", transport_options=options) as producer_conn,
        Connection("filesystem://", transport_options=options) as consumer_conn,
    ):
        producer, consumer = producer_conn.default_channel, consumer_conn.default_channel
        assert isinstance(producer, broker.Channel)
        seen_mid_write = []
        real_dumps = broker.dumps

        def dumps_while_a_worker_polls(payload):
            try:
                seen_mid_write.append(consumer._get("jobs"))
            except filesystem.Empty:
                seen_mid_write.append("empty")
            except json.JSONDecodeError as exc:  # what kombu's own transport let a worker read
                seen_mid_write.append(exc)
            return real_dumps(payload)

        monkeypatch.setattr(broker, "dumps", dumps_while_a_worker_polls)
        producer._put("jobs", {"body": "whole"})
        assert seen_mid_write == ["empty"]
        assert consumer._get("jobs") == {"body": "whole"}
        with pytest.raises(filesystem.Empty):
            consumer._get("jobs")


def control_channel(tmp_path):
    options = {
        "data_folder_in": str(tmp_path),
        "data_folder_out": str(tmp_path),
        "control_folder": str(tmp_path / "control"),
        "store_processed": False,
    }
    return Connection("filesystem://", transport_options=options)


def test_a_worker_binding_while_another_creates_the_exchange_table_does_not_fail(tmp_path):
    """Workers starting together: one has created `<exchange>.exchange` but not written it yet when the next binds
    its queue or reads the table. kombu's transport read the empty file as JSON and the worker died at start
    ("JSONDecodeError: Expecting value"; seen in a .ci/run scale-out test)."""
    with control_channel(tmp_path) as conn:
        channel = conn.default_channel
        table = channel._exchange_file("jobs")
        table.parent.mkdir(exist_ok=True)
        table.write_bytes(b"")  # created by the other worker, its write still to come
        assert channel.get_table("jobs") == []
        channel._queue_bind("jobs", "q1", None, "q1")
        channel._queue_bind("jobs", "q2", None, "q2")
        channel._queue_bind("jobs", "q1", None, "q1")
        assert sorted(q.queue for q in channel.get_table("jobs")) == ["q1", "q2"]
        assert json.loads(table.read_text()) == [["q2", "", "q2"], ["q1", "", "q1"]]
        channel._delete("q2", "jobs", "q2", None)
        assert [q.queue for q in channel.get_table("jobs")] == ["q1"]
        table.write_bytes(b"")
        channel._delete("q1", "jobs", "q1", None)  # an empty table: nothing to remove, no error


def _bind_many(folder, worker, start):
    import os
    import time

    while time.time() < start:
        time.sleep(0.001)
    with control_channel(folder) as conn:
        for i in range(20):
            conn.default_channel._queue_bind("jobs", f"w{worker}-{i}", None, f"w{worker}-{i}")
    os._exit(0)


def test_workers_binding_at_once_keep_every_binding(tmp_path):
    import multiprocessing
    import time

    context = multiprocessing.get_context("fork")
    start = time.time() + 0.5
    procs = [context.Process(target=_bind_many, args=(tmp_path, w, start)) for w in range(6)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(30)
    assert [p.exitcode for p in procs] == [0] * 6
    with control_channel(tmp_path) as conn:
        bound = {q.queue for q in conn.default_channel.get_table("jobs")}
    assert bound == {f"w{w}-{i}" for w in range(6) for i in range(20)}
