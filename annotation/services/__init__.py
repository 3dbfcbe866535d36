"""Annotation's services, one module per concern: codebooks and codes, codings, memos, gender attribution,
assignments and code discovery. Views, the API, commands and tasks import them from here."""

from .assignments import (
    create_assignments,
    delete_assignment,
    next_assignment,
    outputs_of,
    reassign_assignment,
    set_assignment_status,
)
from .attribution import (
    set_gender_attribution,
)
from .code_discovery import (
    STALE_DISCOVERY_SECONDS,
    decide_suggestion,
    run_discovery,
    start_discovery,
)
from .codebooks import (
    CODE_FIELDS,
    CODEBOOKS,
    clean_codebook_name,
    codebook_tree,
    create_code,
    create_code_from_selection,
    create_codebook,
    import_codebook,
    latest_operation,
    merge_codes,
    move_codes,
    split_code,
    undo_operation,
    update_code,
)
from .codings import (
    assignment_for,
    check_can_code,
    check_can_edit_coding,
    create_coding,
    delete_coding,
    reassign_coding,
    study_role,
    visible_codings,
)
from .errors import (
    AnnotationError,
)
from .memos import (
    add_memo,
    delete_memo,
    update_memo,
)

__all__ = [
    "create_assignments",
    "delete_assignment",
    "next_assignment",
    "outputs_of",
    "reassign_assignment",
    "set_assignment_status",
    "set_gender_attribution",
    "STALE_DISCOVERY_SECONDS",
    "decide_suggestion",
    "run_discovery",
    "start_discovery",
    "CODE_FIELDS",
    "CODEBOOKS",
    "clean_codebook_name",
    "codebook_tree",
    "create_code",
    "create_code_from_selection",
    "create_codebook",
    "import_codebook",
    "latest_operation",
    "merge_codes",
    "move_codes",
    "split_code",
    "undo_operation",
    "update_code",
    "assignment_for",
    "check_can_code",
    "check_can_edit_coding",
    "create_coding",
    "delete_coding",
    "reassign_coding",
    "study_role",
    "visible_codings",
    "AnnotationError",
    "add_memo",
    "delete_memo",
    "update_memo",
]
