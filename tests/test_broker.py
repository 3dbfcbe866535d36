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
