"""`recipe run`: apply a recipe, then run its jobs in this process in dependency order — generation runs, then
questionnaire runs, then judge rounds and measure runs (they use the generated outputs) — and stop at the first
human stage whose job is done, with its message. Finished jobs are skipped, so running again continues where it
stopped."""

from exports import services as exports
from generation.models import RunStatus
from generation.runs import services as generation_runs
from judging import rounds as judge_rounds
from measures import scoring
from psychometrics import runs as questionnaire_runs

from . import human, services
from .loader import RecipeError, RecipeProblem

ROLES = {"coder": "coders", "researcher": "researchers", "admin": "study admins"}


def progress_bar(done, total, width=30):
    filled = int(width * done / total) if total else width
    return f"[{'#' * filled}{'.' * (width - filled)}] {done}/{total}"


def _sample_text(sample):
    runs = ", ".join(f"“{name}”" for name in sample.get("runs") or [])
    if sample.get("n"):
        seed = f" with seed {sample['seed']}" if sample.get("seed") is not None else ""
        return f"a sample of {sample['n']} stories{' of ' + runs if runs else ''} stratified by model × prompt{seed}"
    return f"the stories of {runs}" if runs else ""


def stage_message(stage):
    coders = stage.get("coders") or {}
    who = ROLES.get(coders.get("role", "coder"), "coders")
    how = ", ".join(
        filter(
            None,
            [
                f"{coders['count']} {who}" if coders.get("count") else who,
                f"{stage['overlap']} per story" if stage.get("overlap") else "",
                f"{stage['strategy']} assignment" if stage.get("strategy") else "",
                f"{stage['mode']} mode" if stage.get("mode") else "",
                _sample_text(stage.get("sample") or {}),
            ],
        )
    )
    text = (
        f"Stopped at the human stage “{stage['name']}” ({stage.get('kind', 'coding')} by {how}), after "
        f"“{stage['after']}”."
    )
    if stage.get("message"):
        text += f" {stage['message']}"
    if stage.get("codebook"):
        return text + " Run `recipe run` again: it goes on once every assignment is done."
    return text + f' Run `recipe run` again with --past "{stage["name"]}" once it is done.'


def _run_job(kind, job, actor, write):
    def show(stats, in_flight, total):
        write(
            f"\r  {kind} “{job.name}” {progress_bar(stats.succeeded + stats.failed, total)} ({in_flight} in flight)",
            ending="",
        )

    if kind == "measure run":
        stats = scoring.run_foreground(
            job,
            actor=actor,
            progress_callback=lambda p: write(
                f"\r  {kind} “{job.name}” {progress_bar(p['done'], p['total'])}", ending=""
            ),
        )
    elif kind == "generation run":
        stats = generation_runs.run_foreground(job, actor=actor, progress_callback=show)
    elif kind == "questionnaire run":
        stats = questionnaire_runs.run_foreground(job, actor=actor, progress_callback=show)
    else:
        stats = judge_rounds.run_foreground(job, actor=actor, progress_callback=show)
    write("")
    if stats is None:
        raise RecipeError([RecipeProblem(job.name, f"another worker holds the {kind}; wait until it stops")])
    job.refresh_from_db()
    return job


def run(data, *, study=None, actor=None, past=(), write=print, connection_map=None):
    """Returns (outcome, stopped_at): stopped_at is the human stage it stopped at, or None when all is done."""
    outcome = services.apply(data, study=study, actor=actor, connection_map=connection_map)
    objects = outcome.objects
    jobs = [
        ("generation run", objects["runs"]),
        ("questionnaire run", objects["questionnaire_runs"]),
        ("judge round", objects["judge_rounds"]),
        ("measure run", objects["measure_runs"]),
    ]
    for kind, named in jobs:
        for name, job in named.items():
            if job.status == RunStatus.COMPLETED:
                write(f"  {kind} “{name}”: already completed")
                continue
            try:
                job = _run_job(kind, job, actor, write)
            except (
                generation_runs.RunError,
                judge_rounds.RoundError,
                questionnaire_runs.PsychError,
                scoring.MeasureRunError,
            ) as exc:
                raise RecipeError([RecipeProblem(name, f"the {kind} cannot start: {exc}")]) from None
            if job.status != RunStatus.COMPLETED:
                raise RecipeError([RecipeProblem(name, f"the {kind} stopped ({job.status}): {job.message}")])
            write(f"  {kind} “{name}”: completed" + (f" ({job.message})" if job.message else ""))
    for stage in data.get("human_stages") or []:
        if stage["name"] in past:
            continue
        done, state = human.reach(stage, outcome.study, objects, actor)
        if done:
            write(f"  human stage “{stage['name']}”: done ({state})")
            continue
        write(stage_message(stage) + (f" {state}" if state else ""))
        return outcome, stage
    for export in data.get("exports") or []:
        write_export(outcome.study, export, actor, write)
    return outcome, None


def write_export(study, export, actor, write):
    """One declared export, as an export job of the study (listed on its Exports page)."""

    try:
        job = exports.create_job(
            study, fmt=export["format"], dataset_keys=export.get("datasets") or None, actor=actor, enqueue=False
        )
    except exports.ExportError as exc:
        raise RecipeError([RecipeProblem("exports", str(exc))]) from None
    if exports.execute_job(job.pk) is None:
        job.refresh_from_db()
        raise RecipeError([RecipeProblem("exports", f"the {export['format']} export failed: {job.message}")])
    job.refresh_from_db()
    write(f"  export: {exports.job_path(job)}")
