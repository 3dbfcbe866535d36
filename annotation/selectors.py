"""Reads for analyses and pages: analysis units (code or dimension level), frequency tables, coding rows."""

from django.db import connection
from django.db.models import Count, Exists, OuterRef, Q
from django.urls import reverse

from stereoscope.models import Role
from stereoscope.permissions import role_for
from stereoscope.untrusted import whole_number

from .models import (
    Assignment,
    AssignmentPlan,
    AssignmentStatus,
    Code,
    Codebook,
    Coding,
    CodingMode,
    GenderAttribution,
    Memo,
    QueueProgress,
)

LEVELS = ("code", "dimension")
BREAKDOWNS = {
    "": None,
    "model": "output__model_name",
    "item": "output__item__number",
    "coder": "coder__username",
    "gender_tag": None,
    "dimension": None,
}


# --- blind mode: what a coder may see ---------------------------------------------------------------------------


def is_blind_reader(user, study):
    """Coders see only their own work (and what they share in consensus); researchers, admins and library
    readers see everyone's."""
    return role_for(user, study) == Role.CODER


def _consensus(user, **refs):
    return Exists(
        Assignment.objects.filter(
            coder=user, mode=CodingMode.CONSENSUS, **{field: OuterRef(ref) for field, ref in refs.items()}
        )
    )


def codes_in_consensus(user):
    """Whether `user` has any consensus assignment: one probe of a small partial index. Without one, "what a coder
    may see" is their own work alone, a filter on indexed columns; the consensus OR EXISTS would otherwise be
    evaluated row by row over every coding of the codebook (3 s for 1M codings, issue 36)."""
    return Assignment.objects.filter(coder=user, mode=CodingMode.CONSENSUS).exists()


def visible_codings(user, study, qs=None):
    """The codings `user` may see or count: a coder's own, and everyone's on stories they code in consensus."""
    qs = Coding.objects.filter(codebook__study=study) if qs is None else qs
    if not is_blind_reader(user, study):
        return qs
    if not codes_in_consensus(user):
        return qs.filter(coder=user)
    return qs.filter(Q(coder=user) | _consensus(user, codebook_id="codebook_id", output_id="output_id"))


def visible_memos(user, study, qs=None):
    """The memos `user` may read: a coder's own, and others' only on a story, coding or codebook they code in
    consensus."""
    qs = Memo.objects.filter(study=study) if qs is None else qs
    if not is_blind_reader(user, study):
        return qs
    if not codes_in_consensus(user):
        return qs.filter(author=user)
    return qs.filter(
        Q(author=user)
        | Q(coding__isnull=False) & _consensus(user, codebook_id="coding__codebook_id", output_id="coding__output_id")
        | Q(output__isnull=False) & _consensus(user, output_id="output_id")
        | Q(code__isnull=False) & _consensus(user, codebook_id="code__codebook_id")
    )


def code_tree(codebook, *, active_only=True, keep=None):
    """The codebook's codes as a tree, in one query: the root codes in order (order, then id), each with
    `child_nodes` (its children, in order), `depth` (0 for a root), `has_children` (any child, kept or not) and
    `parent` set from memory (paths and dimensions cost no query); items come along.

    Merged-away (inactive) codes are left out unless `active_only` is False; `keep(code)` decides instead when
    given. A code left out takes its subtree with it. The one tree of the codebook page, the coding workspace, the
    codebook export format and the .qdpx project."""
    codes = list(Code.objects.filter(codebook=codebook).select_related("item").order_by("order", "id"))
    by_id = {c.pk: c for c in codes}
    parents = {c.parent_id for c in codes}
    if keep is None:
        keep = (lambda code: code.active) if active_only else (lambda code: True)
    children = {}
    for code in codes:
        code.parent = by_id.get(code.parent_id)
        code.has_children = code.pk in parents
        if keep(code):
            children.setdefault(code.parent_id, []).append(code)

    def nodes(parent_id, depth):
        for code in children.get(parent_id, []):
            code.depth = depth
            code.child_nodes = list(nodes(code.pk, depth + 1))
            yield code

    return list(nodes(None, 0))


def flat_codes(tree):
    """The codes of a `code_tree` in reading order (each code before its children)."""
    for node in tree:
        yield node
        yield from flat_codes(node.child_nodes)


