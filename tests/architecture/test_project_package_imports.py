"""The project package (stereoscope/) imports no app: apps depend on it, never the other way round."""

import ast
from pathlib import Path

from django.conf import settings

ROOT = Path(__file__).resolve().parents[2]


def test_project_package_imports_no_app():
    project_apps = {app for app in settings.INSTALLED_APPS if "." not in app and (ROOT / app).is_dir()}
    project_apps.discard("stereoscope")
    found = []
    for path in sorted((ROOT / "stereoscope").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = []
            if isinstance(node, ast.Import):
                names = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names = [node.module]
            found += [f"{path.relative_to(ROOT)}: {name}" for name in names if name.split(".")[0] in project_apps]
    assert "exports" in project_apps
    assert found == []
