"""Bases of the apps' API serializers and job viewsets, written once.

- `VersionedSerializer`: a versioned object (stereoscope/versioning.py: toolkits, codebooks, judge templates,
  lexicons, instruments) shows id, name, version, description, parent, locked, built-in key and creation time; only
  the versioning rules write version, parent, locked, the built-in key and the time (read-only here).
- `JobSerializer`: a long job (stereoscope/jobs) shows status, progress, message and its times; only the job engine
  writes them (read-only here).
- `JobActionsMixin`: a job viewset's actions (start, cancel, resume, retry...) call the app's service, which goes
  through the job engine, and answer the job as it is now.

A subclass's `Meta.fields` lists only its own fields: the shared ones are added (id and the leading ones first, the
trailing ones last), so no field list is written twice. The bases are described in comments, not docstrings:
drf-spectacular would show a base's docstring as the description of every subclass without one.
"""

from collections.abc import Callable
from typing import Any, ClassVar

from rest_framework import serializers, status
from rest_framework.response import Response


class SharedFieldsSerializer(serializers.ModelSerializer):
    # A model serializer whose subclasses share fields: `leading_fields` + the subclass's `Meta.fields` +
    # `trailing_fields`; `read_only_shared` are read-only in every subclass.
    leading_fields: ClassVar[tuple[str, ...]] = ("id",)
    trailing_fields: ClassVar[tuple[str, ...]] = ()
    read_only_shared: ClassVar[tuple[str, ...]] = ()

    def get_field_names(self, declared_fields, info):
        # a shared field a subclass declares itself (a toolkit's `locked` says "locked or in use") is still added here,
        # not listed again in its Meta.fields
        shared_names = {*self.leading_fields, *self.trailing_fields}
        own_declared = {name: field for name, field in declared_fields.items() if name not in shared_names}
        own = list(super().get_field_names(own_declared, info))
        shared = [name for name in (*self.leading_fields, *self.trailing_fields) if name not in own]
        leading = [name for name in shared if name in self.leading_fields]
        trailing = [name for name in shared if name in self.trailing_fields]
        return [*leading, *own, *trailing]

    def get_extra_kwargs(self):
        extra = super().get_extra_kwargs()
        for name in self.read_only_shared:
            kwargs = dict(extra.get(name, {}))
            kwargs["read_only"] = True
            kwargs.pop("required", None)
            extra[name] = kwargs
        return extra


VERSION_COLUMNS = ("version", "parent", "locked", "builtin_key", "created_at")


class VersionedSerializer(SharedFieldsSerializer):
    # The fields every versioned object shows. `is_builtin` (whether it is in the built-in library) is there for a
    # subclass that lists it.
    leading_fields = ("id", "name", "version", "description")
    trailing_fields = ("parent", "locked", "builtin_key", "created_at")
    read_only_shared = VERSION_COLUMNS

    is_builtin = serializers.BooleanField(source="study.is_library", read_only=True)


JOB_COLUMNS = ("status", "progress", "message", "created_at", "started_at", "finished_at")


class JobSerializer(SharedFieldsSerializer):
    # The fields every job shows: id first, then the job's own, then its status, live progress, last message and
    # times (the job engine's columns).
    trailing_fields = JOB_COLUMNS
    read_only_shared = JOB_COLUMNS


class JobActionsMixin:
    # For a viewset of jobs: `job_action(service)` calls `service(job, actor=user, **kwargs)` on the job of the URL
    # (the app's service, which goes through the job engine: start, cancel, resume, retry) and answers the job as it is
    # now. A domain error is a 400 (stereoscope/api_errors.py), or a 409 for the types in `job_conflicts`.
    job_conflicts: ClassVar[tuple[type[Exception], ...]] = ()

    def get_job(self):
        return self.get_object()  # type: ignore[attr-defined]

    def job_action(self, service: Callable[..., Any], **kwargs: Any) -> Response:
        job = self.get_job()
        try:
            result = service(job, actor=self.request.user, **kwargs)  # type: ignore[attr-defined]
        except self.job_conflicts as exc:
            return Response({"detail": str(exc)}, status=status.HTTP_409_CONFLICT)
        if isinstance(result, type(job)):
            job = result
        job.refresh_from_db()
        return Response(self.job_answer(job))

    def job_answer(self, job: Any) -> Any:
        # what an action answers: the job serialized (a viewset whose actions answer another view overrides this)
        return self.get_serializer(job).data  # type: ignore[attr-defined]