class CodeIndex:
    """Every code of a codebook in memory (one query): paths, dimensions, merge targets."""

    def __init__(self, codebook):
        self.codes = {c.pk: c for c in Code.objects.filter(codebook=codebook).order_by("order", "id")}
        for code in self.codes.values():
            code.parent = self.codes.get(code.parent_id)

    def dimension(self, code_id):
        code = self.codes.get(code_id)
        return code.dimension() if code else None

    def path(self, code_id):
        return self.codes[code_id].path()

    def resolve(self, code_id):
        """Follow merges to the active code that now stands for `code_id`."""
        seen = set()
        code = self.codes.get(code_id)
        while code is not None and not code.active and code.merged_into_id and code.pk not in seen:
            seen.add(code.pk)
            code = self.codes.get(code.merged_into_id)
        return code

    def unit(self, code_id, level):
        """The analysis unit of a code: the code itself, or its dimension (None when it has no dimension)."""
        if level == "dimension":
            return self.dimension(code_id)
        return self.codes.get(code_id)


def analysis_units(codebook, level="code"):
    """{code_id: (unit key, unit label)} for agreement or frequencies at code or dimension level."""
    if level not in LEVELS:
        raise ValueError(f"level must be one of {LEVELS}")
    index = CodeIndex(codebook)
    result = {}
    for code_id in index.codes:
        unit = index.unit(code_id, level)
        result[code_id] = (unit.pk, unit.path()) if unit else (None, "(no dimension)")
    return result


def frequency_table(codebook, *, level="code", by="", coder_ids=None, user=None):
    """Counts of codings per code (or dimension), optionally broken down by model, item, coder, gender tag or dimension.

    Returns {"columns": [breakdown values], "rows": [{"key", "label", "dimension", "gender_tag", "color", "total",
    "stories", "cells": {column: n}, "reference"}], "total": n}.
    """
    if level not in LEVELS:
        raise ValueError(f"level must be one of {', '.join(LEVELS)}")
    if by not in BREAKDOWNS:
        raise ValueError(f"breakdown must be one of {', '.join(k for k in BREAKDOWNS if k)}")
    index = CodeIndex(codebook)
    qs = Coding.objects.filter(codebook=codebook)
    if user is not None:  # a coder in blind mode counts only what they may see
        qs = visible_codings(user, codebook.study, qs)
    if coder_ids:
        qs = qs.filter(coder_id__in=coder_ids)
    field = BREAKDOWNS[by]
    # one pass over the (codebook, code, output) index: codings and distinct stories per code
    per_code = list(
        qs.values("code_id").annotate(n=Count("output_id"), stories=Count("output_id", distinct=True)).order_by()
    )
    stories = {entry["code_id"]: entry["stories"] for entry in per_code}
    if by in ("", "gender_tag", "dimension"):
        counts = per_code  # these breakdowns come from the code itself
    else:
        counts = qs.values("code_id", field).annotate(n=Count("output_id")).order_by()
    rows, columns = {}, set()

    def row_for(code_id):
        unit = index.unit(code_id, level)
        key = unit.pk if unit else None
        if key not in rows:
            dim = index.dimension(code_id)
            rows[key] = {
                "key": key,
                "label": unit.path() if unit else "(no dimension)",
                "name": unit.name if unit else "(no dimension)",
                "dimension": dim.name if dim else "",
                "gender_tag": unit.gender_tag if unit and level == "code" else "",
                "color": unit.color if unit else "#868e96",
                "total": 0,
                "stories": 0,
                "cells": {},
                "reference": unit.frequency_reference if unit and level == "code" else None,
                "order": (dim.order if dim else 10**9, unit.order if unit else 0, key or 0),
            }
        return rows[key]

    for entry in counts:
        row = row_for(entry["code_id"])
        row["total"] += entry["n"]
        if by:
            if by == "gender_tag":
                column = index.codes[entry["code_id"]].gender_tag or "—"
            elif by == "dimension":
                dim = index.dimension(entry["code_id"])
                column = dim.name if dim else "(none)"
            else:
                column = entry[field]
                column = "—" if column in (None, "") else str(column)
            columns.add(column)
            row["cells"][column] = row["cells"].get(column, 0) + entry["n"]
    for code_id, n in stories.items():
        row_for(code_id)["stories"] += n  # at dimension level: story-code pairs, not distinct stories
    if level == "code":
        for code in index.codes.values():
            if code.codable and code.active:
                row_for(code.pk)
    ordered = sorted(rows.values(), key=lambda r: r["order"])
    for row in ordered:
        row.pop("order")

    def sort_key(value):
        number = whole_number(value)
        return (0, number) if number is not None else (1, value)

    return {
        "columns": sorted(columns, key=sort_key),
        "rows": ordered,
        "total": sum(r["total"] for r in ordered),
        "level": level,
        "by": by,
    }


