"""Export datasets of the annotation app: codings, codes, memos, gender attributions and the wide
analysis-ready table (one row per story, a 0/1 column per code and dimension and a column per judge verdict)."""

import re
from collections import Counter, defaultdict
from itertools import repeat

from django.db.models import Count
from django.utils.text import slugify

from generation.datasets import filtered_outputs
from generation.selectors import outputs_by_id
from generation.subject_gender import resolve
from stereoscope.datasets import Column, iso_datetime, person, query_batches, register_dataset, uuid_text
from stereoscope.providers import provider
from stereoscope.tables import Lookup, expand_columns

from .models import Assignment, Code, Coding, GenderAttribution, Memo

# --- shared helpers -----------------------------------------------------------------------------------------


class CodeIndex:
    """Every code of a study's codebooks in memory (codes are few), with paths and dimensions."""

    def __init__(self, study):
        rows = Code.objects.filter(codebook__study=study).values_list(
            "pk",
            "parent_id",
            "name",
            "codable",
            "active",
            "gender_tag",
            "kind",
            "codebook_id",
            "codebook__name",
            "codebook__version",
            "order",
            "stereotype",
            "item__number",
            "guid",
            "color",
            "description",
            "merged_into_id",
            "shortcut",
            "frequency_reference",
        )
        self.codes = {r[0]: r for r in rows}
        self.children = defaultdict(list)
        for pk, row in self.codes.items():
            self.children[row[1]].append(pk)
        self._paths = {}
        self._dimensions = {}

    def chain(self, pk):
        chain, node, seen = [], pk, set()
        while node is not None and node in self.codes and node not in seen:
            seen.add(node)
            chain.append(node)
            node = self.codes[node][1]
        return list(reversed(chain))

    def path(self, pk):
        if pk not in self._paths:
            self._paths[pk] = "/".join(self.codes[c][2] for c in self.chain(pk))
        return self._paths[pk]

    def dimension(self, pk):
        """The top-level ancestor when it is a non-codable root, else None (as in Code.dimension())."""
        if pk not in self._dimensions:
            root = self.chain(pk)[0]
            self._dimensions[pk] = root if not self.codes[root][3] else None
        return self._dimensions[pk]

    def with_descendants(self, pks):
        result, stack = set(), list(pks)
        while stack:
            pk = stack.pop()
            if pk not in result:
                result.add(pk)
                stack.extend(self.children.get(pk, []))
        return result


def coding_queryset(study, options, index=None):
    qs = Coding.objects.filter(output__in=filtered_outputs(study, options))
    if options.get("code_ids"):
        index = index or CodeIndex(study)
        qs = qs.filter(code_id__in=index.with_descendants(options["code_ids"]))
    return qs


def _people(options):
    cache = {}

    def name(pk, username):
        if pk not in cache:
            cache[pk] = person(options, (pk, username))
        return cache[pk]

    return name


# --- codings ------------------------------------------------------------------------------------------------

CODING_COLUMNS = (
    Column("coding_id", "Stereoscope id of the coding."),
    Column("coding_guid", "Stable REFI-QDA GUID of the coding (the same in .qdpx exports)."),
    Column("output_id", "The coded story (outputs.output_id)."),
    Column("run_id", "Generation run of the story."),
    Column("model", "Model that wrote the story."),
    Column("item_number", "Prompt item number of the story."),
    Column("item_dimension", "Toolkit dimension of the prompt item."),
    Column("trial", "Trial (repetition) number of the story."),
    Column(
        "subject_gender",
        "Gender of the story's subject: F, M or empty (unknown); from the prompt's slots, else "
        "the coders' attributions, else pronouns (as in text measures).",
    ),
    Column("coder", "Coder: username, or a stable pseudonym (P-...) when the export pseudonymises coders."),
    Column("codebook", "Codebook name."),
    Column("codebook_version", "Codebook version."),
    Column("code_id", "Code id."),
    Column("code", "Code name."),
    Column("code_path", "Code path in the codebook tree, 'Dimension/Group/Code'."),
    Column("dimension", "Dimension of the code: its top-level non-codable ancestor (empty when it has none)."),
    Column("gender_tag", "Gender the code is about: F, M or empty."),
    Column("code_kind", "a_priori or inductive."),
    Column("level", "span (a text selection) or document (the whole story)."),
    Column("start", "Span start: code-point index into the story text (0-based, inclusive); empty for document level."),
    Column("end", "Span end: code-point index (exclusive); text[start:end] == quote."),
    Column("quote", "The coded text."),
    Column("memo", "Memos on this coding, joined with ' | '."),
    Column("created_at", "When the coding was made (ISO 8601, UTC)."),
    Column("updated_at", "When it was last changed."),
)


