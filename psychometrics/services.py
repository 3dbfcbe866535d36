"""Writes for instruments, persona sets and context sets. Every import validates first and applies in one
transaction; problems raise PsychError with a message that says what to fix."""

import csv
import io
import itertools
import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from django.db import transaction
from django.db.models import Q, QuerySet

from generation.toolkits.counterfactual import swap_gender
from stereoscope import schemas
from stereoscope.models import Study
from stereoscope.services import record_activity
from stereoscope.untrusted import loads_json, nul_problem
from stereoscope.versioning import Versioning

from .models import Context, ContextSet, Instrument, InstrumentItem, Persona, PersonaSet
from .spec import SpecError, parse_instrument, to_dict

MAX_IMPORT_ROWS = 100_000
SCHEMA_DIR = Path(__file__).resolve().parent / "schema"
PERSONAS_SCHEMA = schemas.register("personas", SCHEMA_DIR / "personas.schema.json")
CONTEXTS_SCHEMA = schemas.register("contexts", SCHEMA_DIR / "contexts.schema.json")
Row = TypeVar("Row")
PersonaOrContext = TypeVar("PersonaOrContext", Persona, Context)


class PsychError(ValueError):
    """Bad input; nothing was saved."""


def instruments_for(study: Study) -> QuerySet[Instrument]:
    return Instrument.objects.filter(Q(study=study) | Q(study__is_library=True)).select_related("study")


def persona_sets_for(study: Study) -> QuerySet[PersonaSet]:
    return PersonaSet.objects.filter(Q(study=study) | Q(study__is_library=True)).select_related("study")


def load_json(text: str | bytes) -> Any:
    try:
        return loads_json(text)
    except ValueError as exc:
        raise PsychError(f"The file is not valid JSON: {exc}.") from None


# -- instruments -----------------------------------------------------------------------------------------------
@transaction.atomic
def create_instrument(
    study: Study,
    data: Any,
    *,
    actor: Any = None,
    builtin_key: str = "",
    locked: bool = False,
    parallel_of: Instrument | None = None,
) -> Instrument:
    """Create an instrument from its JSON (dict or text). A name already in the study gets the next version."""
    if isinstance(data, (str, bytes)):
        data = load_json(data)
    try:
        spec = parse_instrument(data)
    except SpecError as exc:
        raise PsychError(str(exc)) from None
    if parallel_of is None and spec.parallel_form:
        pf = spec.parallel_form
        candidates = instruments_for(study).filter(name=pf["name"])
        parallel_of = (
            candidates.filter(label=str(pf.get("version", ""))).first() or candidates.order_by("-version").first()
        )
    INSTRUMENTS.refuse_library(study, builtin=bool(builtin_key))
    version = INSTRUMENTS.next_version(study, spec.name)
    parent = Instrument.objects.filter(study=study, name=spec.name, version=version - 1).first()
    instrument = Instrument.objects.create(
        study=study,
        name=spec.name,
        version=version,
        label=spec.version,
        description=spec.description,
        source=spec.source,
        instruction=spec.instruction,
        scale_min=spec.scale.min,
        scale_max=spec.scale.max,
        scale_labels={str(k): v for k, v in spec.scale.labels.items()},
        continuous=spec.scale.continuous,
        subscales=spec.subscales,
        scoring=spec.scoring,
        missing_policy=spec.missing,
        parallel_of=parallel_of,
        parent=parent,
        builtin_key=builtin_key,
        locked=locked,
        created_by=actor,
    )
    items = InstrumentItem.objects.bulk_create(
        [
            InstrumentItem(
                instrument=instrument,
                item_id=i.id,
                position=n,
                text=i.text,
                subscale=i.subscale,
                reverse=i.reverse,
                options=[{"text": o.text, "weight": o.weight} for o in i.options],
            )
            for n, i in enumerate(spec.items)
        ]
    )
    if parallel_of is not None:
        others = {i.item_id: i for i in parallel_of.items.all()}
        missing = [i.parallel for i in spec.items if i.parallel and i.parallel not in others]
        if missing:
            raise PsychError(f"Parallel item ids not in “{parallel_of}”: {', '.join(missing)}.")
        by_id = {i.item_id: i for i in items}
        for item_spec in spec.items:
            if item_spec.parallel:
                InstrumentItem.objects.filter(pk=by_id[item_spec.id].pk).update(parallel=others[item_spec.parallel])
                InstrumentItem.objects.filter(pk=others[item_spec.parallel].pk).update(parallel=by_id[item_spec.id])
    record_activity(study, actor, "imported instrument", str(instrument))
    return instrument


