"""Views, API views and tasks never write the ORM themselves: they call services.

An AST walk over every module named api*/views*/tasks* (or inside an api/ or views/ package) of every app and the
project package fails on:

- `.save()` / `.delete()` called with no positional argument (a model, a form or a serializer; a storage's
  `save(name, content)` or a cache's `delete(key)` take arguments and are not ORM writes);
- `X.objects.create/update/delete/bulk_create/bulk_update/get_or_create/update_or_create`, and
  `bulk_create/bulk_update/get_or_create/update_or_create` on any manager;
- `QuerySet.update(...)` / `QuerySet.delete()`: `.update(` on a query chain (`.filter(...).update(...)`,
  `.objects.update`, `.all().update`, ...) or on a name that holds a queryset (`qs`, `queryset`, `*_qs`);
- a ModelViewSet (or a class using mixins.CreateModelMixin / UpdateModelMixin / DestroyModelMixin) that keeps a
  default write action: each of create / update / destroy must be overridden, either the action itself or its
  perform_create / perform_update / perform_destroy hook, and the override must call a service
  (`services.x(...)`, `<app>_services.x(...)`, or a function imported from a services module).

Tests, benchmarks, migrations and management commands are outside the rule (they build fixtures or are services'
callers of their own).
"""

import ast
from pathlib import Path

from stereoscope.app_names import PROJECT_APPS

ROOT = Path(__file__).resolve().parents[2]

WRITE_MANAGER_METHODS = {
    "create",
    "update",
    "delete",
    "bulk_create",
    "bulk_update",
    "get_or_create",
    "update_or_create",
}
ANY_MANAGER_WRITES = {"bulk_create", "bulk_update", "get_or_create", "update_or_create"}
QUERY_CHAIN_METHODS = {
    "objects",
    "filter",
    "exclude",
    "all",
    "select_for_update",
    "select_related",
    "prefetch_related",
    "order_by",
    "annotate",
    "using",
    "distinct",
    "none",
}
QUERYSET_NAMES = {"qs", "queryset", "query_set"}
APP_NAMES = {"stereoscope", *PROJECT_APPS}
WRITE_ACTIONS = {
    "create": ("create", "perform_create"),
    "update": ("update", "perform_update"),
    "destroy": ("destroy", "perform_destroy"),
}
MIXIN_ACTIONS = {"CreateModelMixin": {"create"}, "UpdateModelMixin": {"update"}, "DestroyModelMixin": {"destroy"}}
ALL_WRITE_BASES = {"ModelViewSet"}


def _is_checked_module(path: Path) -> bool:
    names = {path.stem} | {part for part in path.parts[:-1]}
    return any(name.startswith(("api", "views", "tasks")) for name in names)


def _chain_names(node):
    """The attribute and call names of an expression chain, innermost first: `A.objects.filter(x).update` ->
    ['A', 'objects', 'filter', 'update']."""
    names = []
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            names.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Name):
            names.append(node.id)
            break
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            break
    return list(reversed(names))


def _is_queryset_receiver(node) -> bool:
    chain = _chain_names(node)
    if any(name in QUERY_CHAIN_METHODS for name in chain[1:]):
        return True
    if isinstance(node, ast.Name):
        return node.id in QUERYSET_NAMES or node.id.endswith(("_qs", "_queryset"))
    if isinstance(node, ast.Attribute):  # self.queryset, study.codebooks (a related manager)
        return node.attr in QUERYSET_NAMES
    return False


def direct_writes(tree) -> list[tuple[int, str]]:
    """(line, description) of each direct ORM write in a module's AST."""
    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        method = node.func.attr
        receiver = node.func.value
        chain = _chain_names(receiver)
        text = ".".join(chain + [method])
        if method in ("save", "delete") and not node.args:
            found.append((node.lineno, f"{text}()"))
        elif method in WRITE_MANAGER_METHODS and chain and chain[-1] == "objects":
            found.append((node.lineno, f"{text}()"))
        elif method in ANY_MANAGER_WRITES:
            found.append((node.lineno, f"{text}()"))
        elif method == "update" and _is_queryset_receiver(receiver):
            found.append((node.lineno, f"{text}()"))
    return sorted(found)


def _base_name(base) -> str:
    if isinstance(base, ast.Attribute):
        return base.attr
    if isinstance(base, ast.Name):
        return base.id
    return ""


READ_ONLY_MODULES = {"selectors", "models", "serializers", "forms", "permissions", "api_parsers", "downloads", "health"}


def _calls_a_service(function, service_names, methods, seen=()) -> bool:
    """Whether `function` calls a service: `services.x(...)`, a function or module imported from the app's service
    layer, or (followed) another method of the class that does."""
    for node in ast.walk(function):
        if not isinstance(node, ast.Call):
            continue
        chain = _chain_names(node.func)
        if not chain:
            continue
        if chain[0] == "self" and len(chain) == 2 and chain[1] in methods and chain[1] not in seen:
            if _calls_a_service(methods[chain[1]], service_names, methods, seen + (chain[1],)):
                return True
        elif chain[0] in service_names or "services" in chain[0]:
            return True
    return False


