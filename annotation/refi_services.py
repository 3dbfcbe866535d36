"""REFI-QDA for a study: export a .qdpx project, import .qdpx projects and .qdc codebooks.

Export: coders (and memo authors) and LLM judges are Users; codebooks are nested Codes with dimensions
non-codable; stories are TextSources with VariableValues (model, item, dimension, trial, ...); span codings are
PlainTextSelection + Coding, document codings are Codings under the TextSource; memos are Notes. GUIDs come from
the guid fields, or are uuid5-derived from stable ids, so they are the same in every export.

Import: the whole file is parsed and checked first (annotation.refi_qda), then applied in one transaction.
"""

import re
import uuid
from collections import defaultdict
from itertools import chain

from django.contrib.auth import get_user_model
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

import stereoscope
from generation.datasets import filtered_outputs
from generation.runs.collect import ImportedRow, import_texts
from stereoscope.datasets import iso_datetime, query_batches, uuid_text
from stereoscope.models import Role
from stereoscope.providers import provider
from stereoscope.services import ensure_member, record_activity
from stereoscope.untrusted import whole_number

from . import codebook_format as fmt
from . import refi_qda as rq
from . import services as annotation_services
from .datasets import CodeIndex, _Cursor
from .models import Assignment, Codebook, Coding, GenderAttribution, Memo
from .selectors import code_tree

JUDGE_GROUP_GUID = rq.stable_guid("judge-verdicts")
SELECTION_SALT = 0x5E1EC7  # selection GUID = coding GUID XOR this: stable and distinct
XSD_DATETIME = 'YYYY-MM-DD"T"HH24:MI:SS"Z"'
RGB_RE = re.compile(r"^#([0-9a-fA-F]{6}|[0-9a-fA-F]{3})$")
VARIABLES = [
    ("model", "Text"),
    ("endpoint", "Text"),
    ("run", "Text"),
    ("item", "Integer"),
    ("dimension", "Text"),
    ("target_stereotype", "Text"),
    ("trial", "Integer"),
    ("variant", "Text"),
    ("gender_attribution", "Text"),
]
VARIABLE_NAMES = [name for name, _ in VARIABLES]


def user_guid(pk):
    return rq.stable_guid("user", pk)


def output_guid(output_id, external_id=""):
    return rq.normalise_guid(external_id) or rq.stable_guid("output", output_id)


def _code_description(code):
    """The description plus codebook_format's "[stereoscope] key=value" line (shortcut, stereotype, item link)."""
    meta = fmt._meta_line(
        {
            "shortcut": code.shortcut,
            "stereotype": code.stereotype,
            "item_number": code.item.number if code.item_id else None,
            "frequency_reference": code.frequency_reference,
        }
    )
    text = code.description or ""
    return f"{text}\n{meta}" if meta and text else (meta or text)


def _tag_sets(index, code_pks):
    """Gender tags and the inductive flag as REFI-QDA Sets, named as in codebook_format's .qdc files."""
    members = {label: [] for label in list(fmt.GENDER_SETS.values()) + [fmt.INDUCTIVE_SET]}
    for pk in code_pks:
        row = index.codes[pk]
        if row[5] in fmt.GENDER_SETS:
            members[fmt.GENDER_SETS[row[5]]].append(str(row[13]))
        if row[6] == "inductive":
            members[fmt.INDUCTIVE_SET].append(str(row[13]))
    return [
        rq.QSet(guid=rq.stable_guid("set", label), name=label, code_guids=guids)
        for label, guids in members.items()
        if guids
    ]


class _VariableValues:
    """A story's VariableValues as XML, each (variable, value) escaped once: values repeat (models, items, ...)."""

    def __init__(self, var_guid):
        self.var_guid, self.kinds, self.done = var_guid, dict(VARIABLES), {}

    def __call__(self, values):
        parts = []
        for name, value in zip(VARIABLE_NAMES, values, strict=True):
            text = self.done.get((name, value))
            if text is None:
                text = self.done[name, value] = rq.variable_value_xml(self.var_guid[name], self.kinds[name], value)
            parts.append(text)
        return "".join(parts)


