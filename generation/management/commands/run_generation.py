"""Run a generation run in the foreground with a progress bar on stderr."""

import sys
import time

from django.core.management.base import BaseCommand, CommandError

from generation.models import GenerationRun
from generation.runs import services as runs


def progress_bar(done, total, width=30):
    filled = int(width * done / total) if total else width
    return "[" + "#" * filled + "-" * (width - filled) + "]"


class Command(BaseCommand):
    help = (
        "Execute a generation run in this process (start it, or resume its missing units), showing progress on "
        "stderr. Exit code 0 when every unit is done, 1 when units failed or remain, 2 on bad input."
    )

    def add_arguments(self, parser):
        parser.add_argument("run_id", type=int)
        parser.add_argument("--retry-failed", action="store_true", help="Put failed units back to pending first.")
        parser.add_argument("--quiet", action="store_true", help="No progress bar.")

    def handle(self, *args, run_id, retry_failed, quiet, **options):
        run = GenerationRun.objects.filter(pk=run_id).select_related("study").first()
        if run is None:
            raise CommandError(f"No generation run with id {run_id}.", returncode=2)
        stderr = sys.stderr
        last = [0.0]

        def show(stats, in_flight, total):
            now = time.monotonic()
            done = stats.succeeded + stats.failed
            if quiet or (now - last[0] < 0.2 and done < total):
                return
            last[0] = now
            rate = stats.succeeded / stats.elapsed_s if stats.elapsed_s else 0
            eta = f"{(total - done) / rate:.0f}s" if rate else "?"
            stderr.write(
                f"\r{progress_bar(done, total)} {done}/{total} done={stats.succeeded} failed={stats.failed} "
                f"in_flight={in_flight} {rate:.1f}/s eta {eta}   "
            )
            stderr.flush()

        try:
            if retry_failed:
                failed = run.outputs.filter(status="failed").update(status="pending", error="")
                self.stderr.write(f"{failed} failed units put back to pending.")
            stats = runs.run_foreground(run, progress_callback=show)
        except runs.RunError as exc:
            raise CommandError(str(exc), returncode=2) from exc
        if not quiet:
            stderr.write("\n")
        if stats is None:
            raise CommandError("Another worker is executing this run; try again when it stops.", returncode=1)
        run.refresh_from_db()
        counts = runs.counts(run)["overall"]
        summary = (
            f"Run {run.pk} “{run.name}”: {run.status}; {counts['done']} done, {counts['failed']} failed, "
            f"{counts['pending']} pending of {counts['total']}; {counts['input_tokens']} input and "
            f"{counts['output_tokens']} output tokens; cost ${counts['cost_usd']:.6f}."
        )
        self.stdout.write(summary)
        if run.message:
            self.stdout.write(run.message)
        if counts["failed"] or counts["pending"] or run.status != "completed":
            raise CommandError(f"{counts['failed']} units failed and {counts['pending']} are pending.", returncode=1)
