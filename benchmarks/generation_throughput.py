"""Generation throughput against the fake provider (250 ms latency, concurrency 64, 2,000 units).

1. baseline: a bare asyncio loop of the openai SDK at the same concurrency;
2. full run: a generation run executed by a real Celery worker process, writing every output and attempt to the DB.

Prints both rates, ratio_to_baseline and ratio_to_ideal (ideal = concurrency / latency).

    .venv/bin/python benchmarks/generation_throughput.py [--units 2000] [--concurrency 64] [--latency 0.25]

The database is a fresh SQLite file in a temporary directory unless DATABASE_URL is set (it must name an empty or
disposable database: the script migrates it and adds one study). CELERY_BROKER_URL picks the broker (default: the
embedded filesystem broker in the temporary directory).
"""

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks._report import bench  # noqa: E402


def start_fake_server(latency):
    proc = subprocess.Popen(
        [
            sys.executable,
            str(ROOT / "tests" / "fake_provider.py"),
            "--port",
            "0",
            "--delay",
            str(latency),
            "--no-record",
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    line = proc.stdout.readline()
    if not line.startswith("PORT "):
        proc.kill()
        raise SystemExit(f"the fake provider did not start: {line!r}")
    return proc, int(line.split()[1])


def run_on_workers(run, n_workers, workdir):
    """Start `n_workers` Celery workers on a queue of their own, wait until they are up (not timed), start the run
    on them and wait until it ends: (status, seconds from start to end, the workers' CPU seconds or None, each
    worker's CPU seconds or None)."""
    from django.conf import settings

    from generation.models import GenerationRun
    from generation.runs import services as runs
    from stereoscope.celery import app
    from stereoscope.testing.workers import CeleryProcesses

    queue = f"bench-{uuid.uuid4().hex[:8]}"
    # The worker beats as deployed (settings.WORKER_HEARTBEAT_SECONDS, 3 s by default), not at the test harness's
    # 0.5 s: its heartbeat and sweep threads would otherwise cost about 0.15 ms of CPU a unit that production does not.
    heartbeat = {"WORKER_HEARTBEAT_SECONDS": settings.WORKER_HEARTBEAT_SECONDS}
    with CeleryProcesses(
        env=heartbeat, broker=settings.CELERY_BROKER_URL, log_dir=workdir, loglevel="WARNING", host="bench"
    ) as c:
        c.wait_ready(c.start_workers(n_workers, queue))
        runs._enqueue = lambda r: app.send_task("generation.execute_run", args=[r.pk], queue=queue)
        cpu0 = [cpu_seconds(w.pid) for w in c.processes]
        t0 = time.perf_counter()
        runs.start(run)
        while True:
            status = GenerationRun.objects.filter(pk=run.pk).values_list("status", flat=True).get()
            if status in ("completed", "failed", "cancelled"):
                wall = time.perf_counter() - t0
                cpu1 = [cpu_seconds(w.pid) for w in c.processes]
                each = None if None in cpu0 + cpu1 else [b - a for a, b in zip(cpu0, cpu1, strict=True)]
                return status, wall, None if each is None else sum(each), each
            time.sleep(0.01)


def baseline(port, units, concurrency):
    import openai

    async def main():
        client = openai.AsyncOpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="bench", max_retries=0, timeout=60)
        semaphore = asyncio.Semaphore(concurrency)
        ok = 0

        async def one(i):
            nonlocal ok
            async with semaphore:
                completion = await client.chat.completions.create(
                    model="bench-model", messages=[{"role": "user", "content": f"Write a short story about item {i}."}]
                )
                if completion.choices[0].message.content:
                    ok += 1

        started, cpu = time.perf_counter(), time.process_time()
        await asyncio.gather(*(one(i) for i in range(units)))
        elapsed = time.perf_counter() - started
        cpu = time.process_time() - cpu
        print(f"  baseline CPU: {cpu:.2f} s ({1000 * cpu / units:.2f} ms per unit)")
        await client.close()
        return ok, elapsed, cpu / units

    return asyncio.run(main())


def cpu_seconds(pid):
    """User + system CPU seconds of a process so far (Linux /proc; None elsewhere): the machine may be shared, so
    the worker's CPU time over the run is reported next to the wall-clock rate."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def setup_django(workdir, **env):
    """Django on DATABASE_URL (else a fresh SQLite file in `workdir`), migrated; `env` is set for the workers too."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "stereoscope.settings")
    os.environ["STEREOSCOPE_DATA_DIR"] = str(workdir)
    if not os.environ.get("DATABASE_URL"):
        os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'bench.sqlite3'}"
    os.environ.pop("CELERY_TASK_ALWAYS_EAGER", None)
    os.environ["BENCH_KEY"] = "bench-key"
    os.environ["PROVIDER_KEY_VARIABLES"] = "BENCH_KEY"  # the operator's allow-list, inherited by the workers
    os.environ.setdefault("LOG_LEVEL", "WARNING")
    os.environ.update({k: str(v) for k, v in env.items()})
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def fake_provider_run(name, units, port, max_concurrency, trials=5):
    """A new study with one run of `units` units (units / trials prompt items × trials) against the fake provider."""
    from generation.models import Dimension, ModelEndpoint, PromptItem, ProviderConnection, Toolkit
    from generation.runs import services as runs
    from stereoscope.models import Study

    study = Study.objects.create(name=f"{name} {uuid.uuid4().hex[:6]}")
    toolkit = Toolkit.objects.create(study=study, name="bench")
    dim = Dimension.objects.create(toolkit=toolkit, name="bench")
    PromptItem.objects.bulk_create(
        [
            PromptItem(toolkit=toolkit, number=i, text=f"Write a short story about item {i}.", dimension=dim)
            for i in range(1, units // trials + 1)
        ]
    )
    connection, _ = ProviderConnection.objects.get_or_create(
        name=f"bench fake provider {port}",
        defaults={
            "provider": "openai_compatible",
            "base_url": f"http://127.0.0.1:{port}/v1",
            "api_key_env": "BENCH_KEY",
            "status": "approved",
        },
    )
    endpoint = ModelEndpoint.objects.create(
        study=study,
        name="fake",
        provider="openai_compatible",
        model_id="bench-model",
        connection=connection,
        max_concurrency=max_concurrency,
        timeout_seconds=60,
    )
    return runs.create_run(study, name=name, toolkit=toolkit, endpoints=[endpoint], trials=trials)


def full_run(port, units, concurrency, workdir):
    setup_django(workdir)
    from django.conf import settings

    from generation.models import Output

    run = fake_provider_run("throughput", units, port, concurrency)
    status, wall, worker_cpu, _each = run_on_workers(run, 1, workdir)
    run.refresh_from_db()
    done = Output.objects.filter(run=run, status="done").count()
    executing = (run.finished_at - run.started_at).total_seconds()
    return {
        "status": status,
        "done": done,
        "failed": Output.objects.filter(run=run, status="failed").count(),
        "wall_s": wall,
        "worker_cpu_s": worker_cpu,
        "executing_s": executing,
        "database": settings.DATABASES["default"]["ENGINE"].rsplit(".", 1)[-1],
        "broker": settings.CELERY_BROKER_URL.split(":")[0],
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--units", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.25)
    args = parser.parse_args()
    ideal = args.concurrency / args.latency
    server, port = start_fake_server(args.latency)
    try:
        ok, elapsed, base_cpu = baseline(port, args.units, args.concurrency)
        base_cpu *= 1000  # ms per unit
        base_rate = ok / elapsed
        print(
            f"baseline (bare asyncio openai SDK): {ok} completions in {elapsed:.2f} s = {base_rate:.1f} /s "
            f"({base_rate / ideal:.2f} of ideal {ideal:.0f} /s)",
            flush=True,
        )
        with tempfile.TemporaryDirectory(prefix="sc-bench-") as tmp:
            result = full_run(port, args.units, args.concurrency, Path(tmp))
    finally:
        server.terminate()
        server.wait(10)
    rate = result["done"] / result["wall_s"]
    exec_rate = result["done"] / result["executing_s"] if result["executing_s"] else 0
    print(
        f"full run (Celery worker, {result['database']}, {result['broker']} broker): {result['done']} done, "
        f"{result['failed']} failed, status {result['status']}"
    )
    print(
        f"  enqueue → completed: {result['wall_s']:.2f} s = {rate:.1f} /s;  worker execution window: "
        f"{result['executing_s']:.2f} s = {exec_rate:.1f} /s"
    )
    if result["worker_cpu_s"] is not None:
        per_unit = 1000 * result["worker_cpu_s"] / max(1, result["done"])
        print(f"  worker CPU during the run: {result['worker_cpu_s']:.2f} s ({per_unit:.2f} ms per unit)")
        if base_cpu:
            print(f"  worker CPU per unit / bare loop CPU per unit: {per_unit / base_cpu:.2f} (target <= 1.2)")
            bench("generation.cpu_per_unit_vs_bare", per_unit / base_cpu, "x", target=1.2)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    if load is not None:
        print(f"  load average (1 min) at the end: {load:.2f}")
    print(f"baseline_rate={base_rate:.1f}/s run_rate={rate:.1f}/s ideal={ideal:.0f}/s")
    print(f"ratio_to_baseline={rate / base_rate:.3f}")
    print(f"ratio_to_ideal={rate / ideal:.3f}")
    bench("generation.ratio_to_baseline", rate / base_rate, "x", target=0.95, higher_is_better=True)
    if result["done"] != args.units:
        sys.exit(1)


if __name__ == "__main__":
    main()