def _codings_xml(rows, code_guids, user_guids, coding_notes):
    """One story's codings as XML: (span selections, document codings), each in the rows' order."""
    spans, documents = [], []
    for _, coding_pk, coding_guid, code_id, coder_id, start, end, coded_at in rows:
        coding_guid = str(coding_guid)
        coded_at = rq._dt(coded_at)
        notes = rq.note_refs(coding_notes[coding_pk]) if coding_pk in coding_notes else ""
        if start is None:
            documents.append(rq.coding_xml(coding_guid, code_guids[code_id], user_guids[coder_id], coded_at, notes))
        else:
            spans.append(
                rq.span_coding_xml(
                    rq.derived_guid(coding_guid, SELECTION_SALT),
                    start,
                    end,
                    coding_guid,
                    code_guids[code_id],
                    user_guids[coder_id],
                    coded_at,
                    notes,
                )
            )
    return spans, documents


def _verdicts_xml(rows, judge_codes, judge_users):
    """One story's judge verdicts as document Codings (verdicts below a round's threshold have no code)."""
    return [
        rq.coding_xml(rq.stable_guid("verdict", verdict_pk), code_guid, judge_users[judge_model], rq._dt(updated))
        for _, round_id, judge_model, value, verdict_pk, updated in rows
        if (code_guid := judge_codes.get((round_id, value)))
    ]


# --- export -------------------------------------------------------------------------------------------------

# What an export manifest notes about a .qdpx (the exports app writes the manifest into the archive).
QDPX_MANIFEST_NOTES = {
    "schema": "QDA-XML 1.0 (Project.xsd, 2019-03-18)",
    "offsets": "Unicode code points, line endings \\n",
    "judge_code_group": JUDGE_GROUP_GUID,
}


def _rows(queryset, size):
    """A values_list queryset's rows, the next batch read while this one is written (query_batches)."""
    return chain.from_iterable(query_batches(queryset, size))


def _rows_read_ahead(queryset, size):
    return _Cursor(_rows(queryset, size))


