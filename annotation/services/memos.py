"""Memos on codings, codes and stories."""

from typing import Any

from django.db import transaction

from stereoscope.models import Role, Study
from stereoscope.permissions import has_role
from stereoscope.untrusted import MAX_MEMO_TEXT, too_long

from ..models import Code, Coding, Memo
from .errors import AnnotationError

# --- memos -------------------------------------------------------------------------------------------


@transaction.atomic
def add_memo(
    study: Study,
    *,
    author: Any,
    text: str | None,
    coding: Coding | None = None,
    code: Code | None = None,
    output: Any = None,
) -> Memo:
    text = (text or "").strip()
    if not text:
        raise AnnotationError("A memo needs some text.")
    if too_long(text, MAX_MEMO_TEXT, "The memo"):
        raise AnnotationError(too_long(text, MAX_MEMO_TEXT, "The memo"))
    targets = [t for t in (coding, code, output) if t is not None]
    if len(targets) != 1:
        raise AnnotationError("A memo belongs to exactly one coding, code or story.")
    if not has_role(author, study, Role.CODER):
        raise AnnotationError("Only members who code can write memos.")
    if coding is not None:
        if coding.codebook.study_id != study.pk:
            raise AnnotationError(f"No coding {coding.pk} in this study.")
        if coding.coder_id != author.pk and not has_role(author, study, Role.RESEARCHER):
            raise AnnotationError("You can only write memos on your own codings.")
    if code is not None and code.codebook.study_id != study.pk:
        raise AnnotationError(f"No code {code.pk} in this study.")
    if output is not None and output.study_id != study.pk:
        raise AnnotationError(f"No story {output.pk} in this study.")
    return Memo.objects.create(study=study, author=author, text=text, coding=coding, code=code, output=output)


@transaction.atomic
def update_memo(memo: Memo, *, user: Any, text: str | None) -> Memo:
    if memo.author_id != user.pk:
        raise AnnotationError("You can only edit your own memos.")
    text = (text or "").strip()
    if not text:
        raise AnnotationError("A memo needs some text.")
    if too_long(text, MAX_MEMO_TEXT, "The memo"):
        raise AnnotationError(too_long(text, MAX_MEMO_TEXT, "The memo"))
    memo.text = text
    memo.save(update_fields=["text", "updated_at"])
    return memo


def delete_memo(memo: Memo, *, user: Any) -> None:
    if memo.author_id != user.pk and not has_role(user, memo.study, Role.ADMIN):
        raise AnnotationError("You can only delete your own memos.")
    memo.delete()
