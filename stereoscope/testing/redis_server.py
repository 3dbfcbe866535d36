"""A private redis-server for fault tests: on a free port of 127.0.0.1, in its own folder, never the shared one.

with PrivateRedis(tmp_path) as redis:
    url = redis.url(0)        # redis://127.0.0.1:<port>/0
    redis.stop()              # as an outage would (SIGKILL)
    redis.start()             # back on the same port, empty (no persistence)
"""

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class PrivateRedis:
    def __init__(self, folder, port=None):
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.port = port or free_port()
        self.process = None
        self.binary = shutil.which("redis-server")
        if self.binary is None:
            raise RuntimeError("redis-server is not installed (Debian: redis-server)")

    def url(self, db=0):
        return f"redis://127.0.0.1:{self.port}/{db}"

    def start(self, timeout=30):
        args = [self.binary, "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        args += ["--appendonly", "no", "--dir", str(self.folder)]
        log = open(self.folder / "redis.log", "a")
        self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        log.close()
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"redis-server exited: {(self.folder / 'redis.log').read_text()[-2000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as s:
                    s.sendall(b"PING\r\n")
                    if s.recv(16).startswith(b"+PONG"):
                        return self
            except OSError:
                pass
            time.sleep(0.1)
        raise RuntimeError(f"redis-server did not answer on port {self.port} within {timeout} s")

    def stop(self):
        if self.process is not None and self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGKILL)
            self.process.wait(30)
        self.process = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
