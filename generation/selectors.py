"""Reads of generation that other apps use: toolkits and prompt items, model endpoints, runs, outputs, provider calls.

Apps outside generation/ read its tables only through these functions
(tests/architecture/test_cross_app_reads.py); they may narrow what a
function returns (`study_runs(study).order_by("pk")`). A `study` argument may be a Study or its id.
"""

from collections.abc import Iterable
from typing import TypeVar, cast

from django.db.models import Count, Q, QuerySet

from stereoscope.models import Study
from stereoscope.untrusted import whole_number

from .models import GenerationRun, ModelEndpoint, Output, OutputStatus, PromptItem, Provider, ProviderCall, Toolkit

StudyRef = Study | int  # a study or its id
PkValue = str | int | None  # a primary key as a form or URL gives it
T = TypeVar("T")


def _id(obj: Study | int) -> int:
    return cast(int, getattr(obj, "pk", obj))


def _ids(values: Iterable[T]) -> Iterable[T]:
    """Ids for an `__in` lookup: a queryset stays a subquery; anything else iterable becomes a list."""
    return values if hasattr(values, "query") else list(values)


def _pk_or_none(value: PkValue) -> int | None:
    """A primary key from a form or URL value, or None when it is not a whole number."""
    return whole_number(value)


# --- toolkits and prompt items --------------------------------------------------------------------------------


def toolkits_for(study: StudyRef) -> QuerySet[Toolkit]:
    """Toolkits `study` may use: its own and the built-in library's."""
    return Toolkit.objects.filter(Q(study=study) | Q(study__is_library=True)).select_related("study")


def study_toolkits(study: StudyRef) -> QuerySet[Toolkit]:
    """The study's own toolkits."""
    return Toolkit.objects.filter(study=study)


def study_toolkit(study: StudyRef, pk: PkValue) -> Toolkit | None:
    """The study's own toolkit `pk`, or None."""
    pk = _pk_or_none(pk)
    return Toolkit.objects.filter(pk=pk, study=study).first() if pk is not None else None


def latest_toolkit(study: StudyRef, name: str) -> Toolkit | None:
    """The newest version of the study's toolkit called `name`, or None."""
    return Toolkit.objects.filter(study=study, name=name).order_by("-version").first()


def toolkit_items(toolkit: Toolkit, numbers: Iterable[int]) -> dict[int, PromptItem]:
    """{number: prompt item} of `toolkit` for these item numbers (numbers it lacks are left out)."""
    return {i.number: i for i in PromptItem.objects.filter(toolkit=toolkit, number__in=numbers)}


def study_items(study: StudyRef) -> QuerySet[PromptItem]:
    """Prompt items of the study's own toolkits, with their toolkit."""
    return PromptItem.objects.filter(toolkit__study=study).select_related("toolkit")


def study_item(study: StudyRef, pk: PkValue) -> PromptItem | None:
    """The prompt item `pk` of one of the study's toolkits, or None."""
    pk = _pk_or_none(pk)
    return study_items(study).filter(pk=pk).first() if pk is not None else None


# --- model endpoints ------------------------------------------------------------------------------------------


def study_endpoints(study: StudyRef, *, callable_only: bool = False) -> QuerySet[ModelEndpoint]:
    """The study's model endpoints by name; `callable_only` leaves out manual ones (nothing to call)."""
    endpoints = ModelEndpoint.objects.filter(study=study).order_by("name")
    return endpoints.exclude(provider=Provider.MANUAL) if callable_only else endpoints


def study_endpoint(study: StudyRef, pk: PkValue) -> ModelEndpoint | None:
    """The study's endpoint `pk`, or None."""
    pk = _pk_or_none(pk)
    return ModelEndpoint.objects.filter(pk=pk, study=study).first() if pk is not None else None


def endpoint_named(study: StudyRef, name: str) -> ModelEndpoint | None:
    """The study's endpoint called `name`, or None."""
    return ModelEndpoint.objects.filter(study=study, name=name).first()


def endpoints_named(study: StudyRef, names: Iterable[str]) -> list[ModelEndpoint]:
    """The study's endpoints with these names (names it lacks are left out)."""
    return list(ModelEndpoint.objects.filter(study=study, name__in=_ids(names)))


def endpoints_by_id(study: StudyRef, pks: Iterable[PkValue]) -> list[ModelEndpoint]:
    """The study's endpoints with these ids, by name (values that are not whole numbers or not the study's
    endpoints are left out)."""
    wanted = [pk for pk in map(_pk_or_none, pks) if pk is not None]
    return list(study_endpoints(study).filter(pk__in=wanted))


def endpoint(pk: int) -> ModelEndpoint:
    """The endpoint `pk` (DoesNotExist when it is gone)."""
    return ModelEndpoint.objects.get(pk=pk)