def frequency_table_rows(table):
    """A frequency table as (columns, rows) for the table writer: label, dimension, gender tag, totals, then one
    column per breakdown value."""
    label = "code" if table["level"] == "code" else "dimension"
    columns = [label, "dimension", "gender_tag", "codings", "stories", *table["columns"]]
    rows = [
        {
            **{c: row["cells"].get(c, 0) for c in table["columns"]},
            label: row["label"],
            "dimension": row["dimension"],
            "gender_tag": row["gender_tag"],
            "codings": row["total"],
            "stories": row["stories"],
        }
        for row in table["rows"]
    ]
    return columns, rows


CODING_COLUMNS = [
    "coding_guid",
    "output_id",
    "external_id",
    "run",
    "model",
    "item_number",
    "trial",
    "coder",
    "code_id",
    "code",
    "code_path",
    "dimension",
    "gender_tag",
    "document_level",
    "start",
    "end",
    "quote",
    "memo",
    "created_at",
]


def coding_columns(include_text=False):
    """The columns of `coding_rows` (with the story text when asked)."""
    return ["codebook"] + CODING_COLUMNS + (["story_text"] if include_text else [])


def coding_rows(
    study,
    *,
    codebook=None,
    pseudonym=None,
    include_text=False,
    code_ids=None,
    run_ids=None,
    models=None,
    item_numbers=None,
):
    """One dict per coding (streamed in chunks), with story, coder, code path, offsets and the quoted text."""

    codebooks = [codebook] if codebook is not None else list(Codebook.objects.filter(study=study))
    for cb in codebooks:
        index = CodeIndex(cb)
        qs = (
            Coding.objects.filter(codebook=cb)
            .select_related("output__run", "output__item", "coder")
            .order_by("output_id", "start", "id")
        )
        if code_ids:
            qs = qs.filter(code_id__in=code_ids)
        if run_ids:
            qs = qs.filter(output__run_id__in=run_ids)
        if models:
            qs = qs.filter(output__model_name__in=models)
        if item_numbers:
            qs = qs.filter(output__item__number__in=item_numbers)
        memo_text = {}
        for coding_id, text in Memo.objects.filter(coding__codebook=cb).values_list("coding_id", "text"):
            memo_text.setdefault(coding_id, []).append(text)
        for coding in qs.iterator(chunk_size=5000):
            output = coding.output
            dim = index.dimension(coding.code_id)
            code = index.codes[coding.code_id]
            row = {
                "codebook": str(cb),
                "coding_guid": str(coding.guid),
                "output_id": output.pk,
                "external_id": output.external_id,
                "run": output.run.name,
                "model": output.model_name,
                "item_number": output.item.number if output.item_id else None,
                "trial": output.trial,
                "coder": pseudonym(coding.coder) if pseudonym else coding.coder.username,
                "code_id": code.pk,
                "code": code.name,
                "code_path": code.path(),
                "dimension": dim.name if dim else "",
                "gender_tag": code.gender_tag,
                "document_level": coding.start is None,
                "start": coding.start,
                "end": coding.end,
                "quote": coding.quote,
                "memo": "\n".join(memo_text.get(coding.pk, [])),
                "created_at": coding.created_at.isoformat(),
            }
            if include_text:
                row["story_text"] = output.text
            yield row


def queue_navigation(codebook, coder, assignment=None):
    """The coder's place in their queue for `codebook`, in one query: {"total", "done", "next", "previous"}.

    `total` and `done` are stories assigned and done (QueueProgress, kept by triggers: no count over the queue);
    `next` is the output id of the next pending story after `assignment` in queue order, wrapping around to the
    first (without `assignment`: the first pending story); `previous` the output id of the story before it. Each is
    one probe of the queue indexes, whatever the queue's length. Written as SQL: the ORM took 2-3 ms of CPU to build
    its three subqueries on every open of the workspace, more than the database took to answer."""
    q = connection.ops.quote_name
    queue = (
        f"SELECT {q('output_id')} FROM {q(Assignment._meta.db_table)} WHERE {q('codebook_id')} = %s"
        f" AND {q('coder_id')} = %s"
    )
    pending = f"{queue} AND {q('status')} = %s"
    first = f"ORDER BY {q('position')} ASC, {q('id')} ASC LIMIT 1"
    mine = [codebook.pk, coder.pk]
    if assignment is None:
        nxt, previous = f"({pending} {first})", "NULL"
        params = [*mine, AssignmentStatus.PENDING.value]
    else:
        nxt = f"COALESCE(({pending} AND {q('position')} > %s {first}), ({pending} AND NOT ({q('id')} = %s) {first}))"
        previous = f"({queue} AND {q('position')} < %s ORDER BY {q('position')} DESC, {q('id')} DESC LIMIT 1)"
        params = [*mine, AssignmentStatus.PENDING.value, assignment.position]
        params += [*mine, AssignmentStatus.PENDING.value, assignment.pk, *mine, assignment.position]
    sql = (
        f"SELECT {q('total')}, {q('done')}, {nxt}, {previous} FROM {q(QueueProgress._meta.db_table)}"
        f" WHERE {q('codebook_id')} = %s AND {q('coder_id')} = %s LIMIT 1"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*params, *mine])
        row = cursor.fetchone()
    if row is None:
        return {"total": 0, "done": 0, "next": None, "previous": None}
    return dict(zip(("total", "done", "next", "previous"), row, strict=True))


