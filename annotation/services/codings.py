"""Codings: who may code a story, create (idempotent), reassign, delete, and what a coder may see (blind mode)."""

from django.db import transaction

from stereoscope.models import Role
from stereoscope.permissions import has_role, role_for

from ..models import (
    Assignment,
    Code,
    Coding,
    CodingMode,
    VariableScope,
)
from ..offsets import OffsetError, utf16_to_codepoint, validate_span
from .errors import AnnotationError, _to_int

# --- codings -----------------------------------------------------------------------------------------


def study_role(user, study):

    return role_for(user, study)


def assignment_for(codebook, output, coder):
    # one row at most (unique): ordered by pk, not by the model's ordering, which joins the codebook and the study
    return Assignment.objects.filter(codebook=codebook, output=output, coder=coder).order_by("pk").first()


_UNSET = object()


def check_can_code(study, codebook, output, coder, assignment=_UNSET):
    """Raise AnnotationError unless `coder` may write codings on `output` with `codebook`. `assignment`: the
    coder's assignment of that story when the caller has read it already (None: none)."""
    if codebook.study_id != study.pk:
        raise AnnotationError(f"No codebook {codebook.pk} in this study.")
    if output.study_id != study.pk:
        raise AnnotationError(f"No story {output.pk} in this study.")
    if not has_role(coder, study, Role.CODER):
        raise AnnotationError("Only coders of this study can code.")
    if assignment is _UNSET:
        assignment = assignment_for(codebook, output, coder)
    if has_role(coder, study, Role.RESEARCHER):
        return assignment
    if assignment is None:
        raise AnnotationError("This story is not in your queue for this codebook.")
    return assignment


@transaction.atomic
def create_coding(
    *, study, codebook, output, code, coder, start=None, end=None, offset_unit="codepoint", assignment=_UNSET
):
    """A span coding (code-point offsets, or UTF-16 with offset_unit='utf16') or, without offsets, a document code.
    `assignment`: the coder's assignment of the story, when the caller has it (the workspace)."""
    if assignment is not _UNSET and (
        assignment is not None
        and (assignment.coder_id, assignment.codebook_id, assignment.output_id) != (coder.pk, codebook.pk, output.pk)
    ):
        raise AnnotationError("That assignment is not this coder's for this story.")
    check_can_code(study, codebook, output, coder, assignment)
    if code.codebook_id != codebook.pk:
        raise AnnotationError(f"The code “{code.name}” is not in the codebook “{codebook}”.")
    if not code.active:
        raise AnnotationError(f"The code “{code.name}” was merged into another code.")
    if not code.codable:
        raise AnnotationError(f"“{code.name}” is a dimension or group; choose a code inside it.")
    start, end = _to_int(start, "Start"), _to_int(end, "End")
    text = output.text
    try:
        if offset_unit == "utf16":
            start = None if start is None else utf16_to_codepoint(text, start)
            end = None if end is None else utf16_to_codepoint(text, end)
        elif offset_unit != "codepoint":
            raise AnnotationError("offset_unit must be 'codepoint' or 'utf16'.")
        start, end, quote = validate_span(text, start, end)
    except OffsetError as exc:
        raise AnnotationError(str(exc)) from None
    # idempotent: the same coder, code and span (or whole story) is one coding; the code row's lock makes two
    # identical saves arriving together (a double click, a retried request) wait for each other. The locking read
    # brings the code's parent along (a variable's value replaces the coder's other value of it).
    locked = Code.objects.select_for_update(of=("self",)).select_related("parent").filter(pk=code.pk).first()
    same = Coding.objects.filter(output=output, code=code, coder=coder, codebook=codebook)
    same = same.filter(start__isnull=True) if start is None else same.filter(start=start, end=end)
    existing = same.order_by("pk").first()
    if existing:
        return existing
    _replace_variable_value(locked or code, output, coder, start, end)
    return Coding.objects.create(
        output=output, code=code, coder=coder, codebook=codebook, start=start, end=end, quote=quote
    )


def _replace_variable_value(code, output, coder, start, end, keep=None):
    """A value of a categorical variable replaces the coder's other value of it on the same story (or span)."""
    parent = code.parent
    if parent is None or not parent.variable_scope:
        return
    if parent.variable_scope == VariableScope.STORY and start is not None:
        raise AnnotationError(f"“{parent.name}” takes one value per story; code the whole story.")
    if parent.variable_scope == VariableScope.SPAN and start is None:
        raise AnnotationError(f"“{parent.name}” takes one value per span; select text first.")
    Coding.objects.filter(output=output, coder=coder, code__parent=parent, start=start, end=end).exclude(
        pk=keep
    ).delete()


def check_can_edit_coding(coding, user):
    study = coding.codebook.study
    if coding.coder_id == user.pk and has_role(user, study, Role.CODER):
        return
    if has_role(user, study, Role.RESEARCHER):
        return
    raise AnnotationError("You can only change your own codings.")


@transaction.atomic
def delete_coding(coding, *, user):
    check_can_edit_coding(coding, user)
    coding.delete()


@transaction.atomic
def reassign_coding(coding, code, *, user):
    check_can_edit_coding(coding, user)
    if code.codebook_id != coding.codebook_id:
        raise AnnotationError("Choose a code from the same codebook.")
    if not code.active or not code.codable:
        raise AnnotationError(f"“{code.name}” cannot take codings (merged away, or a dimension/group).")
    _replace_variable_value(code, coding.output, coding.coder, coding.start, coding.end, keep=coding.pk)
    coding.code = code
    coding.save(update_fields=["code", "updated_at"])
    return coding


def visible_codings(codebook, output, user, *, show_all=False, assignment=_UNSET):
    """Codings shown in the workspace: blind → only the user's own; consensus (or show_all) → everyone's."""
    qs = Coding.objects.filter(codebook=codebook, output=output).select_related("code", "coder").order_by("start", "id")
    if assignment is _UNSET:
        assignment = assignment_for(codebook, output, user)
    consensus = assignment is not None and assignment.mode == CodingMode.CONSENSUS
    if not (consensus or show_all):
        qs = qs.filter(coder=user)
    return qs