def export_instrument(instrument: Instrument) -> dict[str, Any]:
    return to_dict(instrument.to_spec())


def _copy_items(instrument: Instrument, copy: Instrument, *, actor: Any = None) -> None:
    """An instrument version's children: its items (links to a parallel form's items kept)."""
    InstrumentItem.objects.bulk_create(
        [
            InstrumentItem(
                instrument=copy,
                item_id=i.item_id,
                position=i.position,
                text=i.text,
                subscale=i.subscale,
                reverse=i.reverse,
                options=i.options,
                parallel_id=i.parallel_id,
            )
            for i in instrument.items.all()
        ]
    )


# Locked when a questionnaire run is created with it (psychometrics/runs.py).
INSTRUMENTS = Versioning(Instrument, noun="instrument", error=PsychError, copy_children=_copy_items)


# -- persona sets ----------------------------------------------------------------------------------------------
def _rows_from_file(text: str | bytes, filename: str) -> list[dict[str, Any]]:
    """JSONL or CSV rows as dicts."""
    text = text.decode("utf-8-sig") if isinstance(text, bytes) else text.lstrip("\ufeff")
    if nul_problem(text):
        raise PsychError(nul_problem(text))
    rows: list[dict[str, Any]] = []
    if filename.lower().endswith(".csv"):
        reader = csv.DictReader(io.StringIO(text))
        if not reader.fieldnames:
            raise PsychError("The CSV has no header row.")
        rows = []
        for n, r in enumerate(reader, 2):
            if None in r:
                raise PsychError(f"Row {n} has more cells than the header has columns.")
            rows.append(dict(r))
    else:
        for n, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = loads_json(line)
            except ValueError as exc:
                raise PsychError(f"Line {n} is not valid JSON: {exc}.") from None
            if not isinstance(row, dict):
                raise PsychError(f"Line {n} must be a JSON object.")
            rows.append(row)
    if not rows:
        raise PsychError("The file has no rows.")
    if len(rows) > MAX_IMPORT_ROWS:
        raise PsychError(f"{len(rows)} rows is more than the limit of {MAX_IMPORT_ROWS}.")
    return rows


@transaction.atomic
def import_personas(
    study: Study, name: str, text: str | bytes, filename: str = "personas.jsonl", description: str = ""
) -> PersonaSet:
    """Personas from JSONL ({"text" or "persona", "key"?, other keys = attributes}) or CSV (same columns)."""
    rows = _rows_from_file(text, filename)
    _raise_problems(_row_problems(rows, PERSONAS_SCHEMA, "The persona file"))
    personas: list[tuple[str, str, dict[str, Any]]] = []
    seen: set[str] = set()
    problems: list[str] = []
    for n, row in enumerate(rows, 1):
        body = row["text"] if "text" in row else row["persona"]
        key = _row_key(row, n)
        if key in seen:
            problems.append(f"row {n}: duplicate key {key!r}")
        seen.add(key)
        attrs = {k: v for k, v in row.items() if k not in ("text", "persona", "key", "id")}
        personas.append((key, body.strip(), attrs))
    _raise_problems(problems)
    persona_set = _new_persona_set(study, name, description=description)
    Persona.objects.bulk_create(
        [Persona(persona_set=persona_set, key=k, text=t, attributes=a, order=i) for i, (k, t, a) in enumerate(personas)]
    )
    return persona_set


def _new_persona_set(study: Study, name: str | None, **fields: Any) -> PersonaSet:
    name = (name or "").strip()
    if not name:
        raise PsychError("Give the persona set a name.")
    if PersonaSet.objects.filter(study=study, name=name).exists():
        raise PsychError(f"A persona set named “{name}” exists already.")
    return PersonaSet.objects.create(study=study, name=name, **fields)