GENDER_BATCH = 2000  # stories resolved at a time


STORY_FIELDS = ("run_id", "model_name", "item__number", "item__dimension__name", "trial")


class _Stories(dict):
    """{output id: (run, model, item number, item dimension, trial, subject gender)} for the coded stories, the
    gender ("F", "M" or "") resolved once per story. Only these answers are kept: a million codings' stories need
    not sit in memory at once. A story coded after they were read (while the export runs) is read when asked for."""

    def __init__(self, outputs):
        super().__init__()
        self.names = {}  # one string object for each model and dimension name, however many stories share it
        self.read(outputs)

    def read(self, outputs):
        """Read these outputs (a queryset of them)."""
        answers = _Cursor(  # the coders' answers in story order, walked beside the stories (no id list per batch)
            GenderAttribution.objects.filter(output__in=outputs)
            .order_by("output_id", "id")
            .values_list("output_id", "gender")
            .iterator(chunk_size=10000)
        )
        names = self.names
        rows = outputs.order_by("pk").values_list("pk", *STORY_FIELDS, "slot_values", "text")
        for pk, run_id, model, number, dimension, trial, slots, text in rows.iterator(chunk_size=GENDER_BATCH):
            gender = resolve(slots, [row[1] for row in answers.take(pk)], text)[0]
            model, dimension = names.setdefault(model, model), names.setdefault(dimension, dimension)
            self[pk] = (run_id, model, number, dimension, trial, gender)

    def __missing__(self, pk):
        self.read(outputs_by_id([pk]))
        return self[pk]


CODING_BATCH = 5000  # codings per column-wise batch


def coding_batches(study, options):
    """The codings dataset in batches of CODING_BATCH rows given column-wise (CODING_COLUMNS order): a story's six
    columns, the coder's and a code's eight are `Lookup`s (a key per row, each key's cells formatted once); the
    next batch is fetched while this one is formatted."""
    index = CodeIndex(study)
    name = _people(options)
    memos = defaultdict(list)
    for coding_id, text in (
        Memo.objects.filter(study=study, coding__isnull=False).order_by("pk").values_list("coding_id", "text")
    ):
        memos[coding_id].append(text)
    memo_text = {pk: " | ".join(texts) for pk, texts in memos.items()}
    qs = (
        coding_queryset(study, options, index)
        .order_by("output_id", "pk")
        .annotate(
            guid_text=uuid_text("guid"),
            created_text=iso_datetime("created_at"),
            updated_text=iso_datetime("updated_at"),
        )
        .values_list(
            "pk",
            "guid_text",
            "output_id",
            "coder_id",
            "coder__username",
            "code_id",
            "start",
            "end",
            "quote",
            "created_text",
            "updated_text",
        )
    )
    codes = _CodeFields(index)  # code id -> (codebook, version, code id, name, path, dimension, gender tag, kind)
    coders = _Coders(name)  # (coder id, username) -> (how the export names them,)
    # the study's (filtered) outputs that have codings: the study named as well lets PostgreSQL walk only its outputs
    coded = coding_queryset(study, options, index).order_by().values("output_id")
    stories = _Stories(filtered_outputs(study, options).filter(pk__in=coded))
    for chunk in query_batches(qs, CODING_BATCH):
        pk, guid, output_id, coder_id, username, code_id, start, end, quote, created, updated = zip(*chunk, strict=True)
        yield [
            pk,
            list(map(str, guid)),
            output_id,
            Lookup(output_id, stories, 6),
            Lookup(list(zip(coder_id, username, strict=True)), coders, 1),
            Lookup(code_id, codes, 8),
            ["document" if value is None else "span" for value in start],
            start,
            end,
            quote,
            list(map(memo_text.get, pk, repeat(""))) if memo_text else [""] * len(pk),
            created,
            updated,
        ]


class _CodeFields(dict):
    """code id -> (codebook, version, code id, name, path, dimension, gender tag, kind), made when first asked."""

    def __init__(self, index):
        super().__init__()
        self.index = index

    def __missing__(self, pk):
        code, dimension = self.index.codes[pk], self.index.dimension(pk)
        fields = (
            code[8],
            code[9],
            pk,
            code[2],
            self.index.path(pk),
            self.index.codes[dimension][2] if dimension else "",
            code[5],
            code[6],
        )
        self[pk] = fields
        return fields


