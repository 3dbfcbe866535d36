"""Assignments of stories to coders: planning, status, reassignment, the coding queue."""

from django.db import IntegrityError, transaction
from django.db.models import Max
from django.utils import timezone

from generation import selectors as generation
from stereoscope.models import Role
from stereoscope.permissions import has_role
from stereoscope.services import record_activity

from ..assigning import plan_assignments
from ..models import (
    Assignment,
    AssignmentStatus,
    CodingMode,
)
from .errors import AnnotationError, _to_int

# --- assignments --------------------------------------------------------------------------------------


@transaction.atomic
def create_assignments(
    study, codebook, *, outputs, coders, k=1, strategy="random_balanced", seed=0, mode=CodingMode.BLIND, actor=None
):
    """Assign outputs to coders; returns the new Assignments. Existing ones count toward k and stay."""
    from ..assigning import AssignmentPlanError

    if codebook.study_id != study.pk:
        raise AnnotationError(f"No codebook {codebook.pk} in this study.")
    if mode not in CodingMode.values:
        raise AnnotationError("Mode must be blind or consensus.")
    coders = list(coders)
    for coder in coders:
        if not has_role(coder, study, Role.CODER):
            raise AnnotationError(f"{coder.username} is not a coder in this study.")
    rows = list(outputs.filter(study=study).values_list("pk", "model_name", "item__number"))
    if not rows:
        raise AnnotationError("No stories to assign.")
    existing = {}
    for output_id, coder_id in Assignment.objects.filter(
        codebook=codebook, output_id__in=[r[0] for r in rows]
    ).values_list("output_id", "coder_id"):
        existing.setdefault(output_id, set()).add(coder_id)
    try:
        plan = plan_assignments(
            rows,
            [c.pk for c in coders],
            k=_to_int(k, "k") or 0,
            strategy=strategy,
            seed=_to_int(seed, "Seed") or 0,
            existing=existing,
        )
    except AssignmentPlanError as exc:
        raise AnnotationError(str(exc)) from None
    positions = dict(
        Assignment.objects.filter(codebook=codebook)
        .values("coder_id")
        .annotate(m=Max("position"))
        .values_list("coder_id", "m")
    )
    new = []
    for output_id, coder_id in plan:
        positions[coder_id] = (positions.get(coder_id) or 0) + 1
        new.append(
            Assignment(
                study=study,
                codebook=codebook,
                output_id=output_id,
                coder_id=coder_id,
                mode=mode,
                position=positions[coder_id],
            )
        )
    Assignment.objects.bulk_create(new, batch_size=2000)
    record_activity(study, actor, "assigned stories", f"{len(new)} assignments ({strategy}, k={k}) in {codebook}")
    return new


@transaction.atomic
def set_assignment_status(assignment, *, user, done):
    if assignment.coder_id != user.pk and not has_role(user, assignment.study, Role.RESEARCHER):
        raise AnnotationError("That assignment belongs to another coder.")
    assignment.status = AssignmentStatus.DONE if done else AssignmentStatus.PENDING
    assignment.completed_at = timezone.now() if done else None
    assignment.save(update_fields=["status", "completed_at"])
    return assignment


@transaction.atomic
def reassign_assignment(assignment, *, coder, actor=None):
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


def delete_assignment(assignment, *, actor=None):
    record_activity(
        assignment.study, actor, "removed assignment", f"{assignment.output_id} from {assignment.coder.username}"
    )
    assignment.delete()


def next_assignment(codebook, coder, after=None):
    """The coder's next pending assignment (after `after` in queue order, wrapping around)."""
    pending = Assignment.objects.filter(codebook=codebook, coder=coder, status=AssignmentStatus.PENDING).order_by(
        "position", "id"
    )
    if after is not None:
        later = pending.filter(position__gt=after.position).first() or pending.exclude(pk=after.pk).first()
        return later
    return pending.first()


def outputs_of(study):
    return generation.study_outputs(study)
