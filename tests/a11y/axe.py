"""axe-core in Playwright: the vendored script (tests/assets/axe/, see VERSION) and a runner that reports the
serious and critical WCAG 2.1 A/AA violations on the current page."""

import time
from pathlib import Path

AXE_DIR = Path(__file__).resolve().parent.parent / "assets" / "axe"
WCAG_TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
BLOCKING = {"serious", "critical"}

RUN_AXE = """async (tags) => {
  const result = await axe.run(document, {runOnly: {type: 'tag', values: tags}, resultTypes: ['violations']});
  return result.violations.map(v => ({id: v.id, impact: v.impact, help: v.help,
    nodes: v.nodes.map(n => ({target: n.target.join(' '), summary: (n.failureSummary || '').slice(0, 300)}))}));
}"""


def axe_source():
    return (AXE_DIR / "axe.min.js").read_text(encoding="utf-8")


def install_axe(context):
    """Inject axe-core into every page the browser context opens."""
    context.add_init_script(script=axe_source())


def blocking_violations(page):
    """The serious and critical violations of WCAG 2.1 A/AA rules on the page as it is now."""
    if not page.evaluate("() => typeof axe !== 'undefined'"):
        page.add_script_tag(content=axe_source())
    return [v for v in page.evaluate(RUN_AXE, WCAG_TAGS) if v["impact"] in BLOCKING]


def describe(violations):
    lines = []
    for v in violations:
        lines.append(f"  [{v['impact']}] {v['id']}: {v['help']} ({len(v['nodes'])} elements)")
        lines += [f"      {n['target']} — {n['summary']}" for n in v["nodes"][:6]]
    return "\n".join(lines)


class NetworkWatch:
    """The requests a page has in flight, counted from Playwright's events. `settle()` is a quicker "networkidle":
    Playwright's waits for 500 ms without traffic on every page; this waits for `quiet_ms` without a request in
    flight or started, so a page checked right after load costs a fraction of that."""

    def __init__(self, page):
        self.page = page
        self.in_flight = set()
        self.started = 0
        page.on("request", self._start)
        page.on("requestfinished", self._end)
        page.on("requestfailed", self._end)

    def _start(self, request):
        self.started += 1
        self.in_flight.add(request)

    def _end(self, request):
        self.in_flight.discard(request)

    def settle(self, quiet_ms=150, timeout_s=20):
        """Return once `quiet_ms` have passed with no request in flight and none started."""
        deadline = time.monotonic() + timeout_s
        while True:
            started = self.started
            self.page.wait_for_timeout(quiet_ms)
            if not self.in_flight and self.started == started:
                return
            if time.monotonic() > deadline:
                urls = sorted(r.url for r in self.in_flight)
                raise TimeoutError(f"the page did not settle in {timeout_s} s; in flight: {urls}")