class _Coders(dict):
    """(coder id, username) -> (how the export names them,), made when first asked."""

    def __init__(self, name):
        super().__init__()
        self.name = name

    def __missing__(self, key):
        self[key] = (self.name(*key),)
        return self[key]


CODING_NAMES = tuple(column.name for column in CODING_COLUMNS)


@register_dataset(
    "codings",
    title="Codings",
    app="annotation",
    columns=CODING_COLUMNS,
    count=lambda study, options: coding_queryset(study, options).count(),
    batches=coding_batches,
)
def coding_rows(study, options):
    for columns in coding_batches(study, options):
        for values in zip(*expand_columns(columns), strict=True):
            yield dict(zip(CODING_NAMES, values, strict=True))


# --- codes, memos, gender attributions ----------------------------------------------------------------------

CODE_COLUMNS = (
    Column("code_id", "Code id."),
    Column("code_guid", "Stable REFI-QDA GUID."),
    Column("codebook", "Codebook name."),
    Column("codebook_version", "Codebook version."),
    Column("parent_id", "Parent code id (empty for top-level codes)."),
    Column("code", "Code name."),
    Column("code_path", "Path 'Dimension/Group/Code'."),
    Column("dimension", "Top-level non-codable ancestor."),
    Column("codable", "1 for codes, 0 for dimensions and groups."),
    Column("active", "0 when merged into another code (its codings were moved)."),
    Column("merged_into_id", "The code it was merged into."),
    Column("gender_tag", "F, M or empty."),
    Column("code_kind", "a_priori or inductive."),
    Column("stereotype", "The stereotype the code stands for."),
    Column("item_number", "Prompt item the code targets, if any."),
    Column("description", "Code description."),
    Column("codings", "Number of codings of this code in the export's filter."),
)


@register_dataset("codes", title="Codebook (codes and dimensions)", app="annotation", columns=CODE_COLUMNS)
def code_rows(study, options):
    index = CodeIndex(study)
    selected = index.with_descendants(options["code_ids"]) if options.get("code_ids") else set(index.codes)
    counts = dict(_code_counts(study, options, index))
    for pk in sorted(selected, key=lambda p: (index.codes[p][7], index.path(p))):
        row = index.codes[pk]
        dimension = index.dimension(pk)
        yield {
            "code_id": pk,
            "code_guid": str(row[13]),
            "codebook": row[8],
            "codebook_version": row[9],
            "parent_id": row[1],
            "code": row[2],
            "code_path": index.path(pk),
            "dimension": index.codes[dimension][2] if dimension else "",
            "codable": row[3],
            "active": row[4],
            "merged_into_id": row[16],
            "gender_tag": row[5],
            "code_kind": row[6],
            "stereotype": row[11],
            "item_number": row[12],
            "description": row[15],
            "codings": counts.get(pk, 0),
        }


def _code_counts(study, options, index):

    return coding_queryset(study, options, index).values_list("code_id").annotate(n=Count("id")).order_by()


MEMO_COLUMNS = (
    Column("memo_id", "Memo id."),
    Column("memo_guid", "Stable REFI-QDA GUID (a Note in .qdpx)."),
    Column("author", "Author: username or pseudonym."),
    Column("target", "coding, code or output."),
    Column("coding_id", "The coding the memo is on."),
    Column("code_id", "The code the memo is on."),
    Column("output_id", "The story the memo is on (for coding memos: the coding's story)."),
    Column("text", "Memo text."),
    Column("created_at", "When it was written."),
)


@register_dataset("memos", title="Memos", app="annotation", columns=MEMO_COLUMNS)
def memo_rows(study, options):
    name = _people(options)
    outputs = filtered_outputs(study, options)
    qs = (
        Memo.objects.filter(study=study)
        .order_by("pk")
        .values_list(
            "pk",
            "guid",
            "author_id",
            "author__username",
            "coding_id",
            "coding__output_id",
            "code_id",
            "output_id",
            "text",
            "created_at",
        )
    )
    allowed = None
    if any(options.get(k) for k in ("run_ids", "models", "item_numbers")):
        allowed = set(outputs.values_list("pk", flat=True))
    for pk, guid, author_id, username, coding_id, coding_output, code_id, output_id, text, created in qs.iterator():
        story = output_id or coding_output
        if allowed is not None and story is not None and story not in allowed:
            continue
        target = "coding" if coding_id else "code" if code_id else "output"
        yield {
            "memo_id": pk,
            "memo_guid": str(guid),
            "author": name(author_id, username),
            "target": target,
            "coding_id": coding_id,
            "code_id": code_id,
            "output_id": story,
            "text": text,
            "created_at": created,
        }


