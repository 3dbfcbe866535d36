"""The domain statistics live in stereoscope/stats/ and are Django-free: no module there imports Django or an app,
so they can be used (and tested) as a plain library. A probe shows the check sees such an import."""

import ast
from pathlib import Path

from stereoscope.app_names import PROJECT_APPS

STATS = Path(__file__).resolve().parents[2] / "stereoscope" / "stats"
FORBIDDEN = {"django", "rest_framework", *PROJECT_APPS} | {"celery"}


def forbidden_imports(source):
    found = []
    for node in ast.walk(ast.parse(source)):
        names = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
        found += [name for name in names if name.split(".")[0] in FORBIDDEN]
    return found


def test_the_check_sees_a_django_import():
    assert forbidden_imports("def f():\n    from django.db import models\n") == ["django.db"]
    assert forbidden_imports("import annotation.selectors\nimport numpy\n") == ["annotation.selectors"]


def test_the_stats_package_imports_no_django_and_no_app():
    modules = sorted(STATS.glob("*.py"))
    assert {p.stem for p in modules} >= {"agreement", "categorical", "textproc", "defined"}
    offenders = {p.name: forbidden_imports(p.read_text(encoding="utf-8")) for p in modules}
    assert {name: hits for name, hits in offenders.items() if hits} == {}
