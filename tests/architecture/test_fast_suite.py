"""The suite's own speed and portability: a fast password hasher, and no absolute paths to the research folder."""

import re
import sys

import pytest

from stereoscope.app_names import PROJECT_APPS
from tests.conftest import REPO_ROOT


def test_users_in_tests_use_the_fast_hasher(make_user):
    user = make_user("quick")
    assert user.password.startswith("md5$"), user.password.split("$")[0]


def test_the_test_processes_collect_garbage_between_tests_not_during_them():
    import gc

    from tests.conftest import GC_EVERY_TESTS

    assert not gc.isenabled()
    assert GC_EVERY_TESTS <= 200  # the cycles are still freed, every so many tests


def test_make_test_runs_pip_only_when_the_dependencies_change(tmp_path):
    """scripts/setup_venv.sh (which `make test` runs first) skips pip when the stamp says pyproject.toml,
    requirements.lock and the compiled scanner's source are unchanged and the extras asked for are installed; it runs
    pip otherwise (a changed scanner is compiled again)."""
    import hashlib
    import shutil
    import subprocess

    root = tmp_path / "checkout"
    (root / "scripts").mkdir(parents=True)
    shutil.copy(REPO_ROOT / "scripts" / "setup_venv.sh", root / "scripts")
    (root / "stereoscope" / "stats").mkdir(parents=True)
    scanner = "stereoscope/stats/_textscan.c"
    for name in ("pyproject.toml", "requirements.lock", scanner):
        shutil.copy(REPO_ROOT / name, root / name)
    pip_log = root / "pip-calls"
    (root / ".venv" / "bin").mkdir(parents=True)
    (root / ".venv" / "bin" / "python").symlink_to(sys.executable)
    fake_pip = root / ".venv" / "bin" / "pip"
    fake_pip.write_text(f'#!/bin/sh\necho "$*" >> {pip_log}\n')
    fake_pip.chmod(0o755)

    def setup(extras):
        subprocess.run(["bash", str(root / "scripts" / "setup_venv.sh"), extras], check=True, timeout=60)
        return pip_log.read_text().splitlines() if pip_log.exists() else []

    assert len(setup("test")) == 1  # no stamp yet: pip runs
    assert len(setup("test")) == 1  # nothing changed
    assert len(setup("test,local")) == 2  # a new extra
    assert len(setup("local")) == 2 and len(setup("test")) == 2  # both installed already
    want = hashlib.sha256(
        b"".join((root / name).read_bytes() for name in ("pyproject.toml", "requirements.lock", scanner))
    )
    assert (root / ".venv" / ".stereoscope-install").read_text().split() == [want.hexdigest()[:32], "local,test"]
    with open(root / "requirements.lock", "a") as lock:
        lock.write("# changed\n")
    assert len(setup("test")) == 3  # the lock changed
    assert (root / ".venv" / ".stereoscope-install").read_text().split()[1] == "test"
    with open(root / scanner, "a") as source:
        source.write("/* changed */\n")
    assert len(setup("test")) == 4  # the scanner's source changed


def test_no_test_or_code_reads_the_shared_folder_by_an_absolute_path():
    """No file names the folder around this checkout (where ../shared sits) by its absolute path: CI clones
    elsewhere. The folder is taken from where this checkout is, not written here."""
    around = re.escape(str(REPO_ROOT.parent.resolve()))
    pattern = re.compile(rf"[\"']{around}/")
    offenders = []
    for folder in ("tests", "benchmarks", "scripts", "stereoscope", *PROJECT_APPS):
        for path in (REPO_ROOT / folder).rglob("*.py"):
            if pattern.search(path.read_text(encoding="utf-8")):
                offenders.append(str(path.relative_to(REPO_ROOT)))
    assert offenders == []


def test_tests_that_start_worker_processes_run_one_at_a_time_under_xdist(request):
    """`make test` runs the suite in parallel (pytest-xdist, --dist loadgroup). Tests that start Celery workers
    or `serve` share the broker folder (or Redis database), the default queue and the beat schedule file, so every
    test marked `worker` sits in one xdist group: one xdist worker runs them one after another."""
    from tests.conftest import pytest_collection_modifyitems

    def probe():
        pass

    marked = pytest.Function.from_parent(request.node.parent, name="probe_worker", callobj=probe)
    marked.add_marker(pytest.mark.worker)
    plain = pytest.Function.from_parent(request.node.parent, name="probe_plain", callobj=probe)
    pytest_collection_modifyitems(request.config, [marked, plain])
    assert marked.get_closest_marker("xdist_group").args == ("worker-processes",)
    assert plain.get_closest_marker("xdist_group") is None
    # and so it is for the worker tests collected in this session
    for item in request.session.items:
        if item.get_closest_marker("worker"):
            assert item.get_closest_marker("xdist_group").args == ("worker-processes",), item.nodeid


def test_make_test_runs_in_parallel_with_xdist_pinned_everywhere():
    test_sh = (REPO_ROOT / "scripts" / "test.sh").read_text(encoding="utf-8")
    assert re.search(r"pytest -n .+ --dist loadgroup \"\$@\"", test_sh), test_sh
    pyproject = (REPO_ROOT / "pyproject.toml").read_text(encoding="utf-8")
    lock = (REPO_ROOT / "requirements.lock").read_text(encoding="utf-8")
    extra = re.search(r'"pytest-xdist==([\d.]+)"', pyproject)
    assert extra, "pytest-xdist is pinned in the test extra"
    assert f"pytest-xdist=={extra.group(1)}\n" in lock
    assert re.search(r"^execnet==[\d.]+$", lock, re.M), "xdist's dependency is pinned too"


def test_numeric_libraries_use_one_thread_per_test_process():
    """Each xdist worker (and each worker process a test starts) is one of several processes on few cores: BLAS
    and OpenMP thread pools that size themselves to every core would oversubscribe them (a CFA fit took 4x as
    long), so the suite runs them with one thread."""
    import os

    import numpy  # noqa: F401  (loads the BLAS the pools below report)
    import scipy.linalg  # noqa: F401
    from threadpoolctl import threadpool_info

    pools = threadpool_info()
    assert pools and {p["num_threads"] for p in pools} == {1}, pools
    assert os.environ["OMP_NUM_THREADS"] == os.environ["OPENBLAS_NUM_THREADS"] == "1"  # inherited by children
