"""The embedded filesystem broker with whole-message writes.

kombu's filesystem transport creates a message file and then writes it, while a consumer moves and reads any file
in the folder without a lock: a worker polling in between read an empty file, died with "Unrecoverable error:
JSONDecodeError" and the message was lost. Here a message is written under a name no consumer picks up
(`….msg.part`) and renamed into place, so a consumer only ever sees whole messages.

The exchange tables (`<control folder>/<exchange>.exchange`, the queues bound to an exchange) had a race of their
own: a worker binding its queue created the file, then locked and wrote it, so a worker starting at the same moment
could lock and read it empty ("JSONDecodeError" at start) or truncate what the other had written. Here a table is
opened without truncation and read, changed and rewritten under its exclusive lock, and an empty table is an
exchange with no queues yet.
"""

import os
import uuid
from time import monotonic

from kombu import transport
from kombu.exceptions import ChannelError
from kombu.transport import filesystem
from kombu.utils.encoding import bytes_to_str, str_to_bytes
from kombu.utils.json import dumps, loads


class Channel(filesystem.Channel):
    def _put(self, queue, payload, **kwargs):
        name = f"{int(round(monotonic() * 1000))}_{uuid.uuid4()}.{queue}.msg"
        final = os.path.join(self.data_folder_out, name)
        partial = f"{final}.part"
        try:
            with open(partial, "wb") as f:
                f.write(str_to_bytes(dumps(payload)))
            os.replace(partial, final)
        except OSError as exc:
            raise ChannelError(f"Cannot add file {final!r} to directory") from exc

    def _read_table(self, f_obj):
        text = bytes_to_str(f_obj.read())
        return [filesystem.exchange_queue_t(*q) for q in loads(text)] if text.strip() else []

    def get_table(self, exchange):
        file = self._exchange_file(exchange)
        try:
            with open(file, "rb") as f_obj:
                filesystem.lock(f_obj, filesystem.LOCK_SH)
                try:
                    return self._read_table(f_obj)
                finally:
                    filesystem.unlock(f_obj)
        except FileNotFoundError:
            return []
        except OSError as exc:
            raise ChannelError(f"Cannot open {file}") from exc

    def _change_table(self, exchange, change, create):
        """Read, change and rewrite an exchange's table under its exclusive lock (`change(queues)` edits the list
        and says whether it changed it). With `create` a missing table is created (never truncated before the lock
        is held); without, a missing table is left missing."""
        file = self._exchange_file(exchange)
        try:
            fd = os.open(file, os.O_RDWR | (os.O_CREAT if create else 0), 0o644)
        except FileNotFoundError:
            return
        except OSError as exc:
            raise ChannelError(f"Cannot open {file}") from exc
        with open(fd, "rb+", buffering=0) as f_obj:
            filesystem.lock(f_obj, filesystem.LOCK_EX)
            try:
                queues = self._read_table(f_obj)
                if change(queues):
                    f_obj.seek(0)
                    f_obj.truncate()
                    f_obj.write(str_to_bytes(dumps(queues)))
            finally:
                filesystem.unlock(f_obj)

    def _queue_bind(self, exchange, routing_key, pattern, queue):
        self.control_folder.mkdir(exist_ok=True)
        binding = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")

        def add(queues):
            if binding in queues:
                return False
            queues.insert(0, binding)
            return True

        self._change_table(exchange, add, create=True)

    def _delete(self, queue, exchange, routing_key, pattern, *args, **kwargs):
        super(filesystem.Channel, self)._delete(queue, exchange, routing_key, pattern, *args, **kwargs)
        binding = filesystem.exchange_queue_t(routing_key or "", pattern or "", queue or "")

        def remove(queues):
            if binding not in queues:
                return False
            queues.remove(binding)
            return True

        self._change_table(exchange, remove, create=False)


class Transport(filesystem.Transport):
    Channel = Channel


def use_whole_message_writes():
    """Make `filesystem://` broker URLs use this transport (producers and workers both import the Celery app)."""
    transport.TRANSPORT_ALIASES["filesystem"] = "stereoscope.broker:Transport"