def progress_by_coder(codebook):
    """[{coder, assigned, done, codings}] for one codebook."""
    rows = {}
    for entry in (
        Assignment.objects.filter(codebook=codebook)
        .values("coder_id", "coder__username", "status")
        .annotate(n=Count("id"))
    ):
        row = rows.setdefault(
            entry["coder_id"],
            {"coder_id": entry["coder_id"], "coder": entry["coder__username"], "assigned": 0, "done": 0, "codings": 0},
        )
        row["assigned"] += entry["n"]
        if entry["status"] == AssignmentStatus.DONE:
            row["done"] += entry["n"]
    for entry in Coding.objects.filter(codebook=codebook).values("coder_id", "coder__username").annotate(n=Count("id")):
        row = rows.setdefault(
            entry["coder_id"],
            {"coder_id": entry["coder_id"], "coder": entry["coder__username"], "assigned": 0, "done": 0, "codings": 0},
        )
        row["codings"] = entry["n"]
    result = sorted(rows.values(), key=lambda r: r["coder"])
    for row in result:
        row["percent"] = round(100 * row["done"] / row["assigned"]) if row["assigned"] else 0
    return result


def progress_by_output(codebook, limit=None):
    """[{output_id, model, item, assigned, done, coders}] for one codebook."""
    rows = {}
    qs = (
        Assignment.objects.filter(codebook=codebook)
        .values_list("output_id", "output__model_name", "output__item__number", "coder__username", "status")
        .order_by("output_id")
    )
    for output_id, model, item, coder, status in qs:
        row = rows.setdefault(
            output_id, {"output_id": output_id, "model": model, "item": item, "assigned": 0, "done": 0, "coders": []}
        )
        row["assigned"] += 1
        row["done"] += status == AssignmentStatus.DONE
        row["coders"].append((coder, status))
    result = list(rows.values())
    return result[:limit] if limit else result


# --- categorical variables ----------------------------------------------------------------------------------


def study_variables(study):
    """Every categorical variable (a group with a scope) in the study's codebooks, newest codebook first."""
    return list(
        Code.objects.filter(codebook__study=study, codable=False, active=True)
        .exclude(variable_scope="")
        .select_related("codebook")
        .order_by("codebook__name", "-codebook__version", "order", "id")
    )


def variable_values(variable):
    """The variable's values (active codes) in order."""
    return list(Code.objects.filter(parent=variable, active=True, codable=True).order_by("order", "id"))


def variable_codings(variable):
    """(output id, coder username, value name) for each story-level value coders gave; a coder's newest wins."""
    rows = (
        Coding.objects.filter(code__parent=variable, code__active=True, start__isnull=True)
        .order_by("output_id", "coder_id", "created_at", "id")
        .values_list("output_id", "coder__username", "code__name")
    )
    latest = {}
    for output_id, coder, value in rows:
        latest[(output_id, coder)] = value
    return [(output_id, coder, value) for (output_id, coder), value in latest.items()]


def variable_span_codings(variable):
    """(output id, coder username, start, end, value name) for each span-level value coders gave, per story in the
    order the spans were made (so a coder's later span can win where two of theirs label the same unit)."""
    return list(
        Coding.objects.filter(code__parent=variable, code__active=True, start__isnull=False)
        .order_by("output_id", "created_at", "id")
        .values_list("output_id", "coder__username", "start", "end", "code__name")
    )


def gender_answers(output_ids):
    """{output id: [coders' subject-gender answers]}."""
    found = {}
    rows = GenderAttribution.objects.filter(output_id__in=list(output_ids)).values_list("output_id", "gender")
    for output_id, answer in rows.order_by("output_id", "id"):
        found.setdefault(output_id, []).append(answer)
    return found


