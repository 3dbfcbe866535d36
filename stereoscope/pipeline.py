"""Two background threads for streaming exports, so the two cores work at once. No Django.

- `read_ahead(items)`: the next items of an iterator are computed in a thread while the caller works on the current
  one (a database cursor's next batch is fetched while the last is formatted: the database server works meanwhile);
- `Background(consume)`: items handed to `consume` in a thread; `BackgroundWriter(raw)`: a binary file whose bytes
  reach `raw` that way (a zip member's compression, CRC and hash, which release the GIL, beside the code that makes
  the bytes). Worth it for big items: for many small ones (10,000 files of a .qdpx) the hand-overs of the GIL cost
  what the thread saves.

Both keep the order of their items and bytes, hold at most `depth` items in flight (memory stays flat), raise the
thread's exception in the caller, and stop their thread when the caller stops early.
"""

import contextlib
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


class Background:
    """Calls `consume(item)` for each `put(item)`, in order, in a background thread (holding at most `depth`
    items). `close()` (or the end of a `with` block) waits until every item is consumed. A failure of the thread
    is raised once, by the next `put` or by `close`, and the items after it are dropped."""

    def __init__(self, consume, depth=4, name="background"):
        self._consume = consume
        self._queue: queue.Queue = queue.Queue(maxsize=depth)
        self._error: BaseException | None = None
        self._reported = False
        self.closed = False
        self._thread = threading.Thread(target=self._work, name=name, daemon=True)
        self._thread.start()

    def _work(self):
        while True:
            item = self._queue.get()
            if item is _END:
                return
            if self._error is None:
                try:
                    self._consume(item)
                except BaseException as exc:  # raised in the caller at its next put or close
                    self._error = exc

    def _raise(self):
        if self._error is not None and not self._reported:
            self._reported = True
            raise self._error

    def put(self, item):
        self._raise()
        self._queue.put(item)

    def close(self):
        if not self.closed:
            self.closed = True
            self._queue.put(_END)
            self._thread.join()
        self._raise()

    def __enter__(self):
        return self

    def __exit__(self, kind, error, traceback):
        if error is None:
            self.close()
        else:
            with contextlib.suppress(Exception):  # the caller's failure is the one to report
                self.close()


class BackgroundWriter(io.RawIOBase):
    """A writable binary file handing its bytes to `raw.write` in a background thread, in order (`Background`).
    `close()` (or the end of a `with` block) waits until every byte is written; `raw` stays open. A failure of the
    thread is raised once, by the next `write` or by `close`, and the bytes after it are dropped."""

    def __init__(self, raw, depth=4):
        super().__init__()
        self.raw = raw
        self._background = Background(raw.write, depth, name="background-writer")

    def writable(self):
        return True

    def write(self, data):
        data = bytes(data)  # a buffered writer hands over a view of its own buffer, which it reuses
        self._background.put(data)
        return len(data)

    def close(self):
        if not self.closed:
            try:
                self._background.close()
            finally:
                super().close()
