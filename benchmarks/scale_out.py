"""Scale-out: one generation run of 4,000 units shared by 1, 2 and 4 Celery worker processes.

The fake provider answers after 250 ms; each worker process makes at most 16 concurrent calls
(JOB_WORKER_CONCURRENCY), and the endpoint's own limit (64) holds across all of them. For each worker count the
script prints the wall time from launch to completion, the throughput, and the lost (not done) and duplicate
(answered more than once) units; it ends with the speed-ups over one worker:

    speedup_2_workers=<x>
    speedup_4_workers=<x>

    DATABASE_URL=postgres://postgres@127.0.0.1:5432/stereoscope_bench CELERY_BROKER_URL=redis://127.0.0.1:6379/8 \\
        .venv/bin/python benchmarks/scale_out.py [--units 4000] [--latency 0.25] [--concurrency 16] [--workers 1,2,4]

DATABASE_URL must name an empty or disposable database (the script migrates it and adds studies); without it a
fresh SQLite file and the filesystem broker in a temporary directory are used (much slower: one writer at a time).
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.generation_throughput import start_fake_server  # noqa: E402


def setup_django(workdir, concurrency):
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stereoscope.settings")
    os.environ["STEREOSCOPE_DATA_DIR"] = str(workdir)
    if not os.environ.get("DATABASE_URL"):
        os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'bench.sqlite3'}"
    os.environ.pop("CELERY_TASK_ALWAYS_EAGER", None)
    os.environ["BENCH_KEY"] = "bench-key"
    os.environ["PROVIDER_KEY_VARIABLES"] = "BENCH_KEY"  # the operator's allow-list, inherited by the workers
    os.environ["JOB_WORKER_CONCURRENCY"] = str(concurrency)
    os.environ.setdefault("JOB_FANOUT", "8")
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def start_workers(n, queue, workdir):
    from django.conf import settings

    env = dict(os.environ, WORKER_HEARTBEAT_SECONDS="0.5", CELERY_BROKER_URL=settings.CELERY_BROKER_URL)
    workers = []
    for i in range(n):
        log = open(workdir / f"{queue}-{i}.log", "w")
        workers.append(subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "stereoscope", "worker", "--pool", "solo", "-Q", queue,
             "--hostname", f"{queue}-{i}@bench", "--loglevel", "WARNING", "--without-mingle", "--without-gossip"],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, text=True))
    return workers


def stop_workers(workers):
    for worker in workers:
        worker.terminate()
    for worker in workers:
        try:
            worker.wait(30)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()


def one_round(n_workers, port, units, workdir):
    from django.db.models import Count

    from generation import runs
    from generation.models import Dimension, GenerationRun, ModelEndpoint, Output, PromptItem, ProviderCall, Toolkit
    from stereoscope.celery import app
    from stereoscope.models import Study, WorkerHeartbeat

    trials = 5
    study = Study.objects.create(name=f"scale-out {n_workers} {uuid.uuid4().hex[:6]}")
    toolkit = Toolkit.objects.create(study=study, name="bench")
    dim = Dimension.objects.create(toolkit=toolkit, name="bench")
    PromptItem.objects.bulk_create([PromptItem(toolkit=toolkit, number=i, text=f"Write a short story about item {i}.",
                                               dimension=dim) for i in range(1, units // trials + 1)])
    endpoint = ModelEndpoint.objects.create(
        study=study, name="fake", provider="openai_compatible", model_id="bench-model",
        base_url=f"http://127.0.0.1:{port}/v1", api_key_env="BENCH_KEY", max_concurrency=64, timeout_seconds=60)
    run = runs.create_run(study, name="scale-out", toolkit=toolkit, endpoints=[endpoint], trials=trials)
    queue = f"scale-{uuid.uuid4().hex[:8]}"
    workers = start_workers(n_workers, queue, workdir)
    try:
        deadline = time.monotonic() + 90
        while WorkerHeartbeat.objects.filter(hostname__startswith=queue).count() < n_workers:  # start-up not timed
            if time.monotonic() > deadline or any(w.poll() is not None for w in workers):
                raise SystemExit(f"the workers did not come up (see {workdir})")
            time.sleep(0.1)
        runs._enqueue = lambda r: app.send_task("generation.execute_run", args=[r.pk], queue=queue)
        t0 = time.perf_counter()
        runs.start(run)
        while True:
            status = GenerationRun.objects.filter(pk=run.pk).values_list("status", flat=True).get()
            if status in ("completed", "failed", "cancelled"):
                break
            time.sleep(0.05)
        wall = time.perf_counter() - t0
    finally:
        stop_workers(workers)
    done = Output.objects.filter(run=run, status="done").count()
    answered = ProviderCall.objects.filter(study=study, outcome="ok").values("output_id").annotate(n=Count("id"))
    duplicates = sum(row["n"] - 1 for row in answered if row["n"] > 1)
    return {"workers": n_workers, "status": status, "done": done, "lost": units - done, "duplicates": duplicates,
            "wall_s": wall, "rate": done / wall}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=4000)
    parser.add_argument("--latency", type=float, default=0.25)
    parser.add_argument("--concurrency", type=int, default=16, help="concurrent calls per worker process")
    parser.add_argument("--workers", default="1,2,4")
    args = parser.parse_args()
    counts = [int(n) for n in args.workers.split(",")]
    server, port = start_fake_server(args.latency)
    results = []
    try:
        with tempfile.TemporaryDirectory(prefix="sc-scale-") as tmp:
            setup_django(Path(tmp), args.concurrency)
            from django.conf import settings

            print(f"{args.units} units, latency {args.latency * 1000:.0f} ms, {args.concurrency} calls per worker; "
                  f"database {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}, "
                  f"broker {settings.CELERY_BROKER_URL.split(':')[0]}", flush=True)
            for n in counts:
                r = one_round(n, port, args.units, Path(tmp))
                ideal = n * args.concurrency / args.latency
                print(f"{n} worker(s): {r['done']} done in {r['wall_s']:.2f} s = {r['rate']:.1f} units/s "
                      f"({r['rate'] / ideal:.2f} of ideal {ideal:.0f}/s); lost {r['lost']}, duplicates "
                      f"{r['duplicates']}, status {r['status']}", flush=True)
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
    if bad:
        sys.exit(1)


if __name__ == "__main__":
    main()
