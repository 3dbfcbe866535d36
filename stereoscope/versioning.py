"""One versioning base for what a study versions: toolkits, codebooks, judge templates, lexicons and instruments.

`VersionedModel` holds the shared columns (study, name, version, parent, locked, built-in key, author, time).
`Versioning` holds the shared rules, with the app's own parts passed in: which children a copy takes, what "in use"
means, the app's error type and how the thing is called in messages.

- Lock on first use: `lock()` freezes a version once a run (round, measure run, questionnaire run) uses it.
- A locked version is read-only; `writable()` gives the version an edit goes to (itself, or a new version).
- `new_version()` copies a version with its children as the next version of the same name, in its own study.
- `copy_into()` copies a version into another study (e.g. a built-in into a research study).
- The built-in library study is never written here: only `load_builtin` creates rows there (`builtin=True`).
"""

from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

from django.conf import settings
from django.db import models, transaction
from django.db.models import Max
from django.utils import timezone

from .models import Study
from .services import record_activity

V = TypeVar("V", bound="VersionedModel")

SHARED_FIELDS = ("id", "study", "name", "version", "parent", "locked", "created_by", "created_at")


class VersionedModel(models.Model):
    """A numbered version of a named thing in a study. Locked versions are read-only; edits go to a new version."""

    study = models.ForeignKey(Study, on_delete=models.CASCADE, related_name="%(class)ss")
    name = models.CharField(max_length=200)
    version = models.PositiveIntegerField(default=1)
    description = models.TextField(blank=True)
    parent = models.ForeignKey("self", null=True, blank=True, on_delete=models.SET_NULL, related_name="newer_versions")
    locked = models.BooleanField(
        default=False, help_text="Set once something uses this version; edits then make a new version."
    )
    builtin_key = models.CharField(max_length=100, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        abstract = True
        constraints = [models.UniqueConstraint(fields=["study", "name", "version"], name="unique_%(class)s_version")]
        ordering = ["study", "name", "-version"]

    def __str__(self) -> str:
        return f"{self.name} v{self.version}"


class VersionLocked(ValueError):
    """A locked version or the built-in library was to be written; nothing was changed."""


def _never_in_use(obj: Any) -> bool:
    return False


def _no_children(source: Any, copy: Any, *, actor: Any = None) -> None:
    return None


class Versioning(Generic[V]):
    """The versioning rules for one model. The app passes its own parts:

    noun: how messages call it ("toolkit"); error: makes the app's exception from a message;
    in_use: whether something uses a version (locked or not); used_by: who locks it, for messages ("a run");
    copy_children(source, copy, actor=...): copies the children of `source` into the saved `copy`;
    fresh_fields: own columns a copy does not take over (they get their default); copy_builtin_key: whether a
    copy keeps the key of the built-in it came from.
    """

    def __init__(
        self,
        model: type[V],
        *,
        noun: str,
        error: Callable[[str], Exception] = VersionLocked,
        in_use: Callable[[V], bool] = _never_in_use,
        used_by: str = "",
        copy_children: Callable[..., object] = _no_children,
        fresh_fields: Iterable[str] = (),
        copy_builtin_key: bool = False,
    ) -> None:
        self.model, self.noun, self.error, self.in_use, self.used_by = model, noun, error, in_use, used_by
        self.copy_children, self.fresh_fields, self.copy_builtin_key = copy_children, fresh_fields, copy_builtin_key

    # --- reading -----------------------------------------------------------------------------------------------
    def next_version(self, study: Study, name: str) -> int:
        return (self.model._default_manager.filter(study=study, name=name).aggregate(v=Max("version"))["v"] or 0) + 1

    def is_locked(self, obj: V) -> bool:
        """Locked by hand, by first use, or used right now."""
        return obj.locked or self.in_use(obj)

    # --- rules ---------------------------------------------------------------------------------------------------
    def refuse_library(self, study: Study, *, builtin: bool = False) -> None:
        """Only load_builtin (builtin=True) writes into the built-in library study."""
        if study.is_library and not builtin:
            raise self.error("The built-in library is read-only.")

    def _refuse_builtin(self, obj: V) -> None:
        if obj.study.is_library:
            raise self.error(f"Built-in library {self.noun}s are read-only; copy one into your study to change it.")

    def ensure_editable(self, obj: V) -> None:
        """Raise the app's error when `obj` is a library built-in or locked."""
        self._refuse_builtin(obj)
        if self.is_locked(obj):
            why = f" because {self.used_by} uses it" if self.used_by and self.in_use(obj) else ""
            raise self.error(f"The {self.noun} “{obj}” is locked{why}; create a new version to change it.")

    # --- writing -----------------------------------------------------------------------------------------------
    def lock(self, obj: V) -> V:
        """Lock on first use; a no-op when already locked. Library rows are never written (they are locked)."""
        if not obj.locked and not obj.study.is_library:
            self.model._default_manager.filter(pk=obj.pk).update(locked=True)
            obj.locked = True
        return obj

    def lock_by_hand(self, obj: V, *, actor: Any = None) -> V:
        self.refuse_library(obj.study)
        self.lock(obj)
        record_activity(obj.study, actor, f"locked {self.noun}", str(obj))
        return obj

    def _clone(self, source: V, *, study: Study, parent: V | None, actor: Any, changes: dict[str, Any]) -> V:
        copy = self.model()
        for field in self.model._meta.concrete_fields:
            if field.name not in SHARED_FIELDS and field.name not in self.fresh_fields:
                setattr(copy, field.attname, getattr(source, field.attname))
        if not self.copy_builtin_key:
            copy.builtin_key = ""
        for name, value in changes.items():
            setattr(copy, name, value)
        copy.study, copy.parent, copy.locked = study, parent, False
        copy.name = changes.get("name", source.name)
        copy.version = self.next_version(study, copy.name)
        copy.created_by = actor if getattr(actor, "is_authenticated", False) else None
        copy.save()
        self.copy_children(source, copy, actor=actor)
        return copy

    @transaction.atomic
    def new_version(self, obj: V, *, actor: Any = None, **changes: Any) -> V:
        """The next version of `obj` in its own study, with its children and any `changes` to its own columns."""
        if obj.study.is_library:
            raise self.error(
                f"Built-in library {self.noun}s are copied into a study, not versioned; use 'copy into this study'."
            )
        copy = self._clone(obj, study=obj.study, parent=obj, actor=actor, changes=changes)
        record_activity(obj.study, actor, f"created a new {self.noun} version", f"{copy} from v{obj.version}")
        return copy

    @transaction.atomic
    def copy_into(self, obj: V, *, study: Study, actor: Any = None, **changes: Any) -> V:
        """A new editable copy of `obj` in `study` (its next version there); within a study it is a new version."""
        self.refuse_library(study)
        if obj.study_id == study.pk:
            return self.new_version(obj, actor=actor, **changes)
        copy = self._clone(obj, study=study, parent=None, actor=actor, changes=changes)
        record_activity(study, actor, f"copied a {self.noun}", f"{copy} from {obj.study.name}")
        return copy

    @transaction.atomic
    def writable(self, obj: V, *, actor: Any = None) -> tuple[V, bool]:
        """(version to write to, created): `obj` itself, or — when it is locked — a new version of it."""
        self._refuse_builtin(obj)
        if not self.is_locked(obj):
            return obj, False
        self.lock(obj)
        return self.new_version(obj, actor=actor), True
