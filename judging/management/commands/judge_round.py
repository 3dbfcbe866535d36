"""Run a judge round in this process: launch it (if it is a draft) or resume it, with progress and a summary."""
from django.core.management.base import BaseCommand, CommandError

from judging import rounds
from judging.models import JudgeRound
from judging.services import JUDGE_TEMPLATES


class Command(BaseCommand):
    help = "Plan and run (or resume) a judge round in this process. Only pending verdicts are asked."

    def add_arguments(self, parser):
        parser.add_argument("round_id", type=int)
        parser.add_argument("--plan", action="store_true", help="Show the plan and stop; nothing is called.")
        parser.add_argument("--reask", action="store_true", help="First re-ask missing/unparseable verdicts alone.")
        parser.add_argument("--retry-failed", action="store_true", help="First put failed verdicts back to pending.")

    def handle(self, round_id, plan=False, reask=False, retry_failed=False, **options):
        rnd = JudgeRound.objects.filter(pk=round_id).select_related("template", "study").first()
        if rnd is None:
            raise CommandError(f"No judge round {round_id}.")
        try:
            summary = rounds.compute_plan(rnd)
        except rounds.RoundError as exc:
            raise CommandError(str(exc)) from exc
        self.stdout.write(f"Round {rnd.pk} “{rnd.name}” ({rnd.policy}, template {rnd.template}, seed {rnd.seed}): "
                          f"{summary['outputs']} outputs, {summary['verdicts']} verdicts in {summary['batches']} calls.")
        for g in summary["generators"]:
            self.stdout.write(f"  {g['model']}: {g['outputs']} outputs judged by {', '.join(g['judges'])}")
        for reason, n in summary["excluded"].items():
            self.stdout.write(f"  excluded: {n} × {reason}")
        for problem in summary["problems"]:
            self.stderr.write(f"  problem: {problem}")
        if plan:
            return
        if summary["problems"] and rnd.status == "draft":
            raise CommandError("Fix the problems above first.")
        try:
            rounds.materialize(rnd)
            JUDGE_TEMPLATES.lock(rnd.template)
            if retry_failed:
                rnd.verdicts.filter(status="failed").update(status="pending", error="")
            if reask:
                rnd.verdicts.filter(status__in=["missing", "unparseable"]).update(status="pending", reasked=True, error="")
        except rounds.RoundError as exc:
            raise CommandError(str(exc)) from exc
        rounds.queue_in_foreground(rnd, summary)

        def progress(stats, in_flight, calls):
            self.stdout.write(f"  {stats.succeeded + stats.failed}/{calls} calls, {in_flight} in flight", ending="\r")

        stats = rounds.execute(rnd.pk, progress_callback=progress)
        if stats is None:
            raise CommandError("Another worker holds this round; try again when it stops (or its lease expires).")
        rnd.refresh_from_db()
        counts = rounds.status_counts(rnd)
        self.stdout.write("")
        self.stdout.write(self.style.SUCCESS(
            f"Round {rnd.pk}: {rnd.status}. " + ", ".join(f"{counts[s]} {s}" for s in
                                                          ("ok", "missing", "unparseable", "failed", "pending"))))
        if rnd.message:
            self.stdout.write(rnd.message)