def discovery_counts(requests):
    """Figures of a discovery's requests (with their provider calls loaded): done, failed, pending, percent,
    tokens and cost (at batch prices for answers that came back in a batch)."""
    counts = {"total": len(requests), "done": 0, "failed": 0, "pending": 0, "input_tokens": 0, "output_tokens": 0}
    cost = None
    for r in requests:
        counts[r.status] = counts.get(r.status, 0) + 1
        call = r.provider_call
        if call is not None and call.ok:
            counts["input_tokens"] += call.input_tokens or 0
            counts["output_tokens"] += call.output_tokens or 0
            if call.cost_usd is not None:
                cost = (cost or 0) + call.cost_usd
    counts["cost_usd"] = cost
    finished = counts["done"] + counts["failed"]
    counts["percent"] = round(100 * finished / counts["total"]) if counts["total"] else 0
    return counts


# --- My work: a coder's queues across studies (registered with stereoscope.my_work) -------------------------------


def coder_queues(user, studies):
    """The user's coding queues in `studies` (live studies they belong to): one row per study and codebook, with
    stories done and in all, and where to continue (the next story) or the study's coding page when done."""

    rows = (
        Assignment.objects.filter(coder=user, study__in=studies)
        .values("study_id", "codebook_id", "codebook__name", "codebook__version")
        .annotate(total=Count("id"), done=Count("id", filter=Q(status=AssignmentStatus.DONE)))
        .order_by("study_id", "codebook__name", "codebook_id")
    )
    by_pk = {s.pk: s for s in studies}
    queues = []
    for row in rows:
        study = by_pk.get(row["study_id"])
        if study is None:
            continue
        finished = row["done"] >= row["total"]
        queues.append(
            {
                "study": study,
                "label": f"{row['codebook__name']} v{row['codebook__version']}",
                "done": row["done"],
                "total": row["total"],
                "url": reverse("coding", args=[study.pk])
                if finished
                else reverse("annotation-next", args=[study.pk, row["codebook_id"]]),
            }
        )
    return queues


# --- codebooks, codes and codings as other apps read them --------------------------------------------------------


def study_codebooks(study):
    """The study's codebooks, by name and newest version first."""
    return Codebook.objects.filter(study=study).order_by("name", "-version")


def codebook_in_study(study, codebook_id):
    """The study's codebook `codebook_id`, or None."""
    return Codebook.objects.filter(study=study, pk=codebook_id).first()


def most_coded_codebook(study):
    """The study's codebook with the most codings (the newest on a tie), or None."""
    return Codebook.objects.filter(study=study).annotate(n=Count("codings")).order_by("-n", "-id").first()


def latest_codebook(study, name):
    """The newest version of the study's codebook `name`, or None."""
    return Codebook.objects.filter(study=study, name=name).order_by("-version").first()


def codebook_codes(codebook):
    """The codebook's codes (a queryset to narrow)."""
    return Code.objects.filter(codebook=codebook)


def study_codes(study, code_ids=None):
    """Codes of any of the study's codebooks, optionally only `code_ids`."""
    codes = Code.objects.filter(codebook__study=study)
    return codes.filter(pk__in=code_ids) if code_ids is not None else codes


def codebook_codings(codebook, coder_ids=None):
    """Every coding of the codebook (blind mode does not apply: for analyses over all coders), optionally by coders."""
    codings = Coding.objects.filter(codebook=codebook)
    return codings.filter(coder_id__in=coder_ids) if coder_ids is not None else codings


def codebook_assignments(codebook, status=None, coder_ids=None):
    """The codebook's assignments, optionally of one status and of some coders."""
    assignments = Assignment.objects.filter(codebook=codebook)
    if status is not None:
        assignments = assignments.filter(status=status)
    return assignments.filter(coder_id__in=coder_ids) if coder_ids is not None else assignments


def library_codebooks():
    """Codebooks of the built-in library (recipes fetch built-ins from it)."""
    return Codebook.objects.filter(study__is_library=True)


def assignment_plans(study):
    """The study's recorded assignment plans, oldest first, with their codebook and runs."""
    return (
        AssignmentPlan.objects.filter(study=study)
        .select_related("codebook", "study")
        .prefetch_related("runs")
        .order_by("created_at", "id")
    )


def unplanned_codebook_names(study):
    """Names of the study's codebooks with assignments made before plans were recorded (no AssignmentPlan)."""
    return sorted(
        set(Assignment.objects.filter(study=study, plan__isnull=True).values_list("codebook__name", flat=True))
    )
