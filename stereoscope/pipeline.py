"""Two background threads for streaming exports, so the two cores work at once. No Django.

- `read_ahead(items)`: the next items of an iterator are computed in a thread while the caller works on the current
  one (a database cursor's next batch is fetched while the last is formatted: the database server works meanwhile);
- `BackgroundWriter(raw)`: a binary file whose bytes reach `raw` from a thread (the zip member's compression, CRC
  and hash, which release the GIL, run beside the code that makes the bytes).

Both keep the order of their items and bytes, hold at most `depth` items in flight (memory stays flat), raise the
thread's exception in the caller, and stop their thread when the caller stops early.
"""

import io
import queue
import threading

_END = object()
_WAIT_S = 0.1  # how often a blocked hand-over looks whether the other side has stopped


class _Failed:
    def __init__(self, error):
        self.error = error


def read_ahead(items, depth=2):
    """Yield the items of `items` in order, the next `depth` made in a background thread. The first item is made in
    the calling thread: a query runs on the caller's database connection (Django's are per thread), and only the
    fetches that follow, on that same cursor, run in the thread."""
    items = iter(items)
    first = next(items, _END)
    if first is _END:
        return
    handover: queue.Queue = queue.Queue(maxsize=depth)
    stopped = threading.Event()

    def put(item):
        while not stopped.is_set():
            try:
                handover.put(item, timeout=_WAIT_S)
                return True
            except queue.Full:
                continue
        return False

    def work():
        try:
            for item in items:
                if not put(item):
                    return
        except BaseException as exc:  # handed to the caller, raised there
            put(_Failed(exc))
            return
        put(_END)

    thread = threading.Thread(target=work, name="read-ahead", daemon=True)
    thread.start()
    try:
        yield first
        while True:
            item = handover.get()
            if item is _END:
                break
            if isinstance(item, _Failed):
                raise item.error
            yield item
    finally:
        stopped.set()
        thread.join()


class BackgroundWriter(io.RawIOBase):
    """A writable binary file handing its bytes to `raw.write` in a background thread, in order. `close()` (or the
    end of a `with` block) waits until every byte is written; `raw` stays open. A failure of the thread is raised
    once, by the next `write` or by `close`, and the bytes after it are dropped."""

    def __init__(self, raw, depth=4):
        super().__init__()
        self.raw = raw
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None  # the thread's failure: every later byte is dropped
        self._reported = False
        self._thread = threading.Thread(target=self._work, name="background-writer", daemon=True)
        self._thread.start()

    def writable(self):
        return True

    def _work(self):
        while True:
            data = self._queue.get()
            if data is _END:
                return
            if self._error is None:
                try:
                    self.raw.write(data)
                except BaseException as exc:  # raised in the caller at its next write or close
                    self._error = exc

    def _raise(self):
        if self._error is not None and not self._reported:
            self._reported = True
            raise self._error

    def write(self, data):
        self._raise()
        data = bytes(data)  # a buffered writer hands over a view of its own buffer, which it reuses
        self._queue.put(data)
        return len(data)

    def close(self):
        if not self.closed:
            try:
                self._queue.put(_END)
                self._thread.join()
            finally:
                super().close()
            self._raise()
