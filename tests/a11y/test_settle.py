"""The axe walk waits for a page to settle with its own in-flight request count instead of Playwright's
"networkidle" (which always waits 500 ms of silence): it must still wait for a request that a page starts after a
moment (opening a <details> that loads its content) and for that request's answer."""

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from .axe import NetworkWatch

pytestmark = pytest.mark.browser

PAGE = b"""<!doctype html><html><body><main>
<details id="more"><summary>More</summary><div id="slot"></div></details>
<script>
document.getElementById("more").addEventListener("toggle", () => {
  const fill = t => { document.getElementById("slot").textContent = t; };
  setTimeout(() => fetch("/late").then(r => r.text()).then(fill), 60);
});
</script></main></body></html>"""


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        if self.path == "/late":
            time.sleep(0.4)
            body, kind = b"loaded late", "text/plain"
        else:
            body, kind = PAGE, "text/html"
        self.send_response(200)
        self.send_header("Content-Type", kind)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def site():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def test_settle_waits_for_a_request_started_after_a_details_opens(browser, site):
    context = browser.new_context(base_url=site)
    page = context.new_page()
    try:
        watch = NetworkWatch(page)
        page.goto("/", wait_until="load")
        watch.settle()
        assert page.text_content("#slot") == ""
        page.evaluate("() => { document.getElementById('more').open = true; }")
        watch.settle()
        assert page.text_content("#slot") == "loaded late"
        assert not watch.in_flight and watch.started == 2
    finally:
        context.close()
