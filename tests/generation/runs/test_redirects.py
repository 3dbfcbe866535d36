"""A provider call never follows a redirect. The SDKs follow redirects by default, and httpx keeps every header but
Authorization when a redirect leads to another host: Anthropic's `x-api-key` (and, for a 307 or 308, the prompts)
went to whatever host an approved connection pointed to. A redirect is now an error that names it."""

import asyncio
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from generation.runs.providers import ProviderError, get_provider

pytestmark = pytest.mark.django_db
MESSAGES = [{"role": "user", "content": "Write about a nurse."}]


class _Server:
    """A server on 127.0.0.1 that records each request's headers and answers every request with `answer(path)`:
    (status, headers)."""

    def __init__(self, answer):
        seen = self.seen = []

        class Handler(BaseHTTPRequestHandler):
            def _any(self):
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                seen.append({k.lower(): v for k, v in self.headers.items()})
                status, headers = answer(self.path)
                self.send_response(status)
                for name, value in {**headers, "Content-Length": "0"}.items():
                    self.send_header(name, value)
                self.end_headers()

            do_GET = do_POST = _any

            def log_message(self, *args):
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def redirected():
    """An approved-looking host that redirects every request to a second host, which records what reaches it."""
    elsewhere = _Server(lambda path: (200, {}))
    redirector = _Server(lambda path: (307, {"Location": elsewhere.url + path}))
    yield redirector, elsewhere
    redirector.close()
    elsewhere.close()


def complete_async(adapter):
    """The adapter's async answer to MESSAGES (its client closed after)."""

    async def go():
        try:
            return await adapter.acomplete(MESSAGES, {})
        finally:
            await adapter.aclose()

    return asyncio.run(go())


@pytest.mark.parametrize("provider", ["openai", "openai_compatible", "anthropic"])
@pytest.mark.parametrize("path", ["sync", "async"])
def test_a_redirect_is_not_followed_and_the_key_stays_with_the_approved_host(
    study, make_endpoint, redirected, provider, path
):
    redirector, elsewhere = redirected
    base = redirector.url if provider == "anthropic" else redirector.url + "/v1"
    adapter = get_provider(make_endpoint(study, provider, base_url=base, max_attempts=1))
    with pytest.raises(ProviderError) as info:
        adapter.complete(MESSAGES, {}) if path == "sync" else complete_async(adapter)
    assert "HTTP 307" in str(info.value) and info.value.http_status == 307
    assert len(redirector.seen) == 1
    assert elsewhere.seen == []  # neither the key nor the prompt left the approved host


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_the_batch_apis_do_not_follow_a_redirect_either(study, make_endpoint, redirected, provider):
    from generation.runs.providers.batch_api import batch_api

    redirector, elsewhere = redirected
    base = redirector.url if provider == "anthropic" else redirector.url + "/v1"
    api = batch_api(make_endpoint(study, provider, base_url=base, max_attempts=1, batch_enabled=True))
    with api.client() as client, pytest.raises(Exception) as info:
        if provider == "anthropic":
            client.messages.batches.retrieve("msgbatch_1")
        else:
            client.batches.retrieve("batch_1")
    assert "307" in str(info.value)
    assert elsewhere.seen == []