GENDER_COLUMNS = (
    Column("output_id", "The story."),
    Column("model", "Model that wrote it."),
    Column("item_number", "Prompt item number."),
    Column("coder", "Coder: username or pseudonym."),
    Column("gender", "The coder's judgement of the subject's gender: F, M, nonbinary, mixed or unclear."),
    Column("character", "Which character the judgement is about."),
    Column("created_at", "When it was recorded."),
)


@register_dataset("gender_attributions", title="Gender attributions", app="annotation", columns=GENDER_COLUMNS)
def gender_rows(study, options):
    name = _people(options)
    qs = GenderAttribution.objects.filter(output__in=filtered_outputs(study, options)).order_by("output_id", "pk")
    for output_id, model, number, coder_id, username, gender, character, created in qs.values_list(
        "output_id",
        "output__model_name",
        "output__item__number",
        "coder_id",
        "coder__username",
        "gender",
        "character",
        "created_at",
    ).iterator():
        yield {
            "output_id": output_id,
            "model": model,
            "item_number": number,
            "coder": name(coder_id, username),
            "gender": gender,
            "character": character,
            "created_at": created,
        }


# --- the wide analysis-ready table --------------------------------------------------------------------------

WIDE_COLUMNS = (
    Column("output_id", "The story (outputs.output_id); one row per story."),
    Column("run_id", "Generation run."),
    Column("model", "Model that wrote the story."),
    Column("endpoint", "Endpoint name."),
    Column("item_number", "Prompt item number."),
    Column("dimension", "Toolkit dimension of the item."),
    Column("target_stereotype", "Stereotype the item targets."),
    Column("trial", "Trial (repetition) number."),
    Column("variant_key", "Slot values of the prompt variant."),
    Column("coders_n", "Number of coders who coded the story (an assignment marked done, or at least one coding)."),
    Column(
        "gender_attribution",
        "Majority gender attribution across coders (F, M, nonbinary, mixed, unclear); "
        "'disagree' on a tie; empty when nobody attributed one.",
    ),
    Column("gender_attribution_n", "Number of coders who attributed a gender."),
)


def _slug(text, limit=40):
    return re.sub(r"[^0-9a-z]+", "_", slugify(text or "").lower()).strip("_")[:limit] or "x"


def _wide_codes(study, options, index):
    selected = index.with_descendants(options["code_ids"]) if options.get("code_ids") else set(index.codes)
    codes = [pk for pk in selected if index.codes[pk][3] and index.codes[pk][4]]
    codes.sort(key=lambda pk: (index.codes[pk][7], index.path(pk)))
    dims = sorted({index.dimension(pk) for pk in codes} - {None}, key=lambda pk: (index.codes[pk][7], index.path(pk)))
    return codes, dims


def _judge_columns(study, options):
    """[(round id, template kind, threshold, [judge models])] for the study's judge rounds."""
    judging = provider("judging")  # judging's selectors, when installed (annotation does not import judging)
    if judging is None:
        return []
    result = []
    for rnd in judging.study_rounds(study, options.get("round_ids")):
        models = judging.round_judges(rnd)
        threshold = getattr(rnd.template, "detect_threshold", 1)
        result.append((rnd.pk, rnd.name, threshold, models))
    return result


def wide_extra_columns(study, options):
    index = CodeIndex(study)
    codes, dims = _wide_codes(study, options, index)
    columns = []
    for pk in codes:
        row = index.codes[pk]
        columns.append(
            Column(
                f"code_{pk}_{_slug(row[2])}",
                f"1 if any coder applied code '{index.path(pk)}' (codebook {row[8]} v{row[9]}, "
                f"gender {row[5] or '-'}) to the story, 0 if coded without it, empty if not coded.",
            )
        )
    for pk in dims:
        columns.append(
            Column(
                f"dim_{pk}_{_slug(index.codes[pk][2])}",
                f"1 if any code under dimension '{index.codes[pk][2]}' was applied, 0 if coded "
                f"without one, empty if not coded.",
            )
        )
    for round_id, name, threshold, models in _judge_columns(study, options):
        for model in models:
            columns.append(
                Column(
                    f"verdict_r{round_id}_{_slug(model, 60)}",
                    f"Verdict of judge {model} in round '{name}' (0/1, or the Likert value); empty "
                    f"when this judge did not rate the story or its answer was missing.",
                )
            )
        columns.append(
            Column(
                f"verdict_r{round_id}_detected",
                f"Share of valid verdicts in round '{name}' at or above {threshold} (stereotype "
                f"detected); with one judge per story (rotation) it is 0 or 1.",
            )
        )
    return columns