def _service_names(tree) -> set[str]:
    """Names bound to the service layer: `from . import services, runs`, `from app import rounds`,
    `from .services import f`, `from app.toolkit_services import g`, `import app.services as s` (modules imported
    from a package count, except read-only ones: selectors, models, serializers, forms, ...)."""
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            parts = module.split(".")
            for alias in node.names:
                bound = alias.asname or alias.name
                if any("services" in part for part in parts) or "services" in alias.name:
                    names.add(bound)
                elif (node.level > 0 and not module or module in APP_NAMES) and alias.name not in READ_ONLY_MODULES:
                    names.add(bound)  # a module of an app: `from . import runs`
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if "services" in alias.name:
                    names.add(alias.asname or alias.name.split(".")[0])
    return names


def unguarded_write_actions(tree) -> list[tuple[int, str]]:
    """(line, description) of each viewset in the module that keeps a default write action, or overrides it
    without calling a service."""
    service_names = _service_names(tree)
    classes = {node.name: node for node in tree.body if isinstance(node, ast.ClassDef)}

    def methods_of(cls, seen=()):
        own = {item.name: item for item in cls.body if isinstance(item, (ast.FunctionDef, ast.AsyncFunctionDef))}
        inherited = {}
        for base in cls.bases:
            name = _base_name(base)
            if name in classes and name not in seen:
                inherited.update(methods_of(classes[name], seen + (cls.name,)))
        return {**inherited, **own}

    def write_actions(cls, seen=()):
        actions = set()
        for base in cls.bases:
            name = _base_name(base)
            if name in ALL_WRITE_BASES:
                actions |= set(WRITE_ACTIONS)
            actions |= MIXIN_ACTIONS.get(name, set())
            if name in classes and name not in seen:
                actions |= write_actions(classes[name], seen + (cls.name,))
        return actions

    found = []
    for cls in classes.values():
        methods = methods_of(cls)
        for action in sorted(write_actions(cls)):
            overrides = [methods[name] for name in WRITE_ACTIONS[action] if name in methods]
            if not overrides:
                found.append((cls.lineno, f"{cls.name} keeps DRF's default {action}"))
            elif not any(_calls_a_service(function, service_names, methods) for function in overrides):
                found.append((cls.lineno, f"{cls.name}.{overrides[0].name} calls no service"))
    return found


def check_source(source: str) -> list[tuple[int, str]]:
    tree = ast.parse(source)
    return sorted(direct_writes(tree) + unguarded_write_actions(tree))


def checked_modules():
    from django.apps import apps

    folders = [ROOT / "stereoscope"] + [
        ROOT / config.name for config in apps.get_app_configs() if (ROOT / config.name).is_dir()
    ]
    for folder in sorted(set(folders)):
        for path in sorted(folder.rglob("*.py")):
            relative = path.relative_to(ROOT)
            if {"migrations", "management", "tests", "testing"} & set(relative.parts):
                continue
            if _is_checked_module(relative):
                yield path


def check_tree() -> list[str]:
    found = []
    for path in checked_modules():
        for line, what in check_source(path.read_text(encoding="utf-8")):
            found.append(f"{path.relative_to(ROOT)}:{line}: {what}")
    return found


PROBE = """
from rest_framework import mixins, viewsets
from . import services
from .models import Code, Coding


class Bad(viewsets.ModelViewSet):
    pass


class HalfGuarded(mixins.CreateModelMixin, mixins.DestroyModelMixin, viewsets.GenericViewSet):
    def perform_create(self, serializer):
        services.create_code(**serializer.validated_data)

    def perform_destroy(self, instance):
        instance.delete()


class Guarded(viewsets.ModelViewSet):
    def perform_create(self, serializer):
        serializer.instance = services.create_code(**serializer.validated_data)

    def perform_update(self, serializer):
        services.update_code(serializer.instance, **serializer.validated_data)

    def perform_destroy(self, instance):
        services.delete_code(instance)


def view(request, code, study):
    code.save()
    Coding.objects.create(code=code)
    Coding.objects.filter(code=code).update(status="x")
    study.codings.all().delete()
    Code.objects.get_or_create(name="x")
    queryset = Coding.objects.all()
    queryset.update(status="y")
    data = {}
    data.update(a=1)  # a dict: fine
    cache.delete("key")  # a cache: fine
    storage.save("name", content)  # a storage: fine
    services.save_code(code)  # a service: fine
"""


def test_the_checker_sees_each_kind_of_direct_write(tmp_path):
    """A probe module in a temporary folder: every forbidden write is reported, the allowed calls are not."""
    probe = tmp_path / "api_probe.py"
    probe.write_text(PROBE, encoding="utf-8")
    assert _is_checked_module(probe.relative_to(tmp_path))
    found = [what for _, what in check_source(probe.read_text(encoding="utf-8"))]
    assert found == [
        "Bad keeps DRF's default create",
        "Bad keeps DRF's default destroy",
        "Bad keeps DRF's default update",
        "HalfGuarded.perform_destroy calls no service",
        "instance.delete()",
        "code.save()",
        "Coding.objects.create()",
        "Coding.objects.filter.update()",
        "study.codings.all.delete()",
        "Code.objects.get_or_create()",
        "queryset.update()",
    ]


def test_the_checker_covers_every_apps_api_views_and_tasks():
    modules = {str(path.relative_to(ROOT)) for path in checked_modules()}
    for expected in ("stereoscope/api.py", "annotation/api/views.py", "judging/api/views.py", "measures/tasks.py"):
        assert expected in modules
    assert not any("services" in module for module in modules)


def test_views_api_views_and_tasks_write_only_through_services():
    assert check_tree() == []
