"""The suite's own speed and portability: a fast password hasher, and no absolute paths to the research folder."""

import re

from tests.conftest import REPO_ROOT


def test_users_in_tests_use_the_fast_hasher(make_user):
    user = make_user("quick")
    assert user.password.startswith("md5$"), user.password.split("$")[0]


def test_no_test_or_code_reads_the_shared_folder_by_an_absolute_path():
    """No file names the folder around this checkout (where ../shared sits) by its absolute path: CI clones
    elsewhere. The folder is taken from where this checkout is, not written here."""
    around = re.escape(str(REPO_ROOT.parent.resolve()))
    pattern = re.compile(rf"[\"']{around}/")
    offenders = []
    for folder in (
        "tests",
        "benchmarks",
        "scripts",
        "stereoscope",
        "generation",
        "annotation",
        "judging",
        "agreement",
        "psychometrics",
        "measures",
        "exports",
        "recipes",
    ):
        for path in (REPO_ROOT / folder).rglob("*.py"):
            if pattern.search(path.read_text(encoding="utf-8")):
                offenders.append(str(path.relative_to(REPO_ROOT)))
    assert offenders == []