def _groups(rows):
    """Yield (output_id, [rows]) from rows sorted by output_id (first element)."""
    current, bucket = None, []
    for row in rows:
        if row[0] != current:
            if bucket:
                yield current, bucket
            current, bucket = row[0], []
        bucket.append(row)
    if bucket:
        yield current, bucket


class _Cursor:
    """Walks a grouped stream alongside the outputs (both in output-id order)."""

    def __init__(self, rows):
        self.groups = _groups(rows)
        self.current = next(self.groups, None)

    def take(self, output_id):
        while self.current is not None and self.current[0] < output_id:
            self.current = next(self.groups, None)
        if self.current is not None and self.current[0] == output_id:
            rows = self.current[1]
            self.current = next(self.groups, None)
            return rows
        return []


@register_dataset(
    "analysis_wide",
    title="Analysis-ready table (one row per story)",
    app="annotation",
    columns=WIDE_COLUMNS,
    extra_columns=wide_extra_columns,
    count=lambda study, options: filtered_outputs(study, options).count(),
)
def wide_rows(study, options):
    index = CodeIndex(study)
    codes, dims = _wide_codes(study, options, index)
    code_cols = {pk: f"code_{pk}_{_slug(index.codes[pk][2])}" for pk in codes}
    dim_cols = {pk: f"dim_{pk}_{_slug(index.codes[pk][2])}" for pk in dims}
    judge = _judge_columns(study, options)
    outputs = filtered_outputs(study, options)
    codings = _Cursor(
        Coding.objects.filter(output__in=outputs)
        .order_by("output_id")
        .values_list("output_id", "coder_id", "code_id")
        .iterator(chunk_size=10000)
    )
    done = _Cursor(
        Assignment.objects.filter(output__in=outputs, status="done")
        .order_by("output_id")
        .values_list("output_id", "coder_id")
        .iterator(chunk_size=10000)
    )
    genders = _Cursor(
        GenderAttribution.objects.filter(output__in=outputs)
        .order_by("output_id")
        .values_list("output_id", "gender")
        .iterator(chunk_size=10000)
    )
    verdicts = None
    if judge:
        verdicts = _Cursor(
            provider("judging")
            .ok_verdicts([j[0] for j in judge], outputs)
            .order_by("output_id")
            .values_list("output_id", "round_id", "judge_model", "value")
            .iterator(chunk_size=10000)
        )
    thresholds = {j[0]: j[2] for j in judge}
    verdict_cols = {(j[0], m): f"verdict_r{j[0]}_{_slug(m, 60)}" for j in judge for m in j[3]}
    dim_of = {pk: index.dimension(pk) for pk in codes}
    fields = [
        "pk",
        "run_id",
        "model_name",
        "endpoint__name",
        "item__number",
        "item__dimension__name",
        "item__target_stereotype",
        "trial",
        "variant_key",
    ]
    for pk, run_id, model, endpoint, number, dimension, target, trial, variant in (
        outputs.order_by("pk").values_list(*fields).iterator(chunk_size=5000)
    ):
        row = {
            "output_id": pk,
            "run_id": run_id,
            "model": model,
            "endpoint": endpoint,
            "item_number": number,
            "dimension": dimension,
            "target_stereotype": target,
            "trial": trial,
            "variant_key": variant,
        }
        story_codings = codings.take(pk)
        coders = {c[1] for c in story_codings} | {a[1] for a in done.take(pk)}
        row["coders_n"] = len(coders)
        applied = {c[2] for c in story_codings}
        for code_pk, column in code_cols.items():
            row[column] = (1 if code_pk in applied else 0) if coders else None
        applied_dims = {dim_of.get(c) for c in applied}
        for dim_pk, column in dim_cols.items():
            row[column] = (1 if dim_pk in applied_dims else 0) if coders else None
        attributed = Counter(g[1] for g in genders.take(pk))
        row["gender_attribution_n"] = sum(attributed.values())
        ranked = attributed.most_common(2)
        row["gender_attribution"] = (
            "" if not ranked else "disagree" if len(ranked) == 2 and ranked[0][1] == ranked[1][1] else ranked[0][0]
        )
        if verdicts is not None:
            per_round = defaultdict(list)
            for _, round_id, judge_model, value in verdicts.take(pk):
                row[verdict_cols[(round_id, judge_model)]] = value
                per_round[round_id].append(value)
            for round_id, threshold in thresholds.items():
                values = per_round.get(round_id)
                row[f"verdict_r{round_id}_detected"] = (
                    None if not values else round(sum(v >= threshold for v in values) / len(values), 4)
                )
        yield row