def every_endpoint() -> QuerySet[ModelEndpoint]:
    """All endpoints: the choices of an API field whose value the caller then checks against its study."""
    return ModelEndpoint.objects.all()


# --- runs -----------------------------------------------------------------------------------------------------


def study_runs(
    study: StudyRef, run_ids: Iterable[int] | None = None, *, imports: bool | None = None
) -> QuerySet[GenerationRun]:
    """The study's generation runs, newest first; only `run_ids` when given; `imports` True / False keeps only runs
    of imported outputs / only generated runs."""
    runs = GenerationRun.objects.filter(study=study).order_by("-created_at")
    if run_ids is not None:
        runs = runs.filter(pk__in=_ids(run_ids))
    if imports is not None:
        runs = runs.filter(is_import=imports)
    return runs


def runs_by_id(run_ids: Iterable[int]) -> list[GenerationRun]:
    """The runs with these ids, of any study (the caller checks the study)."""
    return list(GenerationRun.objects.filter(pk__in=_ids(run_ids)))


def generated_run_named(study: StudyRef, name: str) -> GenerationRun | None:
    """The study's first generated (not imported) run called `name`, or None."""
    return study_runs(study, imports=False).filter(name=name).order_by("pk").first()


def run_output_counts(run: GenerationRun | int) -> dict[str, int]:
    """{output status: n} of one run."""
    return dict(Output.objects.filter(run=run).values_list("status").annotate(n=Count("id")).order_by())


# --- outputs --------------------------------------------------------------------------------------------------


def study_outputs(study: StudyRef) -> QuerySet[Output]:
    """All outputs of the study."""
    return Output.objects.filter(study_id=_id(study))


def study_output(study: StudyRef, pk: PkValue) -> Output | None:
    """The study's output `pk` (a number or digits), or None."""
    pk = _pk_or_none(pk)
    if pk is None:
        return None
    # ordered by pk (one row at most), not by the model's ordering, which joins four tables; the item comes along
    return study_outputs(study).filter(pk=pk).select_related("item").order_by("pk").first()


def outputs_by_id(output_ids: Iterable[int]) -> QuerySet[Output]:
    """The outputs with these ids (the caller knows they are its study's)."""
    return Output.objects.filter(pk__in=_ids(output_ids))


def outputs_in_id_range(low: int, high: int) -> QuerySet[Output]:
    """The outputs with ids from `low` to `high` (both included): a chunk of ids read by its range, cheaper to build
    than a long `IN` list (the caller drops the ids it did not ask for)."""
    return Output.objects.filter(pk__gte=low, pk__lte=high)


def output_texts(output_ids: Iterable[int], study: StudyRef | None = None) -> dict[int, str]:
    """{output id: text} for these outputs (of `study` when given)."""
    outputs = outputs_by_id(output_ids)
    if study is not None:
        outputs = outputs.filter(study_id=_id(study))
    return dict(outputs.values_list("pk", "text"))


def finished_outputs(
    study: StudyRef, *, run_ids: Iterable[int] | None = None, item: PromptItem | int | None = None
) -> QuerySet[Output]:
    """The study's done outputs with text (what coding, judging and measures work on); only those of `run_ids` /
    `item` when given."""
    outputs = study_outputs(study).filter(status=OutputStatus.DONE).exclude(text="")
    if run_ids:
        outputs = outputs.filter(run_id__in=_ids(run_ids))
    if item is not None:
        outputs = outputs.filter(item=item)
    return outputs


def run_outputs(run: GenerationRun | int, *, done_only: bool = False) -> QuerySet[Output]:
    """The outputs of one run (only the done ones with `done_only`)."""
    outputs = Output.objects.filter(run=run)
    return outputs.filter(status=OutputStatus.DONE) if done_only else outputs


def study_models(study: StudyRef) -> list[str]:
    """The names of the models that wrote the study's outputs, sorted."""
    return list(study_outputs(study).order_by("model_name").values_list("model_name", flat=True).distinct())


def no_outputs() -> QuerySet[Output]:
    return Output.objects.none()


def every_output() -> QuerySet[Output]:
    """All outputs: the choices of an API field whose value the caller then checks against its study."""
    return Output.objects.all()


# --- provider calls -------------------------------------------------------------------------------------------


def unit_calls(study: StudyRef, purpose: str, unit_refs: Iterable[str]) -> QuerySet[ProviderCall]:
    """The attempts of these units (e.g. "verdict:12") for one purpose, in the order they started."""
    return ProviderCall.objects.filter(study=study, purpose=purpose, unit_ref__in=_ids(unit_refs)).order_by(
        "started_at"
    )


def last_unit_call(study: StudyRef, purpose: str, unit_ref: str) -> ProviderCall | None:
    """The latest attempt of one unit, or None."""
    return (
        ProviderCall.objects.filter(study=study, purpose=purpose, unit_ref=unit_ref).order_by("-attempt", "-id").first()
    )