def export_qdpx(study, target, *, options, progress=None, finish=None):
    """Write the study's .qdpx project to `target`. Returns the row counts (sources, codings, ...). `finish(counts)`
    may return more members for the archive (refi_qda.write_qdpx)."""
    index = CodeIndex(study)
    outputs = filtered_outputs(study, options)
    codings = Coding.objects.filter(output__in=outputs)
    if options.get("code_ids"):
        codings = codings.filter(code_id__in=index.with_descendants(options["code_ids"]))
    used = set(codings.order_by().values_list("code_id", "coder_id").distinct())  # one read of the codings for both
    used_codes = {code for code, _ in used}
    used_books = {index.codes[c][7] for c in used_codes}
    books = sorted(used_books or {row[7] for row in index.codes.values()})

    def person_of(pk, name):
        if options.get("pseudonymise"):
            name = options["pseudonym"](pk)
            return rq.stable_guid("pseudonym", name), name
        return user_guid(pk), name

    users = {}
    coders = (
        get_user_model()
        .objects.filter(pk__in={coder for _, coder in used})
        .order_by("pk")
        .values_list("pk", "username", "first_name", "last_name")
    )
    for pk, username, first, last in coders:
        users[pk] = person_of(pk, display_name(username, first, last))
    memos = list(Memo.objects.filter(study=study).select_related("author").order_by("pk"))
    for memo in memos:
        author = memo.author
        users.setdefault(
            memo.author_id,
            person_of(memo.author_id, display_name(author.username, author.first_name, author.last_name)),
        )
    q_users = [rq.QUser(guid=g, name=n) for g, n in users.values()]

    # memos: coding / code / output -> note guids
    notes_by = {"coding": defaultdict(list), "code": defaultdict(list), "output": defaultdict(list)}
    q_notes = []
    for memo in memos:
        target_kind, key = (
            ("coding", memo.coding_id)
            if memo.coding_id
            else ("code", memo.code_id)
            if memo.code_id
            else ("output", memo.output_id)
        )
        notes_by[target_kind][key].append(str(memo.guid))
        q_notes.append(
            rq.QNote(
                guid=str(memo.guid),
                name=memo.text[:60].replace("\n", " "),
                text=memo.text,
                user_guid=users[memo.author_id][0],
                created=memo.created_at,
            )
        )

    # the codebook tree (inactive merged-away codes only when something still points at them)
    def keep(code):
        return code.active or code.pk in used_codes or code.has_children

    def q_code(code):
        return rq.QCode(
            guid=str(code.guid),
            name=code.name,
            codable=code.codable,
            color=code.color if RGB_RE.match(code.color or "") else None,
            description=_code_description(code),
            children=[q_code(child) for child in code.child_nodes],
            note_guids=notes_by["code"].get(code.pk, []),
        )

    q_codes = []
    for book in books:
        roots = [q_code(code) for code in code_tree(book, keep=keep)]
        if len(books) == 1:
            q_codes.extend(roots)
        else:
            codebook = Codebook.objects.get(pk=book)
            q_codes.append(
                rq.QCode(
                    guid=str(codebook.guid),
                    name=f"{codebook.name} v{codebook.version}",
                    codable=False,
                    description=codebook.description,
                    children=roots,
                )
            )

    # judges: users named after their model, codes under a non-codable group
    judge_codes, judge_users, verdict_rows = {}, {}, None
    judging = provider("judging")  # judging's selectors, when installed (annotation does not import judging)
    if judging is not None:
        rounds = judging.study_rounds(study, options.get("round_ids"))
        verdicts = judging.ok_verdicts(rounds, outputs)
        if rounds and verdicts.exists():
            group = rq.QCode(
                guid=JUDGE_GROUP_GUID,
                name="LLM judge verdicts",
                codable=False,
                description="Verdicts of LLM judges (one code per round and value); not a human code.",
            )
            for rnd in rounds:
                template = rnd.template
                threshold = getattr(template, "detect_threshold", 1)
                values = sorted(set(verdicts.filter(round=rnd, value__gte=threshold).values_list("value", flat=True)))
                if not values:
                    continue
                round_code = rq.QCode(
                    guid=rq.stable_guid("judge-round", rnd.pk),
                    name=rnd.name,
                    codable=False,
                    description=f"Template {template.name} v{template.version} ({template.kind}).",
                )
                for value in values:
                    label = "stereotype detected" if template.scale_max == 1 else f"score {value}"
                    code = rq.QCode(guid=rq.stable_guid("judge-round", rnd.pk, value), name=label)
                    round_code.children.append(code)
                    judge_codes[(rnd.pk, value)] = code.guid
                group.children.append(round_code)
            if group.children:
                q_codes.append(group)
                for model in sorted(set(verdicts.values_list("judge_model", flat=True))):
                    judge_users[model] = rq.stable_guid("judge", model)
                    q_users.append(rq.QUser(guid=judge_users[model], name=model))
                verdict_rows = (
                    verdicts.filter(value__gte=0)
                    .order_by("output_id")
                    .values_list("output_id", "round_id", "judge_model", "value", "pk", "updated_at")
                )

    variables = [rq.QVariable(guid=rq.stable_guid("variable", name), name=name, type=kind) for name, kind in VARIABLES]
    var_guid = {v.name: v.guid for v in variables}

    def sources():
        """RenderedSources: each story's XML written in one pass from the query's tuples (no objects per coding;
        variable values, users and codes escaped or looked up once per distinct value)."""
        coding_cursor = _rows_read_ahead(
            codings.order_by("output_id", "start", "pk")
            .annotate(guid_text=uuid_text("guid"), created_text=iso_datetime("created_at", XSD_DATETIME))
            .values_list("output_id", "pk", "guid_text", "code_id", "coder_id", "start", "end", "created_text"),
            10000,
        )
        code_guids = {pk: str(row[13]) for pk, row in index.codes.items()}
        user_guids = {pk: guid for pk, (guid, _) in users.items()}
        coding_notes = notes_by["coding"]
        output_notes = notes_by["output"]
        verdict_cursor = _rows_read_ahead(verdict_rows, 10000) if verdict_rows is not None else None
        gender_cursor = _rows_read_ahead(
            GenderAttribution.objects.filter(output__in=outputs)
            .order_by("output_id")
            .values_list("output_id", "gender"),
            10000,
        )
        values_xml = _VariableValues(var_guid)

        story_rows = _rows(
            outputs.order_by("pk")
            .annotate(created_text=iso_datetime("created_at", XSD_DATETIME))
            .values_list(
                "pk",
                "text",
                "model_name",
                "endpoint__name",
                "run__name",
                "item__number",
                "item__dimension__name",
                "item__target_stereotype",
                "trial",
                "variant_key",
                "external_id",
                "created_text",
            ),
            2000,
        )
        for (
            pk,
            text,
            model,
            endpoint,
            run_name,
            number,
            dimension,
            target,
            trial,
            variant,
            external_id,
            created,
        ) in story_rows:
            guid = output_guid(pk, external_id)
            name = f"{model} · item {number if number is not None else '-'} · trial {trial} · #{pk}"
            spans, documents = _codings_xml(coding_cursor.take(pk), code_guids, user_guids, coding_notes)
            spans.insert(0, rq.source_open_xml(guid, name, None, created))
            n_spans = len(spans) - 1
            if verdict_cursor is not None:
                documents.extend(_verdicts_xml(verdict_cursor.take(pk), judge_codes, judge_users))
            genders = sorted({g[1] for g in gender_cursor.take(pk)})
            gender = genders[0] if len(genders) == 1 else ("disagree" if genders else None)
            spans.extend(documents)
            if pk in output_notes:
                spans.append(rq.note_refs(output_notes[pk]))
            spans.append(values_xml((model, endpoint, run_name, number, dimension, target, trial, variant, gender)))
            spans.append("</TextSource>\n")
            yield rq.RenderedSource(guid, text or "", "".join(spans), n_spans, n_spans + len(documents))

    exported_codes = {pk for pk, row in index.codes.items() if row[7] in books}
    project = rq.QProject(
        name=study.name,
        origin=f"Stereoscope {stereoscope.__version__}",
        users=q_users,
        codes=q_codes,
        variables=variables,
        sources=sources(),
        notes=q_notes,
        created=timezone.now(),
        description=study.description,
        sets=_tag_sets(index, exported_codes),
    )

    def report(counts):
        if progress:
            progress(
                {
                    "dataset": "qdpx",
                    "rows": counts["sources"],
                    "total": total,
                    "percent": min(99, round(100 * counts["sources"] / total)) if total else None,
                }
            )

    total = outputs.count()
    return rq.write_qdpx(target, project, progress=report, finish=finish)


