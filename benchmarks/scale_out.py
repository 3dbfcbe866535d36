"""Scale-out: one generation run of 4,000 units shared by 1, 2 and 4 Celery worker processes.

The fake provider answers after 1 s (the provider's latency is the bottleneck); each worker process makes at most 16
concurrent calls (JOB_WORKER_CONCURRENCY), and the endpoint's own limit (64) holds across all of them. For each
worker count the script prints the wall time from launch to completion, the throughput, the lost (not done) and
duplicate (answered more than once) units and each worker's CPU seconds; it ends with the speed-ups over one worker:

    speedup_2_workers=<x>
    speedup_4_workers=<x>

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/stereoscope_bench CELERY_BROKER_URL=redis://127.0.0.1:6379/8 \\
        .venv/bin/python benchmarks/scale_out.py [--units 4000] [--latency 1.0] [--concurrency 16] [--workers 1,2,4]

DATABASE_URL must name an empty or disposable database (the script migrates it and adds studies); without it a
fresh SQLite file and the filesystem broker in a temporary directory are used (much slower: one writer at a time).
"""

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._report import bench  # noqa: E402
from benchmarks.generation_throughput import (  # noqa: E402
    fake_provider_run,
    run_on_workers,
    setup_django,
    start_fake_server,
)


def one_round(n_workers, port, units, workdir):
    from django.db.models import Count

    from generation.models import Output, ProviderCall

    run = fake_provider_run("scale-out", units, port, max_concurrency=64)
    study = run.study
    status, wall, cpu, each = run_on_workers(run, n_workers, workdir)
    done = Output.objects.filter(run=run, status="done").count()
    answered = ProviderCall.objects.filter(study=study, outcome="ok").values("output_id").annotate(n=Count("id"))
    duplicates = sum(row["n"] - 1 for row in answered if row["n"] > 1)
    return {
        "workers": n_workers,
        "status": status,
        "done": done,
        "lost": units - done,
        "duplicates": duplicates,
        "wall_s": wall,
        "rate": done / wall,
        "cpu_s": cpu,
        "cpu_each_s": each,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=4000)
    parser.add_argument("--latency", type=float, default=1.0)
    parser.add_argument("--concurrency", type=int, default=16, help="concurrent calls per worker process")
    parser.add_argument("--workers", default="1,2,4")
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    server, port = start_fake_server(args.latency)
    results = []
    try:
        with tempfile.TemporaryDirectory(prefix="sc-scale-") as tmp:
            setup_django(Path(tmp), JOB_WORKER_CONCURRENCY=args.concurrency, JOB_FANOUT=os.environ.get("JOB_FANOUT", 8))
            from django.conf import settings

            print(
                f"{args.units} units, latency {args.latency * 1000:.0f} ms, {args.concurrency} calls per worker; "
                f"database {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}, "
                f"broker {settings.CELERY_BROKER_URL.split(':')[0]}",
                flush=True,
            )
            for n in counts:
                r = one_round(n, port, args.units, Path(tmp))
                ideal = n * args.concurrency / args.latency
                print(
                    f"{n} worker(s): {r['done']} done in {r['wall_s']:.2f} s = {r['rate']:.1f} units/s "
                    f"({r['rate'] / ideal:.2f} of ideal {ideal:.0f}/s); lost {r['lost']}, duplicates "
                    f"{r['duplicates']}, status {r['status']}",
                    flush=True,
                )
                if r["cpu_each_s"] is not None:
                    each = ", ".join(f"{c:.2f}" for c in r["cpu_each_s"])
                    print(
                        f"  worker CPU: {each} s ({1000 * r['cpu_s'] / max(1, r['done']):.2f} ms per unit in all); "
                        f"load {os.getloadavg()[0]:.2f}",
                        flush=True,
                    )
                results.append(r)
    finally:
        server.terminate()
        server.wait(10)
    base = next((r["rate"] for r in results if r["workers"] == 1), None)
    bad = any(r["lost"] or r["duplicates"] or r["status"] != "completed" for r in results)
    print(f"lost={sum(r['lost'] for r in results)} duplicates={sum(r['duplicates'] for r in results)}")
    for r in results:
        if base and r["workers"] != 1:
            print(f"speedup_{r['workers']}_workers={r['rate'] / base:.2f}")
            target = {2: 1.8, 4: 3.2}.get(r["workers"])
            bench(
                f"scale_out.speedup_{r['workers']}_workers", r["rate"] / base, "x", target=target, higher_is_better=True
            )
    bench("scale_out.lost_and_duplicates", sum(r["lost"] + r["duplicates"] for r in results), "units", target=0)
    if bad:
        sys.exit(1)


if __name__ == "__main__":
    main()
