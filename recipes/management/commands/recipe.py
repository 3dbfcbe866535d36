"""manage.py recipe validate|plan|apply|export — a study as code (see README, "Reproduce a study")."""

from pathlib import Path

import yaml
from django.core.management.base import BaseCommand, CommandError

from recipes import library, running, services
from recipes.loader import RecipeError, dump, parse_text, safe_yaml
from stereoscope.models import Study


def _read(path):
    if not Path(path).exists() and path in library.names():
        return library.text(path)
    try:
        return Path(path).read_bytes()
    except OSError as exc:
        raise CommandError(
            f"Cannot read {path}: {exc.strerror} (nor is it a built-in recipe: {', '.join(library.names())})."
        ) from None


def _recipe(file, endpoints=None):
    """The recipe in FILE (or the built-in of that name), with the endpoints of --endpoints in place of its own."""
    data = parse_text(_read(file))
    if endpoints:
        given = yaml_list(_read(endpoints))
        data = library.with_endpoints(data, given)
    return data


def yaml_list(content):
    try:
        value = safe_yaml(content)
    except yaml.YAMLError as exc:
        raise CommandError(f"The endpoints file is not valid YAML or JSON: {exc}.") from None
    return value.get("endpoints") if isinstance(value, dict) else value


def _study(study_id):
    if study_id is None:
        return None
    study = Study.objects.filter(pk=study_id, is_library=False).first()
    if study is None:
        raise CommandError(f"No study with id {study_id}.")
    return study


def format_jobs(jobs):
    lines = []
    for job in jobs:
        if job["kind"] == "human stage":
            lines.append(f"  human stage     {job['name']}: waits for people after {job['after']}")
            continue
        if job.get("existing"):
            lines.append(f"  {job['kind']:15} {job['name']}: already in the study, no new calls")
            continue
        tokens = (
            "tokens unknown until its source has run"
            if job.get("input_tokens") is None
            else f"~{job['input_tokens']:,} in / ~{job['output_tokens']:,} out tokens"
        )
        unpriced = ", ".join(job.get("unpriced_endpoints") or []) or "some endpoints"
        cost = f"${job['cost_usd']}" if job.get("cost_usd") is not None else f"cost unknown (no prices for {unpriced})"
        lines.append(f"  {job['kind']:15} {job['name']}: {job['calls']:,} calls, {tokens}, {cost}")
        lines.extend(f"      problem: {p}" for p in job.get("problems") or [])
    return lines


class Command(BaseCommand):
    help = "Validate, plan, apply or export a recipe: one YAML/JSON file that declares a whole study."
    requires_system_checks = []

    def add_arguments(self, parser):
        sub = parser.add_subparsers(dest="action", required=True)
        for name, text in (
            ("validate", "check a recipe; writes nothing"),
            ("plan", "what apply would create or change, and each job's calls, tokens and cost"),
            ("apply", "create or update the study the recipe declares (idempotent)"),
            ("run", "apply, then run the jobs in order, stopping at human stages"),
        ):
            p = sub.add_parser(name, help=text)
            p.add_argument("file", help="A recipe file, or the name of a built-in recipe.")
            p.add_argument("--endpoints", help="A YAML/JSON list of endpoints to use instead of the recipe's.")
            if name != "validate":
                p.add_argument("--study", type=int, dest="study_id", help="Apply into this study (default: by name).")
                p.add_argument(
                    "--connection",
                    action="append",
                    default=[],
                    dest="connections",
                    metavar="OLD=NEW",
                    help="Use this installation's connection NEW where the recipe names OLD (repeatable).",
                )
            if name == "run":
                p.add_argument(
                    "--past",
                    action="append",
                    default=[],
                    metavar="STAGE",
                    help="A human stage that is done: continue past it (repeatable).",
                )
        p = sub.add_parser("import-rupsycho", help="write an R.U.Psycho experiment file as a recipe")
        p.add_argument("file")
        p.add_argument("--out", help="Write to this file instead of standard output.")
        p = sub.add_parser("builtin", help="list the built-in recipes, or print one")
        p.add_argument("name", nargs="?")
        p = sub.add_parser("export", help="write the recipe of a study")
        p.add_argument("study_id", type=int)
        p.add_argument("--out", help="Write to this file instead of standard output.")

    def handle(self, *args, action, **options):
        try:
            getattr(self, f"do_{action.replace('-', '_')}")(**options)
        except RecipeError as exc:
            raise CommandError(
                f"The recipe has {len(exc.problems)} problem(s):\n" + "\n".join(f"  {p}" for p in exc.problems)
            ) from None

    def do_import_rupsycho(self, file, out=None, **options):
        from recipes.rupsycho import to_recipe

        data = to_recipe(parse_text(_read(file)))
        services.validate(data)
        self._write(dump(data), out)

    def _write(self, text, out):
        if out:
            Path(out).write_text(text, encoding="utf-8")
            self.stdout.write(f"Wrote {out}.")
        else:
            self.stdout.write(text, ending="")

    def do_builtin(self, name=None, **options):
        self.stdout.write(library.text(name) if name else "\n".join(library.names()), ending="" if name else "\n")

    def do_validate(self, file, endpoints=None, **options):
        services.validate(_recipe(file, endpoints))
        self.stdout.write(f"{file}: valid.")

    def do_plan(self, file, study_id=None, endpoints=None, connections=(), **options):
        outcome = services.plan(
            _recipe(file, endpoints), study=_study(study_id), connection_map=services.parse_connection_map(connections)
        )
        self.stdout.write("Changes:")
        for change in outcome.changes:
            self.stdout.write(f"  {change}")
        self.stdout.write("Jobs:")
        for line in format_jobs(outcome.jobs):
            self.stdout.write(line)
        self.stdout.write(services.calls_text(outcome.jobs, outcome.changes))
        self.stdout.write(f"Known cost: {services.cost_text(outcome.jobs)}")

    def do_run(self, file, study_id=None, endpoints=None, past=(), connections=(), **options):
        outcome, stage = running.run(
            _recipe(file, endpoints),
            study=_study(study_id),
            past=past,
            write=self.stdout.write,
            connection_map=services.parse_connection_map(connections),
        )
        if stage is None:
            self.stdout.write(self.style.SUCCESS(f"Study {outcome.study.pk}: every job is done."))

    def do_apply(self, file, study_id=None, endpoints=None, connections=(), **options):
        outcome = services.apply(
            _recipe(file, endpoints), study=_study(study_id), connection_map=services.parse_connection_map(connections)
        )
        for change in outcome.changes:
            self.stdout.write(f"  {change}")
        self.stdout.write(f"Study {outcome.study.pk} ({outcome.study.name}): {len(outcome.changed)} change(s).")

    def do_export(self, study_id, out=None, **options):
        from recipes.exporting import export_recipe

        self._write(dump(export_recipe(_study(study_id))), out)
