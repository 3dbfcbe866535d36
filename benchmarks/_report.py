"""The one machine-readable line every benchmark prints for each of its figures (docs/benchmarks.md, top).

    BENCH <name>=<value> <unit> [target<=<number> | target>=<number>] load=<1-min load average>

e.g. `BENCH workspace_open_p95=42.1 ms target<=50 load=1.20`. Names are lowercase `[a-z0-9_.]`, unique across
benchmarks (prefix them with the benchmark, e.g. `generation.ratio_pg`). The target's operator says which way is
better (`<=`: lower is better; `>=`: higher); with no target, lower is better. `make bench` (benchmarks/run_all.py)
collects these lines and compares each with the last line of the same name recorded in docs/benchmarks.md.
"""

import os
import re

LINE = re.compile(
    r"^BENCH (?P<name>[a-z0-9_.]+)=(?P<value>-?[0-9.eE+-]+) (?P<unit>\S+)"
    r"(?: target(?P<op><=|>=)(?P<target>-?[0-9.eE+-]+))? load=(?P<load>[0-9.]+)\s*$"
)


def bench(name, value, unit, *, target=None, higher_is_better=False):
    """Print one BENCH line (and return it). `target` is the bound the figure should meet."""
    op = ">=" if higher_is_better else "<="
    line = f"BENCH {name}={value:.4g} {unit}"
    if target is not None:
        line += f" target{op}{target:g}"
    line += f" load={os.getloadavg()[0]:.2f}"
    print(line, flush=True)
    return line


def parse(text):
    """{name: {"value", "unit", "op", "target", "load"}} from every BENCH line in `text` (the last one wins)."""
    found = {}
    for raw in text.splitlines():
        match = LINE.match(raw.strip().strip("`"))
        if match:
            d = match.groupdict()
            found[d["name"]] = {
                "value": float(d["value"]),
                "unit": d["unit"],
                "op": d["op"],
                "target": float(d["target"]) if d["target"] is not None else None,
                "load": float(d["load"]),
            }
    return found


def meets(figure):
    """True/False against the figure's target; None without one."""
    if figure["target"] is None:
        return None
    if figure["op"] == ">=":
        return figure["value"] >= figure["target"]
    return figure["value"] <= figure["target"]


def regression(figure, recorded, threshold=0.25):
    """The relative worsening of `figure` against the `recorded` one when it exceeds `threshold`, else None."""
    old, new = recorded["value"], figure["value"]
    if old == 0:
        return None
    worse = (old - new) / abs(old) if figure["op"] == ">=" else (new - old) / abs(old)
    return worse if worse > threshold else None