def export_qdc(study, codebook):
    """The codebook as a .qdc (codebook_format, the annotation app's own writer)."""
    return fmt.tree_to_qdc(
        annotation_services.codebook_tree(codebook), origin=f"Stereoscope: {codebook.name} v{codebook.version}"
    )


# --- import -------------------------------------------------------------------------------------------------


def _code_tree(project, name, skip):
    """The file's codes as codebook_format's normalised tree (gender and inductive flag from the Sets, the rest
    from the "[stereoscope]" description line when a Stereoscope file carries one)."""
    labels = defaultdict(set)
    for q_set in project.sets:
        for guid in q_set.code_guids:
            labels[guid].add(q_set.name)

    def node(q_code):
        description, meta = fmt._split_meta(q_code.description or "")
        tags = labels.get(q_code.guid, set())
        return {
            "guid": q_code.guid,
            "name": q_code.name,
            "codable": q_code.codable,
            "color": q_code.color or "",
            "description": description,
            "kind": "inductive" if fmt.INDUCTIVE_SET in tags else "a_priori",
            "gender_tag": next((g for g, label in fmt.GENDER_SETS.items() if label in tags), ""),
            "shortcut": meta.get("shortcut", ""),
            "stereotype": meta.get("stereotype", ""),
            "frequency_reference": meta.get("frequency_reference") or None,
            "children": [node(child) for child in q_code.children if child.guid not in skip],
        }

    return {"name": name, "description": "", "codes": [node(c) for c in project.codes if c.guid not in skip]}


def _create_codebook(study, project, *, name, actor, skip):
    """Create the codebook through the annotation service; returns (codebook, {file guid: Code})."""
    try:
        tree = fmt.validate_tree(_code_tree(project, (name or "Imported codebook")[:200], skip))
    except fmt.CodebookFormatError as exc:
        raise rq.RefiError([f"CodeBook: {error}" for error in exc.errors]) from None
    try:
        codebook = annotation_services.import_codebook(study, tree, created_by=actor)
    except annotation_services.AnnotationError as exc:
        raise rq.RefiError(f"CodeBook: {exc}") from None
    created = list(codebook.codes.order_by("order", "pk"))  # the service creates codes in document order
    file_guids = [n["guid"] for n, _, _ in fmt.walk(tree["codes"])]
    return codebook, dict(zip(file_guids, created, strict=True))


def _taken_guids(model, guids):
    """Which of these GUIDs the table already holds (checked in chunks, not one query per row)."""
    guids = [g for g in dict.fromkeys(guids) if g]
    taken = set()
    for i in range(0, len(guids), 2000):
        taken.update(str(g) for g in model.objects.filter(guid__in=guids[i : i + 2000]).values_list("guid", flat=True))
    return taken


def _free_guid(guid, taken):
    """Keep another tool's GUID when it is free in this database (and this file), else mint a new one."""
    if guid and guid not in taken:
        taken.add(guid)
        return guid
    fresh = str(uuid.uuid4())
    taken.add(fresh)
    return fresh


