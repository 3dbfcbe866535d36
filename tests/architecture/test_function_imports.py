"""Imports belong at the top of a module. An import inside a function is allowed only with its reason on the same
line (`# lazy: <reason>`, e.g. a heavy library loaded on first use, or `# cycle: <reason>` for an import cycle that
a module-level import would close). The imports inside functions that predate this rule are counted per file
in tests/architecture/function_imports_baseline.txt: a file may not gain one without a reason, and the counts only
shrink (lower the line when you move imports up). Tests, benchmarks, scripts and migrations are not checked."""

import ast
from pathlib import Path

from stereoscope.app_names import PROJECT_APPS

ROOT = Path(__file__).resolve().parents[2]
BASELINE = Path(__file__).resolve().parent / "function_imports_baseline.txt"
REASON_TAGS = ("# lazy:", "# cycle:")


def unexplained_imports(source):
    """Line numbers of imports inside functions without a reason on their line."""
    lines = source.splitlines()
    found = []

    def visit(node, in_function):
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.Import, ast.ImportFrom)) and in_function:
                text = " ".join(lines[child.lineno - 1 : child.end_lineno])
                if not any(tag in text and text.split(tag, 1)[1].strip() for tag in REASON_TAGS):
                    found.append(child.lineno)
            visit(child, in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))

    visit(ast.parse(source), False)
    return found


def code_files():
    for folder in ("stereoscope", *PROJECT_APPS):
        for path in sorted((ROOT / folder).rglob("*.py")):
            if "migrations" not in path.parts:
                yield path


def counts():
    result = {}
    for path in code_files():
        n = len(unexplained_imports(path.read_text(encoding="utf-8")))
        if n:
            result[str(path.relative_to(ROOT))] = n
    return result


def baseline():
    listed = {}
    for line in BASELINE.read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.startswith("#"):
            name, n = line.rsplit(maxsplit=1)
            listed[name] = int(n)
    return listed


def test_the_rule_sees_an_import_inside_a_function_without_a_reason():
    probe = (
        "import os\n"
        "def f():\n"
        "    import json\n"
        "    import numpy  # lazy: heavy, loaded on first use\n"
        "    from . import models  # cycle: models imports this module\n"
        "    from x import y  # lazy:\n"
        "    return lambda: __import__('z')\n"
    )
    assert unexplained_imports(probe) == [3, 6]


def test_no_file_gains_an_import_inside_a_function_without_a_reason():
    found, listed = counts(), baseline()
    grown = {name: (n, listed.get(name, 0)) for name, n in found.items() if n > listed.get(name, 0)}
    assert grown == {}, (
        "imports inside functions without a `# lazy: <reason>` or `# cycle: <reason>` (file: (now, allowed)); "
        "move them to the top of the module or give the reason"
    )


def test_the_baseline_only_shrinks():
    found, listed = counts(), baseline()
    stale = {name: (found.get(name, 0), n) for name, n in listed.items() if found.get(name, 0) < n}
    assert stale == {}, f"lower these lines of {BASELINE.name} to the new counts (file: (now, listed))"


def write_baseline():  # pragma: no cover - by hand: from tests.architecture.test_function_imports import *
    body = "\n".join(f"{name} {n}" for name, n in sorted(counts().items()))
    BASELINE.write_text(
        "# imports inside functions without a reason, per file; only shrinks"
        " (tests/architecture/test_function_imports.py)\n" + body + "\n",
        encoding="utf-8",
    )
