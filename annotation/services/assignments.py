"""Assignments of stories to coders: planning, status, reassignment, the coding queue."""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from django.db import IntegrityError, transaction
from django.db.models import Max, QuerySet
from django.utils import timezone

from generation import selectors as generation
from stereoscope.models import Role, Study
from stereoscope.permissions import has_role
from stereoscope.services import record_activity

from ..assigning import AssignmentPlanError, plan_assignments, sample_outputs
from ..models import (
    Assignment,
    AssignmentPlan,
    AssignmentStatus,
    Codebook,
    CodingMode,
)
from .errors import AnnotationError, _to_int

if TYPE_CHECKING:
    from django.contrib.auth.models import User

    from generation.models import GenerationRun, Output

# --- assignments --------------------------------------------------------------------------------------


# The stable order stories are sampled and planned in: the same in a study rebuilt from its recipe (never by id).
STABLE_ORDER = ("run__name", "model_name", "item__number", "variant_key", "context_key", "trial", "pk")


SEED_RANGE = (-(2**31), 2**31 - 1)  # stored with the plan: a database integer


def _seed(value: Any, label: str) -> int:
    seed = _to_int(value, label) or 0
    if not SEED_RANGE[0] <= seed <= SEED_RANGE[1]:
        raise AnnotationError(f"{label} must be between {SEED_RANGE[0]:,} and {SEED_RANGE[1]:,}.")
    return seed


def _check_sample(sample_size: Any, runs: Iterable[GenerationRun] | None) -> int | None:
    n = _to_int(sample_size, "The sample size")
    if n is None:
        return None
    if n < 1:
        raise AnnotationError("The sample size must be at least 1 (leave it empty to assign every story).")
    if runs is not None and not list(runs):
        raise AnnotationError("Choose one or more runs to sample the stories from.")
    return n


def _prepare(
    study: Study,
    codebook: Codebook,
    *,
    outputs: QuerySet[Output],
    coders: Iterable[User],
    k: Any,
    strategy: str,
    seed: Any,
    mode: str,
    sample_size: Any,
    sample_seed: Any,
    runs: Iterable[GenerationRun] | None,
) -> dict[str, Any]:
    """Checks the request and plans it; writes nothing. Returns the plan as a dict (see preview_assignments)."""
    if codebook.study_id != study.pk:
        raise AnnotationError(f"No codebook {codebook.pk} in this study.")
    if mode not in CodingMode.values:
        raise AnnotationError("Mode must be blind or consensus.")
    coders = sorted(dict.fromkeys(coders), key=lambda c: c.username)  # the plan depends on who, not on the order
    for coder in coders:
        if not has_role(coder, study, Role.CODER):
            raise AnnotationError(f"{coder.username} is not a coder in this study.")
    n = _check_sample(sample_size, runs)
    seed = _seed(seed, "The seed")
    sample_seed = seed if sample_seed in (None, "") else _seed(sample_seed, "The sample seed")
    outputs = outputs.filter(study=study)
    if runs is not None:
        outputs = outputs.filter(run__in=list(runs))
    rows: list[tuple[Any, ...]] = list(
        outputs.order_by(*STABLE_ORDER).values_list("pk", "model_name", "item__number", "run_id")
    )
    if not rows:
        raise AnnotationError("No finished stories to assign: choose runs that have finished stories.")
    run_ids = sorted({r[3] for r in rows})
    rows = [r[:3] for r in rows]
    available = len(rows)
    strata: list[tuple[Any, Any, int, int]] = []  # read only when a sample was drawn
    try:
        if n is not None:
            rows, strata = sample_outputs(rows, n, seed=sample_seed)
        existing: dict[int, set[int]] = {}
        for output_id, coder_id in Assignment.objects.filter(
            codebook=codebook, output_id__in=[r[0] for r in rows]
        ).values_list("output_id", "coder_id"):
            existing.setdefault(output_id, set()).add(coder_id)
        pairs = plan_assignments(
            rows, [c.pk for c in coders], k=_to_int(k, "k") or 0, strategy=strategy, seed=seed, existing=existing
        )
    except AssignmentPlanError as exc:
        raise AnnotationError(str(exc)) from None
    names = {c.pk: c.username for c in coders}
    per_coder = {c.username: 0 for c in coders}
    for _output_id, coder_id in pairs:
        per_coder[names[coder_id]] += 1
    return {
        "coders": coders,
        "k": len(coders) if strategy == "all" else _to_int(k, "k"),
        "strategy": strategy,
        "seed": seed,
        "mode": mode,
        "run_ids": run_ids,
        "available": available,
        "stories": [r[0] for r in rows],
        "sample": None
        if n is None
        else {
            "n": n,
            "seed": sample_seed,
            "stratify": "model_item",
            "strata": [
                {"model": model, "item": item, "available": size, "sampled": taken}
                for model, item, size, taken in strata
            ],
        },
        "pairs": pairs,
        "per_coder": per_coder,
    }


def preview_assignments(
    study: Study,
    codebook: Codebook,
    *,
    outputs: QuerySet[Output],
    coders: Iterable[User],
    k: Any = 1,
    strategy: str = "random_balanced",
    seed: Any = 0,
    mode: str = CodingMode.BLIND,
    sample_size: Any = None,
    sample_seed: Any = None,
    runs: Iterable[GenerationRun] | None = None,
) -> dict[str, Any]:
    """The plan create_assignments would carry out, without writing: {"available": stories in the chosen runs,
    "stories": the output ids planned (the sample, when N is given), "sample": {n, seed, stratify, strata: [{model,
    item, available, sampled}]} or None, "pairs": [(output_id, coder_id)] new assignments in queue order,
    "per_coder": {username: new assignments}, coders, k, strategy, seed, mode, run_ids}."""
    return _prepare(
        study,
        codebook,
        outputs=outputs,
        coders=coders,
        k=k,
        strategy=strategy,
        seed=seed,
        mode=mode,
        sample_size=sample_size,
        sample_seed=sample_seed,
        runs=runs,
    )


