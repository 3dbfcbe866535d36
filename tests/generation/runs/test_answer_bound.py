"""A live answer's body is bounded: it is asked for unencoded (`Accept-Encoding: identity`), and an answer that is
encoded anyway or longer than the bound is a clear error before more of it is read. The SDKs hold a whole body in
memory: a host that sent gigabytes, or a small gzip body that decodes to gigabytes, could exhaust a worker."""

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from generation.runs.providers import ProviderError, anthropic_provider, get_provider, openai_provider
from tests.generation.runs.test_redirects import MESSAGES, complete_async

pytestmark = pytest.mark.django_db
LIMIT = 1000


class _Server:
    """Answers every request as `kind` says; records each request's headers."""

    def __init__(self, kind):
        seen = self.seen = []

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self):
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                seen.append({k.lower(): v for k, v in self.headers.items()})
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                if kind == "declared":  # says it is huge; sends a little
                    self.send_header("Content-Length", str(10 * LIMIT))
                    self.end_headers()
                    self.wfile.write(b"{}")
                elif kind == "chunked":  # no length: chunks, endlessly
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    chunk = b'"' + b"x" * 200 + b'"'
                    try:
                        for _ in range(1000):
                            self.wfile.write(b"%x\r\n%s\r\n" % (len(chunk), chunk))
                    except (BrokenPipeError, ConnectionResetError):
                        pass
                else:  # gzip, whatever was asked for
                    body = b"\x1f\x8b" + b"0" * 20
                    self.send_header("Content-Encoding", "gzip")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                self.close_connection = True

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.mark.parametrize("provider", ["openai_compatible", "anthropic"])
@pytest.mark.parametrize("path", ["sync", "async"])
@pytest.mark.parametrize(
    "kind,message",
    [
        ("declared", "larger than"),
        ("chunked", "larger than"),
        ("gzip", "encoded answer (gzip) though none was asked for"),
    ],
)
def test_an_answer_beyond_the_bound_or_encoded_is_refused(
    study, make_endpoint, monkeypatch, provider, path, kind, message
):
    monkeypatch.setattr(openai_provider, "MAX_ANSWER_BYTES", LIMIT)
    monkeypatch.setattr(anthropic_provider, "MAX_ANSWER_BYTES", LIMIT)
    server = _Server(kind)
    try:
        base = server.url if provider == "anthropic" else server.url + "/v1"
        adapter = get_provider(make_endpoint(study, provider, base_url=base, max_attempts=1))
        with pytest.raises(ProviderError) as info:
            adapter.complete(MESSAGES, {}) if path == "sync" else complete_async(adapter)
    finally:
        server.close()
    assert message in str(info.value) and not info.value.retryable
    assert server.seen[0]["accept-encoding"] == "identity"


def test_the_bound_leaves_ordinary_answers_alone(study, make_endpoint, fake_provider):
    """The real bound is far above any completion: a long answer comes through whole, sync and async."""
    text = "word " * 20_000
    for provider in ("openai_compatible", "anthropic"):
        endpoint = make_endpoint(study, provider)
        fake_provider.script([{"text": text}, {"text": text}])
        assert get_provider(endpoint).complete(MESSAGES, {}).text == text
        assert complete_async(get_provider(endpoint)).text == text