def expand_attributes(template: str, attributes: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    """Cartesian product of attribute lists. A list value is one attribute; a dict value {group: [values]} is one
    attribute whose group is kept as "<name>_group". Returns [(text, attrs)]."""
    axes: list[list[tuple[str, Any, Any]]] = []
    for name, values in attributes.items():
        if isinstance(values, dict):
            axes.append([(name, v, g) for g, vs in values.items() for v in vs])
        elif isinstance(values, list) and values:
            axes.append([(name, v, None) for v in values])
        else:
            raise PsychError(f"Attribute {name!r} needs a non-empty list (or groups of lists).")
    placeholders = set(__import__("re").findall(r"\{(\w+)\}", template))
    unknown = placeholders - set(attributes)
    if unknown:
        raise PsychError(f"The template uses {', '.join(sorted(unknown))}, which no attribute list defines.")
    out: list[tuple[str, dict[str, Any]]] = []
    for combo in itertools.product(*axes):
        attrs: dict[str, Any] = {}
        for name, value, group in combo:
            attrs[name] = value
            if group is not None:
                attrs[f"{name}_group"] = group
        text = template
        for name, value, _ in combo:
            text = text.replace("{" + name + "}", str(value))
        out.append((text, attrs))
    return out


@transaction.atomic
def generate_personas(
    study: Study,
    name: str,
    template: str,
    attributes: Any,
    description: str = "",
    builtin_key: str = "",
) -> PersonaSet:
    if not isinstance(attributes, dict) or not attributes:
        raise PsychError('Attributes must be an object of lists, e.g. {"title": ["Mr.", "Ms."], "surname": ["Kim"]}.')
    if not template or "{" not in template:
        raise PsychError("The template needs at least one {attribute} placeholder, e.g. “{title} {surname}”.")
    rows = expand_attributes(template, attributes)
    if len(rows) > MAX_IMPORT_ROWS:
        raise PsychError(f"{len(rows)} personas is more than the limit of {MAX_IMPORT_ROWS}.")
    persona_set = _new_persona_set(
        study, name, description=description, template=template, attributes=attributes, builtin_key=builtin_key
    )
    Persona.objects.bulk_create(
        [
            Persona(persona_set=persona_set, key=f"{i + 1}", text=t, attributes=a, order=i)
            for i, (t, a) in enumerate(rows)
        ]
    )
    return persona_set


@transaction.atomic
def add_persona_twins(persona_set: PersonaSet) -> int:
    """Link every persona to its gender-swapped twin (generation.toolkits.counterfactual.swap_gender): an existing
    persona with the swapped text (e.g. Mr. Kim ↔ Ms. Kim), otherwise a new one."""
    created = 0
    start = persona_set.personas.count()
    by_text = {p.text: p for p in persona_set.personas.all()}
    keys = {p.key for p in by_text.values()}
    for persona in list(persona_set.personas.filter(twin__isnull=True).order_by("order", "pk")):
        persona.refresh_from_db(fields=["twin"])
        if persona.twin_id:
            continue
        swapped = swap_gender(persona.text)  # type: ignore[no-untyped-call]  # generation is not typed yet
        if swapped == persona.text:
            continue
        twin = by_text.get(swapped)
        if twin is None:
            key = f"{persona.key}~twin"
            if key in keys:
                continue
            twin = Persona.objects.create(
                persona_set=persona_set,
                key=key,
                text=swapped,
                attributes={**persona.attributes, "counterfactual_of": persona.key},
                order=start + created,
            )
            by_text[swapped] = twin
            created += 1
        Persona.objects.filter(pk=twin.pk).update(twin=persona)
        Persona.objects.filter(pk=persona.pk).update(twin=twin)
    return created


def set_included(obj: PersonaOrContext, included: bool, reason: str | None = "") -> PersonaOrContext:
    """Include or exclude a persona or context; excluding needs a reason."""
    reason = (reason or "").strip()
    if not included and not reason:
        raise PsychError("Say why it is excluded (a reason is required).")
    type(obj).objects.filter(pk=obj.pk).update(included=included, exclude_reason="" if included else reason[:300])
    obj.included, obj.exclude_reason = included, ("" if included else reason[:300])
    return obj


# -- context sets ----------------------------------------------------------------------------------------------
def _new_context_set(study: Study, name: str | None, **fields: Any) -> ContextSet:
    name = (name or "").strip()
    if not name:
        raise PsychError("Give the context set a name.")
    if ContextSet.objects.filter(study=study, name=name).exists():
        raise PsychError(f"A context set named “{name}” exists already.")
    return ContextSet.objects.create(study=study, name=name, **fields)


def sample(rows: Sequence[Row], n: int | None, seed: int) -> list[Row]:
    """A seeded random sample of n rows (all rows, in order, when n is None or ≥ len)."""
    if n is None or n >= len(rows):
        return list(rows)
    if n < 1:
        raise PsychError("The sample size must be at least 1.")
    picked = random.Random(seed).sample(range(len(rows)), n)
    return [rows[i] for i in sorted(picked)]


@transaction.atomic
def contexts_from_personas(
    study: Study, name: str, persona_set: PersonaSet, n: int | None = None, seed: int = 0, description: str = ""
) -> ContextSet:
    """Each included persona (or a seeded sample of n) becomes a context whose system message is the persona."""
    if persona_set.study_id != study.pk and not persona_set.study.is_library:
        raise PsychError(f"No persona set {persona_set.pk} in this study.")
    personas = list(persona_set.personas.filter(included=True).order_by("order", "key"))
    if not personas:
        raise PsychError("The persona set has no included personas.")
    chosen = sample(personas, n, seed)
    context_set = _new_context_set(
        study,
        name,
        description=description,
        seed=seed if n else None,
        source=f"persona set “{persona_set.name}”" + (f", sample of {n} (seed {seed})" if n else ""),
    )
    contexts = Context.objects.bulk_create(
        [
            Context(
                context_set=context_set, key=p.key, persona=p.text, source_persona=p, attributes=p.attributes, order=i
            )
            for i, p in enumerate(chosen)
        ]
    )
    by_persona = {c.source_persona_id: c for c in contexts}
    for c in contexts:
        twin_persona = next((p.twin_id for p in chosen if p.pk == c.source_persona_id), None)
        if twin_persona in by_persona:
            Context.objects.filter(pk=c.pk).update(twin=by_persona[twin_persona])
    return context_set


def _row_problems(rows: list[dict[str, Any]], schema: Path, what: str) -> list[str]:
    """The schema's problems of a file's rows, each named by its row (`row 3, turns[0].role: …`)."""
    out = []
    for problem in schemas.problems(rows, schema, what=what):
        found = re.match(r"\[(\d+)\]\.?(.*)", problem.path)
        if not found:
            out.append(str(problem))
            continue
        where = f"row {int(found[1]) + 1}" + (f", {found[2]}" if found[2] else "")
        out.append(f"{where}: {problem.message}")
    return out


def _raise_problems(problems: list[str]) -> None:
    if problems:
        more = f" (and {len(problems) - 10} more)" if len(problems) > 10 else ""
        raise PsychError("; ".join(problems[:10]) + more)


def _row_key(row: dict[str, Any], number: int) -> str:
    """A row's key: its "key" or "id", else its row number."""
    return str(row.get("key") or row.get("id") or number).strip()


@transaction.atomic
def import_contexts(
    study: Study,
    name: str,
    text: str | bytes,
    filename: str = "contexts.jsonl",
    n: int | None = None,
    seed: int = 0,
    description: str = "",
) -> ContextSet:
    """Contexts from JSONL: {"key"?, "persona"?, "turns" (or "conversation"): [{role, content}], other keys =
    attributes}. Optional seeded sample of n."""
    rows = _rows_from_file(text, filename)
    _raise_problems(_row_problems(rows, CONTEXTS_SCHEMA, "The context file"))
    parsed: list[tuple[str, str, list[dict[str, str]], dict[str, Any]]] = []
    seen: set[str] = set()
    problems: list[str] = []
    for i, row in enumerate(rows, 1):
        turns = [{"role": t["role"], "content": t["content"]} for t in row.get("turns", row.get("conversation", []))]
        persona = row.get("persona", "")
        if not turns and not persona.strip():
            problems.append(f"row {i}: a context needs a persona or at least one prior turn")
        key = _row_key(row, i)
        if key in seen:
            problems.append(f"row {i}: duplicate key {key!r}")
        seen.add(key)
        attrs = {k: v for k, v in row.items() if k not in ("key", "id", "persona", "turns", "conversation")}
        parsed.append((key, persona.strip(), turns, attrs))
    _raise_problems(problems)
    chosen = sample(parsed, n, seed)
    context_set = _new_context_set(
        study,
        name,
        description=description,
        seed=seed if n else None,
        source=f"import {filename}" + (f", sample of {n} (seed {seed})" if n else ""),
    )
    Context.objects.bulk_create(
        [
            Context(context_set=context_set, key=k, persona=p, turns=t, attributes=a, order=i)
            for i, (k, p, t, a) in enumerate(chosen)
        ]
    )
    return context_set


@transaction.atomic
def empty_context_set(study: Study, name: str = "No context") -> ContextSet:
    """One context with no persona and no turns: the bare questionnaire (Fang's fresh single-turn chats)."""
    existing = ContextSet.objects.filter(study=study, name=name).first()
    if existing:
        return existing
    context_set = ContextSet.objects.create(study=study, name=name, source="one empty context")
    Context.objects.create(context_set=context_set, key="none")
    return context_set


@transaction.atomic
def add_context_twins(context_set: ContextSet) -> int:
    """A gender-swapped twin of every context (persona and turns swapped)."""
    created = 0
    start = context_set.contexts.count()
    keys = set(context_set.contexts.values_list("key", flat=True))
    for c in list(context_set.contexts.filter(twin__isnull=True)):
        persona = swap_gender(c.persona)  # type: ignore[no-untyped-call]  # generation is not typed yet
        turns = [
            {"role": t["role"], "content": swap_gender(t["content"])}  # type: ignore[no-untyped-call]  # generation is not typed yet
            for t in c.turns
        ]
        if (persona, turns) == (c.persona, c.turns) or c.key.endswith("~twin") or f"{c.key}~twin" in keys:
            continue
        twin = Context.objects.create(
            context_set=context_set,
            key=f"{c.key}~twin",
            persona=persona,
            turns=turns,
            twin=c,
            attributes={**c.attributes, "counterfactual_of": c.key},
            order=start + created,
        )
        Context.objects.filter(pk=c.pk).update(twin=twin)
        created += 1
    return created


# -- texts generated in contexts (Jung's concurrent validity) --------------------------------------------------------
def generation_run_in_contexts(
    study: Study,
    *,
    name: str,
    context_set: ContextSet | None,
    toolkit: Any,
    endpoints: Any,
    trials: int = 1,
    param_overrides: dict[str, Any] | None = None,
    actor: Any = None,
) -> Any:
    """A generation run whose every prompt is asked in every included context of the set (context × prompt), the
    context sent as in questionnaire runs: the persona as system message, then the prior turns."""
    from generation.runs.services import RunError, create_run

    if context_set is None or context_set.study_id != study.pk:
        raise PsychError("Choose a context set of this study.")
    contexts = [
        {"key": c.key, "persona": c.persona, "turns": c.turns or []}
        for c in context_set.contexts.filter(included=True).order_by("order", "key")
    ]
    if not contexts:
        raise PsychError("The context set has no included contexts.")
    try:
        return create_run(  # type: ignore[no-untyped-call]  # generation is not typed yet
            study,
            name=name,
            toolkit=toolkit,
            endpoints=endpoints,
            trials=trials,
            param_overrides=param_overrides,
            contexts=contexts,
            context_source=f"context set “{context_set.name}”",
            actor=actor,
        )
    except RunError as exc:
        raise PsychError(str(exc)) from None