@transaction.atomic
def create_assignments(
    study: Study,
    codebook: Codebook,
    *,
    outputs: QuerySet[Output],
    coders: Iterable[User],
    k: Any = 1,
    strategy: str = "random_balanced",
    seed: Any = 0,
    mode: str = CodingMode.BLIND,
    sample_size: Any = None,
    sample_seed: Any = None,
    runs: Iterable[GenerationRun] | None = None,
    actor: Any = None,
) -> list[Assignment]:
    """Assign outputs to coders; returns the new Assignments. Existing ones count toward k and stay.

    `runs` limits the stories to those runs; `sample_size` N draws a sample of N of them first, stratified by
    model × prompt (see annotation.assigning), with `sample_seed` (default: `seed`). The plan is recorded
    (AssignmentPlan) so a study's recipe can say which stories, coders, overlap and mode were used."""
    plan = _prepare(
        study,
        codebook,
        outputs=outputs,
        coders=coders,
        k=k,
        strategy=strategy,
        seed=seed,
        mode=mode,
        sample_size=sample_size,
        sample_seed=sample_seed,
        runs=runs,
    )
    record = AssignmentPlan.objects.create(
        study=study,
        codebook=codebook,
        k=plan["k"],
        strategy=strategy,
        seed=plan["seed"],
        mode=mode,
        sample_size=plan["sample"]["n"] if plan["sample"] else None,
        sample_seed=plan["sample"]["seed"] if plan["sample"] else None,
        stories=len(plan["stories"]),
        assignments_made=len(plan["pairs"]),
        created_by=actor if getattr(actor, "pk", None) else None,
    )
    record.runs.set(plan["run_ids"])
    record.coders.set(plan["coders"])
    positions = dict(
        Assignment.objects.filter(codebook=codebook)
        .values("coder_id")
        .annotate(m=Max("position"))
        .values_list("coder_id", "m")
    )
    new: list[Assignment] = []
    for output_id, coder_id in plan["pairs"]:
        positions[coder_id] = (positions.get(coder_id) or 0) + 1
        new.append(
            Assignment(
                study=study,
                codebook=codebook,
                output_id=output_id,
                coder_id=coder_id,
                mode=mode,
                position=positions[coder_id],
                plan=record,
            )
        )
    Assignment.objects.bulk_create(new, batch_size=2000)
    sampled = f", a sample of {plan['sample']['n']} stories" if plan["sample"] else ""
    record_activity(
        study, actor, "assigned stories", f"{len(new)} assignments ({strategy}, k={k}{sampled}) in {codebook}"
    )
    return new


@transaction.atomic
def set_assignment_status(assignment: Assignment, *, user: Any, done: bool) -> Assignment:
    if assignment.coder_id != user.pk and not has_role(user, assignment.study, Role.RESEARCHER):
        raise AnnotationError("That assignment belongs to another coder.")
    assignment.status = AssignmentStatus.DONE if done else AssignmentStatus.PENDING
    assignment.completed_at = timezone.now() if done else None
    assignment.save(update_fields=["status", "completed_at"])
    return assignment


@transaction.atomic
def reassign_assignment(assignment: Assignment, *, coder: User, actor: Any = None) -> Assignment:
    """Hand an assignment to another coder (their codings so far stay theirs)."""
    study = assignment.study
    if not has_role(coder, study, Role.CODER):
        raise AnnotationError(f"{coder.username} is not a coder in this study.")
    if coder.pk == assignment.coder_id:
        return assignment
    if Assignment.objects.filter(codebook=assignment.codebook, output=assignment.output, coder=coder).exists():
        raise AnnotationError(f"{coder.username} already has this story.")
    old = assignment.coder.username
    position = (
        Assignment.objects.filter(codebook=assignment.codebook, coder=coder).aggregate(m=Max("position"))["m"] or 0
    ) + 1
    assignment.coder = coder
    assignment.position = position
    assignment.status = AssignmentStatus.PENDING
    assignment.completed_at = None
    try:
        with transaction.atomic():
            assignment.save()
    except IntegrityError:
        raise AnnotationError(f"{coder.username} already has this story.") from None
    record_activity(study, actor, "reassigned story", f"{assignment.output_id}: {old} → {coder.username}")
    return assignment


def delete_assignment(assignment: Assignment, *, actor: Any = None) -> None:
    record_activity(
        assignment.study, actor, "removed assignment", f"{assignment.output_id} from {assignment.coder.username}"
    )
    assignment.delete()


def next_assignment(codebook: Codebook, coder: Any, after: Assignment | None = None) -> Assignment | None:
    """The coder's next pending assignment (after `after` in queue order, wrapping around)."""
    pending = Assignment.objects.filter(codebook=codebook, coder=coder, status=AssignmentStatus.PENDING).order_by(
        "position", "id"
    )
    if after is not None:
        later = pending.filter(position__gt=after.position).first() or pending.exclude(pk=after.pk).first()
        return later
    return pending.first()


def outputs_of(study: Study) -> QuerySet[Output]:
    return generation.study_outputs(study)