def display_name(username, first_name="", last_name=""):
    """The name a REFI-QDA file carries for a user: the full name as given, else the username."""
    return f"{first_name} {last_name}".strip() or username


def _named(name):
    """Accounts whose username or display name is `name`."""
    first, _, last = (name or "").partition(" ")
    return get_user_model().objects.filter(
        Q(username=name) | Q(first_name=name, last_name="") | Q(first_name=first, last_name=last)
    )


def _username_for(name, taken_names):
    User = get_user_model()
    base = re.sub(r"[^\w.@+-]+", "_", name or "").strip("_")[:120] or "coder"
    candidate, n = base, 1
    while candidate in taken_names or User.objects.filter(username=candidate).exists():
        n += 1
        candidate = f"{base}-{n}"
    taken_names.add(candidate)
    return candidate


def _resolve_users(study, q_users, used_guids):
    """File users -> accounts. A GUID that is our own export of an existing account maps back to it; anyone else
    becomes a new account (no usable password) that is a coder in this study."""
    User = get_user_model()
    result, created, taken = {}, [], set()
    for q_user in q_users:
        if q_user.guid not in used_guids:
            continue
        match = next((u for u in _named(q_user.name) if user_guid(u.pk) == q_user.guid), None)
        if match is not None:  # our own export of an existing account
            result[q_user.guid] = match
            continue
        # the username must be a valid one; the name is kept as given, as the account's full name
        user = User(
            username=_username_for(q_user.name, taken), first_name=(q_user.name or "").strip()[:150], is_active=True
        )
        user.set_unusable_password()
        user.save()
        ensure_member(study=study, user=user, role=Role.CODER)
        result[q_user.guid] = user
        created.append(user.username)
    return result, created


VARIABLE_FIELDS = {"model": "model_name", "trial": "trial"}


def _imported_rows(project, var_names):
    """(an ImportedRow per source, {row number: (source, its variables)}): a source's model and trial from its
    variables. RefiError when a model variable is longer than an output's model name may be."""
    texts, source_of, too_long = [], {}, []
    for number, source in enumerate(project.sources, start=1):
        values = {var_names[g]: v for g, v in source.variables}
        trial = whole_number(values.get("trial"))
        model = values.get("model") or "imported"
        if len(model) > 300:  # the output's model name has 300 characters: said, not cut short
            too_long.append(f"Source {source.name or source.guid}: its model variable is longer than 300 characters.")
        row = ImportedRow(
            row=number,
            model=model,
            item=None,
            prompt="",
            slot_values={},
            variant_key="",
            trial=1 if trial is None else trial,  # a number in the variable, else 1
            text=source.text,
            external_id=source.guid,
            extra=None,
        )
        source_of[number] = (source, values)
        texts.append(row)
    if too_long:
        raise rq.RefiError(too_long)
    return texts, source_of


