"""The app graph is a DAG with only the allowed edges.

Every Python file of every app (migrations excepted: they replay history) is read with `ast`: imports at module
level and inside functions, `apps.get_model("app", ...)` / `apps.get_model("app.Model")` and
`importlib.import_module("app...")` with literal names, and string model references ("annotation.Code") in
ForeignKey, OneToOneField and ManyToManyField. Each names an edge from the file's app to another app.
"""

import ast
from collections import defaultdict
from pathlib import Path

from django.conf import settings

from stereoscope.app_names import PROJECT_APPS

ROOT = Path(__file__).resolve().parents[2]
APPS = ["stereoscope", *PROJECT_APPS]

# Direct dependencies each app may have besides the project package (every app -> stereoscope; stereoscope -> none).
# An app may also use what its dependencies depend on (agreement -> annotation -> generation), never the reverse.
ALLOWED = {
    "stereoscope": set(),
    "generation": set(),
    "annotation": {"generation"},
    "judging": {"generation"},
    "psychometrics": {"generation", "measures"},
    "measures": {"generation", "annotation"},
    "agreement": {"annotation", "judging"},
    "exports": set(APPS) - {"exports", "recipes", "reports"},  # recipes and reports build on exports, not the reverse
    "recipes": set(APPS) - {"recipes", "reports"},
    "reports": set(APPS) - {"reports"},  # the study report reads every app; nothing reads it
}

FIELDS = {"ForeignKey", "OneToOneField", "ManyToManyField"}


def _literal(node):
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else None


def referenced_modules(tree):
    """(dotted name or "app.Model" string, line) for every cross-module reference the file makes."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            yield from ((alias.name, node.lineno) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            yield node.module, node.lineno
        elif isinstance(node, ast.Call):
            func = node.func
            name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")
            if name in ("get_model", "import_module") and node.args and _literal(node.args[0]):
                yield _literal(node.args[0]), node.lineno
            elif name in FIELDS:
                targets = node.args[:1] + [k.value for k in node.keywords if k.arg == "to"]
                yield from ((_literal(t), node.lineno) for t in targets if _literal(t))


def app_edges():
    """{(from app, to app): ["path:line", ...]} over every app's Python files."""
    edges = defaultdict(list)
    for app in APPS:
        for path in sorted((ROOT / app).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if "/migrations/" in rel:
                continue
            for name, line in referenced_modules(ast.parse(path.read_text(encoding="utf-8"), rel)):
                other = name.split(".")[0]
                if other in APPS and other != app:
                    edges[(app, other)].append(f"{rel}:{line}")
    return edges


def reachable(graph, start):
    seen, stack = set(), list(graph.get(start, ()))
    while stack:
        node = stack.pop()
        if node not in seen:
            seen.add(node)
            stack.extend(graph.get(node, ()))
    return seen


def allowed_pairs():
    graph = {app: set(deps) | ({"stereoscope"} if app != "stereoscope" else set()) for app, deps in ALLOWED.items()}
    return {(app, other) for app in graph for other in reachable(graph, app)}


def checked_edges():
    return app_edges()


def test_the_allowed_graph_itself_is_acyclic():
    assert not [app for app in ALLOWED if app in reachable(ALLOWED, app)]


def test_every_edge_between_apps_is_allowed():
    allowed = allowed_pairs()
    bad = {f"{a} -> {b}": where[:5] for (a, b), where in checked_edges().items() if (a, b) not in allowed}
    assert not bad, f"imports against the app graph: {bad}"


def test_the_app_graph_has_no_cycle():
    graph = defaultdict(set)
    for a, b in checked_edges():
        graph[a].add(b)
    cycles = sorted(app for app in list(graph) if app in reachable(graph, app))
    assert not cycles, f"apps on a cycle: {cycles}"


def test_the_scanner_sees_every_kind_of_reference():
    tree = ast.parse(
        "import judging.models\n"
        "def f():\n"
        "    from annotation import services\n"
        "    apps.get_model('measures', 'Lexicon')\n"
        "    importlib.import_module('psychometrics.api')\n"
        "code = models.ForeignKey('generation.Output', on_delete=None)\n"
        "other = models.ManyToManyField(to='agreement.GoldLabel')\n"
        "from . import local\n"
    )
    found = {name.split(".")[0] for name, _line in referenced_modules(tree)}
    assert found == {"judging", "annotation", "measures", "psychometrics", "generation", "agreement"}


def test_every_app_folder_is_a_listed_app():
    """The app list is written once (stereoscope/app_names.py): a new app folder must be added there, and so to
    INSTALLED_APPS, this graph and the package list."""
    folders = {p.parent.name for p in ROOT.glob("*/apps.py")} - {"stereoscope"}
    assert folders == set(PROJECT_APPS)
    assert [a for a in settings.INSTALLED_APPS if a in folders or a == "stereoscope"] == APPS
