"""stereoscope.pipeline: items read ahead in a thread and bytes written from one keep their order, bring the
thread's failure to the caller, and stop the thread when the caller stops early."""

import io
import threading

import pytest

from stereoscope.pipeline import BackgroundWriter, read_ahead


def test_read_ahead_keeps_order_and_makes_the_first_item_in_the_calling_thread():
    made_in = []

    def items():
        for n in range(50):
            made_in.append(threading.current_thread())
            yield [n] * n

    assert list(read_ahead(items())) == [[n] * n for n in range(50)]
    assert made_in[0] is threading.current_thread()
    assert any(thread is not threading.current_thread() for thread in made_in[1:])
    assert list(read_ahead(iter([]))) == []


def test_read_ahead_raises_the_threads_failure_in_the_caller():
    def items():
        yield 1
        yield 2
        raise KeyError("broken")

    seen = []
    with pytest.raises(KeyError, match="broken"):
        for item in read_ahead(items()):
            seen.append(item)
    assert seen == [1, 2]


def test_read_ahead_stops_its_thread_when_the_caller_stops_early():
    made = []

    def items():
        for n in range(10_000):
            made.append(n)
            yield n

    reader = read_ahead(items(), depth=2)
    assert [next(reader) for _ in range(3)] == [0, 1, 2]
    reader.close()  # what a `for` loop left by an exception does
    assert len(made) <= 3 + 2 + 2  # at most `depth` queued and one in hand beyond what was taken
    assert not [t for t in threading.enumerate() if t.name == "read-ahead"]


def test_background_writer_writes_every_byte_in_order():
    raw = io.BytesIO()
    with BackgroundWriter(raw, depth=2) as writer:
        buffered = io.BufferedWriter(writer, buffer_size=7)  # reuses its buffer between writes
        for n in range(2000):
            buffered.write(b"%d," % n)
        buffered.flush()
    assert raw.getvalue() == b"".join(b"%d," % n for n in range(2000))
    assert not raw.closed


def test_background_writer_raises_the_threads_failure():
    class Broken(io.RawIOBase):
        def writable(self):
            return True

        def write(self, data):
            raise OSError("disk full")

    writer = BackgroundWriter(Broken())
    writer.write(b"x")
    with pytest.raises(OSError, match="disk full"):
        for _ in range(1000):  # a later write sees it, or else close
            writer.write(b"y")
        writer.close()
    writer.close()
    assert writer.closed
