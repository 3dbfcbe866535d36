"""generation/ is one Django app in two sub-packages: toolkits/ (prompt items, slots, expansion, import/export, their
pages and API) and runs/ (endpoints, connections, providers, the runner, limits, spending, batch mode, runs, their
pages and API). Runs use toolkits, never the other way round. Only what both share stays at the app's root, and the
Celery tasks keep the names that workers and queued messages know them by."""

import ast
import os
from pathlib import Path

from django.conf import settings

GENERATION = Path(__file__).resolve().parents[3] / "generation"
# the app's root: what both sub-packages share, and the modules Django, Celery or the project find by name
SHARED = {
    "__init__.py",
    "admin.py",  # Django's admin autodiscovery
    "api.py",  # the project's URLs mount <app>.api
    "apps.py",
    "builtin.py",  # stereoscope.builtin loads <app>.builtin
    "datasets.py",  # stereoscope.datasets loads <app>.datasets
    "models.py",
    "selectors.py",  # what other apps read
    "subject_gender.py",  # an output's subject gender (measures, agreement, annotation)
    "tasks.py",  # Celery autodiscovery of <app>.tasks
    "urls.py",
}


def imported_modules(source: str, package: str) -> set[str]:
    """Absolute names of the modules a file of `package` imports (relative imports resolved)."""
    parts = package.split(".")
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = parts[: len(parts) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            found.add(module)
            found |= {f"{module}.{alias.name}" for alias in node.names}
    return found


def runs_imports(path: Path) -> list[str]:
    package = ".".join(path.relative_to(GENERATION.parent).parts[:-1])
    return sorted(
        m for m in imported_modules(path.read_text(encoding="utf-8"), package) if m.startswith("generation.runs")
    )


def test_toolkits_import_nothing_from_runs():
    files = sorted((GENERATION / "toolkits").rglob("*.py"))
    assert len(files) > 5
    offending = {str(path.relative_to(GENERATION.parent)): runs_imports(path) for path in files}
    assert {name: found for name, found in offending.items() if found} == {}


def test_the_check_sees_imports_of_runs_in_every_form():
    source = (
        "from ..runs import runner\nfrom ..runs.limits import x\nimport generation.runs.batches\nfrom . import slots\n"
    )
    found = {m for m in imported_modules(source, "generation.toolkits") if m.startswith("generation.runs")}
    assert found == {"generation.runs", "generation.runs.runner", "generation.runs.limits", "generation.runs.limits.x",
                     "generation.runs.batches"}  # fmt: skip


def test_the_app_root_holds_only_shared_modules():
    assert {p.name for p in GENERATION.glob("*.py")} == SHARED
    packages = {p.name for p in GENERATION.iterdir() if (p / "__init__.py").is_file()}
    assert packages == {"toolkits", "runs", "management", "migrations", "templatetags"}


def test_task_names_are_the_ones_workers_and_queued_messages_use():
    from generation import tasks
    from generation.runs.services import GenerationRunJob
    from stereoscope.celery import app

    assert tasks.execute_run.name == "generation.execute_run"
    assert tasks.poll_batches.name == "generation.poll_batches"
    assert GenerationRunJob.task_name == "generation.execute_run"
    assert {"generation.execute_run", "generation.poll_batches"} <= set(app.tasks)
    beat_tasks = {entry["task"] for entry in settings.CELERY_BEAT_SCHEDULE.values()}
    assert "generation.poll_batches" in beat_tasks


def test_a_fresh_process_registers_generation_runs_with_the_job_engine():
    """A worker finds the job kinds once Django is set up (the app's ready() imports runs.services): without it, a
    worker's sweep never re-queues a dead worker's generation run."""
    import subprocess
    import sys

    code = (
        "import django; django.setup()\n"
        "from stereoscope import jobs\n"
        "print(sorted(k.name for k in jobs.kinds()))\n"
        "print(sorted(jobs.get_kind('generation.run').task_name.split()))\n"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "stereoscope.settings"}
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=GENERATION.parent, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr[-2000:]
    kinds, task = out.stdout.splitlines()[-2:]
    assert "'generation.run'" in kinds
    assert task == "['generation.execute_run']"


def _module_file(module: str) -> Path | None:
    path = GENERATION.parent.joinpath(*module.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


EMPTY_PACKAGES = {"generation", "generation.toolkits", "generation.runs"}  # their __init__ exports nothing


def stale_generation_imports(source: str) -> list[str]:
    """Imports of generation modules that do not exist (e.g. a module's path from before the split), and names
    taken from a package that exports nothing but its modules (`from generation import runs` is the sub-package)."""
    stale = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names if alias.name.split(".")[0] == "generation"]
            stale += [name for name in names if _module_file(name) is None]
        elif isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").split(".")[0] == "generation":
            if _module_file(node.module) is None:
                stale.append(node.module)
            elif node.module in EMPTY_PACKAGES:
                names = [f"{node.module}.{alias.name}" for alias in node.names]
                stale += [name for name in names if (_module_file(name) or Path()).name in ("", "__init__.py")]
    return stale


def test_every_import_of_generation_names_a_module_that_exists():
    root = GENERATION.parent
    skip = {".venv", ".git", "node_modules", "data", "migrations"}
    found = {}
    folders = [p for p in root.iterdir() if p.is_dir() and not p.is_symlink() and p.name not in skip]
    paths = [p for p in root.glob("*.py")] + [p for folder in folders for p in folder.rglob("*.py")]
    for path in sorted(paths):
        if skip & set(path.relative_to(root).parts):
            continue
        source = path.read_text(encoding="utf-8")
        stale = stale_generation_imports(source) if "generation" in source else []
        if stale:
            found[str(path.relative_to(root))] = stale
    assert found == {}


def test_the_stale_import_check_sees_old_paths():
    old = "from generation import runs, selectors\nfrom generation.toolkit_format import x\nimport generation.runner\n"
    assert stale_generation_imports(old) == ["generation.runs", "generation.toolkit_format", "generation.runner"]
    new = "from generation import selectors\nfrom generation.runs import services\nimport generation.runs.limits\n"
    assert stale_generation_imports(new) == []