@transaction.atomic
def _apply_project(study, project, *, filename, actor):
    judge_guids = set()
    for code in project.codes:
        if code.guid == JUDGE_GROUP_GUID:
            judge_guids = {c.guid for c, _ in code.walk()}
    codebook, codes = _create_codebook(study, project, name=project.name or filename, actor=actor, skip=judge_guids)
    used_users = {
        c.user_guid
        for s in project.sources
        for c in s.codings + [x for sel in s.selections for x in sel.codings]
        if c.code_guid not in judge_guids
    } | {n.user_guid for n in project.notes}
    users, created_users = _resolve_users(study, project.users, used_users)
    fallback = []

    def who(guid):
        if guid in users:
            return users[guid]
        if actor is not None:
            return actor
        if not fallback:  # no creatingUser and nobody acting (command line): one placeholder account
            placeholder, _ = _resolve_users(study, [rq.QUser(guid="anonymous", name="refi-import")], {"anonymous"})
            fallback.append(placeholder["anonymous"])
            created_users.append(fallback[0].username)
        return fallback[0]

    var_names = {v.guid: v.name for v in project.variables}
    coding_rows, note_targets, skipped_judge = [], defaultdict(list), 0
    coder_outputs = set()
    taken_guids = _taken_guids(
        Coding,
        [c.guid for s in project.sources for c in s.codings]
        + [c.guid for s in project.sources for sel in s.selections for c in sel.codings],
    )
    now = timezone.now()
    texts, source_of = _imported_rows(project, var_names)

    def provenance(row):
        source, values = source_of[row.row]
        return {"source": "refi-qda", "file": filename, "name": source.name, "guid": source.guid, "variables": values}

    run, outputs = import_texts(
        study, texts, run_name=f"REFI-QDA import: {filename}", actor=actor, source=filename, provenance=provenance
    )
    for source, output in zip(project.sources, outputs, strict=True):
        for note in source.note_guids:
            note_targets[note].append(("output", output))
        spans = [(sel, c) for sel in source.selections for c in sel.codings] + [(None, c) for c in source.codings]
        for sel, q_coding in spans:
            if q_coding.code_guid in judge_guids:
                skipped_judge += 1
                continue
            coder = who(q_coding.user_guid or (sel.user_guid if sel else None))
            coding = Coding(
                output=output,
                code=codes[q_coding.code_guid],
                coder=coder,
                codebook=codebook,
                start=sel.start if sel else None,
                end=sel.end if sel else None,
                quote=source.text[sel.start : sel.end] if sel else "",
                guid=_free_guid(q_coding.guid, taken_guids),
                created_at=q_coding.created or now,
            )
            coding_rows.append(coding)
            coder_outputs.add((coder.pk, output.pk))
            for note in q_coding.note_guids + (sel.note_guids if sel else []):
                note_targets[note].append(("coding", coding))
    Coding.objects.bulk_create(coding_rows, batch_size=2000)
    for q_code in project.all_codes():
        code = codes.get(q_code[0].guid)
        for note in q_code[0].note_guids:
            if code is not None:
                note_targets[note].append(("code", code))
    memos, unattached = [], 0
    memo_guids = _taken_guids(Memo, [n.guid for n in project.notes])
    for note in project.notes:
        targets = note_targets.get(note.guid)
        if not targets:
            unattached += 1
            continue
        for n, (kind, obj) in enumerate(targets):
            guid = note.guid if n == 0 else None
            memos.append(
                Memo(
                    study=study,
                    author=who(note.user_guid),
                    text=note.text or note.name or "(empty note)",
                    created_at=note.created or now,
                    guid=_free_guid(guid, memo_guids),
                    **{kind: obj},
                )
            )
    Memo.objects.bulk_create(memos, batch_size=2000)
    Assignment.objects.bulk_create(
        [
            Assignment(study=study, codebook=codebook, output_id=o, coder_id=c, status="done", completed_at=now)
            for c, o in sorted(coder_outputs)
        ],
        batch_size=2000,
        ignore_conflicts=True,
    )
    report = {
        "codebook_id": codebook.pk,
        "codebook": f"{codebook.name} v{codebook.version}",
        "run_id": run.pk,
        "codes": len(codes),
        "sources": len(project.sources),
        "codings": len(coding_rows),
        "memos": len(memos),
        "users_created": created_users,
        "judge_codings_skipped": skipped_judge,
        "notes_unattached": unattached,
    }
    record_activity(study, actor, "imported a REFI-QDA project", f"{filename}: {len(coding_rows)} codings")
    return report


def import_qdpx(study, data, *, filename="project.qdpx", actor=None):
    """Check the whole file, then import it in one transaction. Raises RefiError (nothing saved) on any problem."""
    project = rq.read_qdpx(data)
    if not project.sources and not project.codes:
        raise rq.RefiError("The project has neither sources nor codes; nothing to import.")
    return _apply_project(study, project, filename=filename, actor=actor)


def import_qdc(study, data, *, filename="codebook.qdc", actor=None):
    """A .qdc codebook through the annotation app's own parser and service."""
    name = filename.rsplit("/", 1)[-1].removesuffix(".qdc") or "Imported codebook"
    try:
        tree = fmt.parse_qdc(data, name=name)
        codebook = annotation_services.import_codebook(study, tree, created_by=actor)
    except fmt.CodebookFormatError as exc:
        raise rq.RefiError([f"the .qdc codebook: {error}" for error in exc.errors]) from None
    except annotation_services.AnnotationError as exc:
        raise rq.RefiError(f"the .qdc codebook: {exc}") from None
    return {
        "codebook_id": codebook.pk,
        "codebook": f"{codebook.name} v{codebook.version}",
        "codes": codebook.codes.count(),
    }


def import_file(study, data, *, filename, actor=None):
    """Dispatch on the file: a ZIP is a .qdpx, XML is a .qdc."""
    if data[:2] == b"PK":
        return import_qdpx(study, data, filename=filename, actor=actor)
    if filename.lower().endswith(".qdpx"):
        raise rq.RefiError("The file is not a .qdpx: it is not a ZIP archive.")
    return import_qdc(study, data, filename=filename, actor=actor)
