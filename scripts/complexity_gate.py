"""The complexity gate of `make lint`: no function may be more complex than 15 (ruff's C901, McCabe), except the
offenders listed in scripts/complexity_baseline.txt, and those only ever shrink.

Fails when a function not on the list exceeds 15, when a listed one grew, or when a listed one is no longer an
offender (then delete its line: the list only shrinks). `--write` rewrites the list from the code as it is.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / "scripts" / "complexity_baseline.txt"
MAX = 15
MESSAGE = re.compile(r"`(?P<name>[^`]+)` is too complex \((?P<value>\d+) > \d+\)")


def offenders(root=ROOT):
    ruff = Path(sys.executable).with_name("ruff")
    out = subprocess.run(
        [
            str(ruff),
            "check",
            "--select",
            "C901",
            "--config",
            f"lint.mccabe.max-complexity={MAX}",
            "--output-format",
            "json",
            "--exit-zero",
            ".",
        ],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    found = {}
    for item in json.loads(out):
        match = MESSAGE.match(item["message"])
        key = f"{Path(item['filename']).resolve().relative_to(root.resolve())}::{match['name']}"
        found[key] = max(found.get(key, 0), int(match["value"]))
    return found


def baseline(path=BASELINE):
    listed = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            key, value = line.rsplit(maxsplit=1)
            listed[key] = int(value)
    return listed


def main(argv):
    found = offenders()
    if "--write" in argv:
        lines = [f"{key} {value}" for key, value in sorted(found.items())]
        header = "# function complexity (C901 over 15), allowed to shrink only: scripts/complexity_gate.py\n"
        BASELINE.write_text(header + "\n".join(lines) + "\n", encoding="utf-8")
        return 0
    listed = baseline()
    problems = []
    for key, value in sorted(found.items()):
        if key not in listed:
            problems.append(f"{key}: complexity {value} > {MAX}; split it up")
        elif value > listed[key]:
            problems.append(f"{key}: complexity {value}, more than the {listed[key]} listed; it may only shrink")
    for key, value in sorted(listed.items()):
        if key not in found:
            problems.append(f"{key}: no longer over {MAX}; delete its line from {BASELINE.relative_to(ROOT)}")
        elif found[key] < value:
            problems.append(f"{key}: now {found[key]}; lower its line in {BASELINE.relative_to(ROOT)} to {found[key]}")
    for problem in problems:
        print(problem)
    print(f"complexity gate: {len(found)} functions over {MAX} (listed: {len(listed)}), {len(problems)} problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
