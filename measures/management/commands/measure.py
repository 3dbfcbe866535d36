"""manage.py measure: run lexicon and classifier measures from the command line.

manage.py measure --study 3 --name "letters" --lexicon 5 --lexicon 7 --classifier vader [--source-run 2] [--sync]
manage.py measure --run 12            # resume / re-run a measure run
manage.py measure --run 12 --report   # print the stored contrasts
manage.py measure --run 12 --fairness # classifier fairness check on gender-swapped copies
"""

import json

from django.core.management.base import BaseCommand, CommandError

from generation.selectors import runs_by_id
from measures import scoring
from measures.contrasts import fairness_check
from measures.models import Lexicon, MeasureRun
from stereoscope.models import Study


class Command(BaseCommand):
    help = "Score outputs with lexicons and a classifier, then compute female/male contrasts."

    def add_arguments(self, parser):
        parser.add_argument("--study", type=int)
        parser.add_argument("--name", default="")
        parser.add_argument("--lexicon", type=int, action="append", default=[], help="Lexicon id (repeatable).")
        parser.add_argument(
            "--source-run", type=int, action="append", default=[], help="Generation run id (repeatable)."
        )
        parser.add_argument("--classifier", default="", choices=["", "vader", "transformers"])
        parser.add_argument("--model-path", default="")
        parser.add_argument("--model-id", default="")
        parser.add_argument("--unit", default="sentence", choices=["sentence", "document"])
        parser.add_argument("--zero-policy", default="exclude", choices=["exclude", "smooth"])
        parser.add_argument("--run", type=int, help="An existing measure run to execute again.")
        parser.add_argument("--sync", action="store_true", help="Score here instead of queueing a Celery task.")
        parser.add_argument("--report", action="store_true")
        parser.add_argument("--fairness", action="store_true")

    def handle(self, *args, **opts):
        if opts["run"]:
            run = MeasureRun.objects.filter(pk=opts["run"]).first()
            if run is None:
                raise CommandError(f"No measure run {opts['run']}.")
        else:
            study = Study.objects.filter(pk=opts["study"]).first() if opts["study"] else None
            if study is None:
                raise CommandError("Give --study (an id) or --run.")
            lexicons = list(Lexicon.objects.filter(pk__in=opts["lexicon"]))
            missing = set(opts["lexicon"]) - {lx.pk for lx in lexicons}
            if missing:
                raise CommandError(f"No lexicon with id {', '.join(map(str, sorted(missing)))}.")
            sources = runs_by_id(opts["source_run"])
            try:
                run = scoring.create_run(
                    study,
                    name=opts["name"] or "measure run",
                    lexicons=lexicons,
                    source_runs=sources,
                    classifier=opts["classifier"],
                    classifier_path=opts["model_path"],
                    classifier_model_id=opts["model_id"],
                    classifier_unit=opts["unit"],
                    zero_policy=opts["zero_policy"],
                )
            except scoring.MeasureRunError as exc:
                raise CommandError(str(exc)) from exc
            self.stdout.write(f"created measure run {run.pk}")
        if opts["report"]:
            for c in run.contrasts.filter(grouping="overall"):
                self.stdout.write(json.dumps({"kind": c.kind, "measure": c.measure, "result": c.result}, default=str))
            return
        if opts["fairness"]:
            try:
                result = fairness_check(run)
            except ValueError as exc:
                raise CommandError(str(exc)) from exc
            self.stdout.write(json.dumps({k: v for k, v in result.items() if k != "examples"}, default=str, indent=1))
            return
        if opts["sync"]:
            scored = scoring.run_foreground(
                run, progress_callback=lambda p: self.stdout.write(f"{p['done']}/{p['total']}")
            )
            run.refresh_from_db()
            self.stdout.write(f"measure run {run.pk}: {run.status}, {scored or 0} outputs scored. {run.message}")
        else:
            try:
                scoring.start(run)
            except scoring.MeasureRunError as exc:
                raise CommandError(str(exc)) from exc
            run.refresh_from_db()
            self.stdout.write(f"measure run {run.pk} queued ({run.status}).")
