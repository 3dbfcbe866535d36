"""`make bench`: run every benchmark, print each figure beside its target and its last recorded figure in
docs/benchmarks.md, and flag a regression over 25% (issue 36).

    .venv/bin/python benchmarks/run_all.py [--quick] [--only NAME,...] [--fail-on-regression]

Each benchmark prints `BENCH name=value unit target... load=...` lines (benchmarks/_report.py); a benchmark that
prints none yet is listed as such. --quick runs smaller sizes (a few minutes in all); its figures are named
`quick.<name>` so they are compared only with recorded quick figures. Benchmarks defined on PostgreSQL (+ Redis) run
when BENCH_POSTGRES names a server (e.g. postgres://postgres@127.0.0.1:5432; a fresh database is created and
dropped for each) and BENCH_REDIS a Redis database for the one that needs a broker; otherwise they are skipped.
"""

import argparse
import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._report import meets, parse, regression  # noqa: E402

RECORDED = ROOT / "docs" / "benchmarks.md"

# script, full-size arguments, quick arguments (None: skipped in quick mode), what it needs, a suffix for its
# figures' names (the same script on two databases)
BENCHMARKS = [
    ("first_start.py", [], [], None, ""),
    ("generation_throughput.py", [], ["--units", "500"], None, ""),
    ("generation_throughput.py", [], ["--units", "500"], "postgres+redis", ".pg"),
    ("agreement_speed.py", [], None, None, ""),
    ("text_measures.py", [], ["--stories", "1000", "--workers", "0"], None, ""),
    ("psychometrics_report.py", [], None, None, ""),
    ("genruns_output_viewer.py", [], ["--outputs", "5000"], None, ""),
    ("import_outputs.py", [], ["--outputs", "10000"], None, ""),
    ("coding_workspace.py", [], ["--outputs", "5000", "--samples", "30"], "postgres", ""),
    ("export_speed.py", [], None, "postgres", ""),
    ("scale_out.py", [], None, "postgres+redis", ""),
]


def recorded_figures():
    return parse(RECORDED.read_text(encoding="utf-8")) if RECORDED.exists() else {}


def run_one(script, args, needs, env, timeout):
    """The benchmark's output (stdout + stderr) and exit status; a PostgreSQL one gets a fresh database."""
    env = dict(env)
    db = None
    if needs:
        server = os.environ["BENCH_POSTGRES"].rstrip("/")
        db = f"stereoscope_bench_{uuid.uuid4().hex[:8]}"
        subprocess.run(["psql", f"{server}/postgres", "-qc", f"CREATE DATABASE {db}"], check=True)
        env["DATABASE_URL"] = f"{server}/{db}"
        if "redis" in needs:
            env["CELERY_BROKER_URL"] = os.environ["BENCH_REDIS"]
        subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True, timeout=timeout)
    try:
        done = subprocess.run(
            [sys.executable, str(ROOT / "benchmarks" / script), *args],
            cwd=ROOT,
            env=env,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
        return done.stdout + done.stderr, done.returncode
    except subprocess.TimeoutExpired as exc:
        return (exc.stdout or b"").decode() if isinstance(exc.stdout, bytes) else (exc.stdout or ""), "timeout"
    finally:
        if db:
            subprocess.run(["psql", f"{server}/postgres", "-qc", f"DROP DATABASE IF EXISTS {db} WITH (FORCE)"])


def compare(figures, recorded, prefix=""):
    """Lines: each figure beside its target and its last recorded figure; and the names that regressed."""
    lines, regressed = [], []
    for name, fig in figures.items():
        key = prefix + name
        target = f"target {fig['op']} {fig['target']:g}" if fig["target"] is not None else "no target"
        verdict = {True: "OK", False: "MISSED", None: ""}[meets(fig)]
        old = recorded.get(key)
        was = f"recorded {old['value']:g} (load {old['load']:g})" if old else "not recorded"
        worse = regression(fig, old) if old else None
        flag = f"  REGRESSION {100 * worse:.0f}% worse" if worse is not None else ""
        if worse is not None:
            regressed.append(key)
        lines.append(
            f"  {key:<44} {fig['value']:>10g} {fig['unit']:<4} {target:<16} {verdict:<6} {was}"
            f" load {fig['load']:g}{flag}"
        )
    return lines, regressed


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes; compared with recorded quick.* figures")
    parser.add_argument("--only", default="", help="comma-separated script names (e.g. first_start,coding_workspace)")
    parser.add_argument("--timeout", type=float, default=3600, help="seconds per benchmark")
    parser.add_argument("--fail-on-regression", action="store_true")
    args = parser.parse_args()
    only = {name.strip().removesuffix(".py") for name in args.only.split(",") if name.strip()}
    recorded = recorded_figures()
    prefix = "quick." if args.quick else ""
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    all_regressed, started = [], time.monotonic()
    for script, full_args, quick_args, needs, suffix in BENCHMARKS:
        label = script + (f" ({needs})" if needs else "")
        if only and script.removesuffix(".py") not in only:
            continue
        bench_args = quick_args if args.quick else full_args
        if bench_args is None:
            print(f"{label}: skipped in quick mode", flush=True)
            continue
        if needs and (not os.environ.get("BENCH_POSTGRES") or ("redis" in needs and not os.environ.get("BENCH_REDIS"))):
            print(f"{label}: skipped (set BENCH_POSTGRES{' and BENCH_REDIS' if 'redis' in needs else ''})", flush=True)
            continue
        t = time.monotonic()
        output, status = run_one(script, bench_args, needs, env, args.timeout)
        figures = {name + suffix: fig for name, fig in parse(output).items()}
        print(f"{label}: exit {status}, {time.monotonic() - t:.0f} s", flush=True)
        if not figures:
            tail = "\n".join("    " + line for line in output.strip().splitlines()[-5:])
            print(f"  (prints no BENCH lines yet){chr(10) + tail if status else ''}", flush=True)
        lines, regressed = compare(figures, recorded, prefix)
        print("\n".join(lines), flush=True)
        for name, fig in figures.items():  # ready to paste into docs/benchmarks.md
            target = f" target{fig['op']}{fig['target']:g}" if fig["target"] is not None else ""
            print(f"    BENCH {prefix}{name}={fig['value']:g} {fig['unit']}{target} load={fig['load']:g}")
        all_regressed += regressed
    print(f"{time.monotonic() - started:.0f} s in all; regressions over 25%: {', '.join(all_regressed) or 'none'}")
    if all_regressed and args.fail_on_regression:
        sys.exit(1)


if __name__ == "__main__":
    main()
