"""Heavy libraries imported on first use instead of when a module is imported.

A Celery worker, `serve` and every `manage.py` command import the task and URL modules of every app; scipy.stats
alone costs about 1.5 s of that start-up here and pandas about 0.5 s, though most processes never use them (a
worker that only generates stories, `manage.py migrate`). `sps = LazyModule("scipy.stats")` behaves like the module
once an attribute is read (tests/stereoscope/test_lazy_imports.py checks that a worker's start-up imports neither).
"""

import importlib
from types import ModuleType
from typing import Any


class LazyModule:
    """A module imported when one of its attributes is first read."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._module: ModuleType | None = None

    def _load(self) -> ModuleType:
        if self._module is None:
            self._module = importlib.import_module(self._name)
        return self._module

    def __getattr__(self, attribute: str) -> Any:
        return getattr(self._load(), attribute)

    def __repr__(self) -> str:
        state = "imported" if self._module is not None else "not imported yet"
        return f"<LazyModule {self._name} ({state})>"
