"""First start: the set-up `make run` does after pip, on a fresh embedded database (issue 36).

Target: <= 8 s for migrate + built-ins + admin (+ connections) together on a quiet machine. Times, as separate
processes in a throw-away data folder (SQLite, unless DATABASE_URL names a disposable database):

  1. `manage.py setup` (what scripts/run.sh runs: all steps in one process, system checks once);
  2. with --steps, also the four commands one by one, as run.sh used to run them (a second fresh folder).

    .venv/bin/python benchmarks/first_start.py [--steps]
"""

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._report import bench  # noqa: E402

TARGET_S = 8.0


def timed(args, env):
    """(wall seconds, CPU seconds of the child) of one manage.py command."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def fresh_env(folder):
    env = dict(os.environ)
    env["STEREOSCOPE_DATA_DIR"] = str(folder)
    env.setdefault("DATABASE_URL", f"sqlite:///{Path(folder) / 'stereoscope.sqlite3'}")
    env["STEREOSCOPE_ADMIN_PASSWORD"] = "bench-only-password"
    env.pop("OPENAI_API_KEY", None)
    env.pop("ANTHROPIC_API_KEY", None)
    return env


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", action="store_true", help="also time the four commands as separate processes")
    args = parser.parse_args()
    if os.environ.get("DATABASE_URL"):
        print("DATABASE_URL is set: it must name an empty, disposable database (and only one run can use it)")
    with tempfile.TemporaryDirectory(prefix="sc-first-") as tmp:
        wall, cpu = timed(["setup"], fresh_env(tmp))
    print(f"manage.py setup (one process): {wall:.2f} s wall, {cpu:.2f} s CPU")
    bench("first_start.setup_s", wall, "s", target=TARGET_S)
    bench("first_start.setup_cpu_s", cpu, "s")
    if args.steps and not os.environ.get("DATABASE_URL"):
        with tempfile.TemporaryDirectory(prefix="sc-first-") as tmp:
            env = fresh_env(tmp)
            total = 0.0
            for step in (["migrate", "--noinput"], ["load_builtin"], ["ensure_admin"], ["ensure_connections"]):
                wall, cpu = timed(step, env)
                total += wall
                print(f"  manage.py {step[0]:<18} {wall:6.2f} s wall, {cpu:6.2f} s CPU")
        print(f"four processes: {total:.2f} s wall")
        bench("first_start.four_processes_s", total, "s", target=TARGET_S)


if __name__ == "__main__":
    main()
