"""Codebooks and codes: create, import, edit, merge, move, split, undo (recorded as CodeOperations), and the
versioning rules of codebooks."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from generation.selectors import toolkit_items
from stereoscope.jobs.models import ACTIVE
from stereoscope.models import Study
from stereoscope.services import record_activity
from stereoscope.trash import TrashError, refuse_if_work
from stereoscope.versioning import Versioning

from .. import codebook_format as fmt
from ..models import (
    Code,
    Codebook,
    CodeKind,
    CodeOperation,
    Coding,
    GenderTag,
    OperationKind,
    VariableScope,
)
from ..selectors import code_tree
from .codings import create_coding
from .errors import AnnotationError

CODE_FIELDS = [
    "name",
    "description",
    "color",
    "gender_tag",
    "kind",
    "codable",
    "stereotype",
    "shortcut",
    "order",
    "item",
    "parent",
]


# --- codebooks ---------------------------------------------------------------------------------------


def clean_codebook_name(name: object) -> str:
    if name is not None and not isinstance(name, str):  # a list or object from a JSON body
        raise AnnotationError("The codebook name must be text.")
    name = (name or "").strip()
    if not name:
        raise AnnotationError("Give the codebook a name.")
    if len(name) > 200:
        raise AnnotationError("The codebook name is longer than 200 characters.")
    return name


@transaction.atomic
def create_codebook(study: Study, *, name: str | None, description: str = "", created_by: Any = None) -> Codebook:
    CODEBOOKS.refuse_library(study)
    name = clean_codebook_name(name)
    codebook = Codebook.objects.create(
        study=study,
        name=name,
        description=description,
        version=CODEBOOKS.next_version(study, name),
        created_by=created_by,
    )
    record_activity(study, created_by, "created codebook", str(codebook))
    return codebook


@transaction.atomic
def update_codebook(codebook: Codebook, *, actor: Any = None, **fields: Any) -> Codebook:
    """Change an editable codebook's name or description."""
    CODEBOOKS.ensure_editable(codebook)
    changed: list[str] = []
    if "name" in fields:
        name = clean_codebook_name(fields["name"])
        taken = Codebook.objects.filter(study=codebook.study, name=name, version=codebook.version)
        if taken.exclude(pk=codebook.pk).exists():  # the unique name and version (an IntegrityError otherwise)
            raise AnnotationError(
                f"The study already has a codebook “{name}” version {codebook.version}; choose another name."
            )
        codebook.name = name
        changed.append("name")
    if "description" in fields:
        codebook.description = fields["description"] or ""
        changed.append("description")
    if changed:
        codebook.save(update_fields=changed)
        record_activity(codebook.study, actor, "changed codebook", str(codebook))
    return codebook


@transaction.atomic
def delete_codebook(codebook: Codebook, *, actor: Any = None) -> None:
    """Delete a codebook nobody has used. Refused (AnnotationError, saying what depends on it) for a library
    codebook, a locked or used one, one with a live discovery job, and one with codings, memos or assignments:
    weeks of coding never go with one request. A study's whole work goes to the trash with the study instead."""
    codebook = Codebook.objects.select_for_update().get(pk=codebook.pk)
    if codebook.study.is_library:
        raise AnnotationError("Built-in library codebooks cannot be deleted.")
    live = [str(d) for d in codebook.discoveries.filter(status__in=ACTIVE)]
    if live:
        raise AnnotationError(
            f"The codebook “{codebook}” has a code discovery running ({', '.join(live)}); cancel it first."
        )
    what = f"The codebook “{codebook}”"
    try:
        refuse_if_work(
            codebook, what, advice="Create a new version to change it, or move the whole study to the trash."
        )
    except TrashError as exc:
        raise AnnotationError(str(exc)) from None
    if CODEBOOKS.is_locked(codebook):
        raise AnnotationError(f"{what} is locked (it has been used); create a new version instead of deleting it.")
    record_activity(codebook.study, actor, "deleted codebook", str(codebook))
    codebook.delete()


def _resolve_items(study: Study, tree: dict[str, Any], toolkit: Any) -> dict[int, Any]:
    numbers = {n["item_number"] for n, _, _ in fmt.walk(tree["codes"]) if n.get("item_number") is not None}
    if not numbers:
        return {}
    if toolkit is None:
        raise AnnotationError("The codebook links codes to toolkit item numbers; choose the toolkit they refer to.")
    if toolkit.study_id != study.pk and not toolkit.study.is_library:
        raise AnnotationError(f"No toolkit {toolkit.pk} in this study.")
    items = toolkit_items(toolkit, numbers)
    missing = sorted(numbers - set(items))
    if missing:
        raise AnnotationError(f"The toolkit “{toolkit}” has no item {', '.join(map(str, missing))}.")
    return items


@transaction.atomic
def import_codebook(
    study: Study,
    tree: dict[str, Any],
    *,
    name: str | None = None,
    created_by: Any = None,
    builtin_key: str = "",
    locked: bool = False,
    toolkit: Any = None,
    description: str | None = None,
) -> Codebook:
    """Create a new codebook (a new version when the name exists) from a validated tree."""
    tree = fmt.validate_tree({**tree, "name": name or tree.get("name")})
    items = _resolve_items(study, tree, toolkit)
    wanted = [n["guid"] for n, _, _ in fmt.walk(tree["codes"]) if n["guid"]]
    taken = set(str(g) for g in Code.objects.filter(guid__in=wanted).values_list("guid", flat=True))
    CODEBOOKS.refuse_library(study, builtin=bool(builtin_key))
    codebook = Codebook.objects.create(
        study=study,
        name=tree["name"],
        version=CODEBOOKS.next_version(study, tree["name"]),
        description=tree["description"] if description is None else description,
        builtin_key=builtin_key,
        created_by=created_by,
    )
    _create_codes(codebook, tree["codes"], items=items, taken=taken, created_by=created_by)
    if locked:
        codebook.locked = True
        codebook.save(update_fields=["locked"])
    record_activity(study, created_by, "imported codebook", str(codebook))
    return codebook


def _create_codes(
    codebook: Codebook,
    codes: Iterable[dict[str, Any]],
    *,
    items: Mapping[Any, Any],
    taken: Iterable[str] = (),
    created_by: Any = None,
) -> None:
    """Save a validated code tree into `codebook`, in order; GUIDs in `taken` get new ones."""
    order = 0

    def create(node: dict[str, Any], parent: Code | None) -> None:
        nonlocal order
        order += 1
        fields = {
            key: node[key]
            for key in (
                "name",
                "description",
                "color",
                "gender_tag",
                "kind",
                "codable",
                "shortcut",
                "stereotype",
                "frequency_reference",
            )
        }
        fields.update(
            variable_scope=node.get("variable", ""),
            variable_ordered=node.get("ordered", False),
            exclude_value=node.get("exclude", False),
            gold_rule=node.get("gold_rule") or "majority",
            gold_min_raters=node.get("gold_min_raters") or 2,
        )
        if node["guid"] and node["guid"] not in taken:
            fields["guid"] = node["guid"]
        code = Code.objects.create(
            codebook=codebook,
            parent=parent,
            order=order,
            created_by=created_by,
            item=items.get(node.get("item_number")),
            **fields,
        )
        for child in node["children"]:
            create(child, code)

    for node in codes:
        create(node, None)


def codebook_tree(codebook: Codebook, include_inactive: bool = False) -> dict[str, Any]:
    """The codebook as a normalised tree (the export format), children in order."""

    def node(code: Code, path: str) -> dict[str, Any]:
        here = f"{path}/{code.name}" if path else code.name
        return {
            "guid": str(code.guid),
            "name": code.name,
            "description": code.description,
            "color": code.color,
            "gender_tag": code.gender_tag,
            "kind": code.kind,
            "codable": code.codable,
            "shortcut": code.shortcut,
            "stereotype": code.stereotype,
            "item_number": code.item.number if code.item_id else None,  # type: ignore[union-attr]  # item_id is set
            "frequency_reference": code.frequency_reference,
            "path": here,
            "variable": code.variable_scope,
            "ordered": code.variable_ordered,
            "exclude": code.exclude_value,
            **({"gold_rule": code.gold_rule, "gold_min_raters": code.gold_min_raters} if code.variable_scope else {}),
            "children": [node(child, here) for child in code.child_nodes],  # type: ignore[attr-defined]  # set by code_tree
        }

    return {
        "name": codebook.name,
        "description": codebook.description,
        "codes": [
            node(code, "")
            for code in code_tree(codebook, active_only=not include_inactive)  # type: ignore[no-untyped-call]  # annotation.selectors is not typed yet
        ],
    }


def _copy_codes(codebook: Codebook, copy: Codebook, *, actor: Any = None) -> None:
    """A codebook version's children: its active code tree (new GUIDs; item links kept within a study)."""
    tree = codebook_tree(codebook)
    same_study = codebook.study_id == copy.study_id
    for node, _, _ in fmt.walk(tree["codes"]):
        node["guid"] = ""
        if not same_study:
            node["item_number"] = None
    toolkit = None
    if same_study:
        first = codebook.codes.filter(item__isnull=False).select_related("item__toolkit").first()
        toolkit = first.item.toolkit if first else None  # type: ignore[union-attr]  # filtered on item__isnull=False
    tree = fmt.validate_tree(tree)
    _create_codes(copy, tree["codes"], items=_resolve_items(copy.study, tree, toolkit), created_by=actor)


# Locked by hand (the lock button); a copy gets its own REFI-QDA project GUID.
CODEBOOKS = Versioning(
    Codebook, noun="codebook", error=AnnotationError, copy_children=_copy_codes, fresh_fields=("guid",)
)


# --- codes -------------------------------------------------------------------------------------------


def _clean_code_fields(codebook: Codebook, fields: Mapping[str, Any], code: Code | None = None) -> dict[str, Any]:
    """Validate code fields; returns the cleaned dict or raises AnnotationError."""
    cleaned: dict[str, Any] = {}
    errors: list[str] = []
    if "name" in fields:
        name = (fields["name"] or "").strip()
        if not name:
            errors.append("A code needs a name.")
        elif len(name) > 300:
            errors.append("The code name is longer than 300 characters.")
        cleaned["name"] = name
    if "color" in fields:
        color = fmt.normalize_color(fields["color"], "Colour", errors)
        cleaned["color"] = color
    if "gender_tag" in fields:
        tag = (fields["gender_tag"] or "").strip().upper()
        if tag not in GenderTag.values:
            errors.append("The gender tag must be F, M or empty.")
        cleaned["gender_tag"] = tag
    if "kind" in fields:
        if fields["kind"] not in CodeKind.values:
            errors.append("The kind must be a_priori or inductive.")
        cleaned["kind"] = fields["kind"]
    if "shortcut" in fields:
        shortcut = fields["shortcut"] or ""
        if len(shortcut) > 1 or shortcut.isspace():
            errors.append("A shortcut is a single visible character.")
        elif shortcut:
            clash = codebook.codes.filter(active=True, shortcut__iexact=shortcut)
            if code is not None:
                clash = clash.exclude(pk=code.pk)
            other = clash.first()
            if other:
                errors.append(f"The shortcut '{shortcut}' is already used by “{other.name}”.")
        cleaned["shortcut"] = shortcut
    for key in ("description", "stereotype"):
        if key in fields:
            cleaned[key] = fields[key] or ""
    if "codable" in fields:
        cleaned["codable"] = bool(fields["codable"])
    if "variable_scope" in fields:
        scope = (fields["variable_scope"] or "").strip().lower()
        if scope not in VariableScope.values:
            errors.append("A variable's scope is story, span or empty.")
        cleaned["variable_scope"] = scope
    for key in ("variable_ordered", "exclude_value"):
        if key in fields:
            cleaned[key] = bool(fields[key])
    if "gold_rule" in fields:
        rule = (fields["gold_rule"] or "").strip().lower()
        if rule not in ("majority", "plurality"):
            errors.append("The gold rule is majority (strict, the default) or plurality.")
        cleaned["gold_rule"] = rule
    if "gold_min_raters" in fields:
        try:
            cleaned["gold_min_raters"] = int(fields["gold_min_raters"])
            if not 1 <= cleaned["gold_min_raters"] <= 1000:
                raise ValueError
        except (TypeError, ValueError):
            errors.append("The minimum number of raters for a gold label is a whole number from 1 to 1000.")
    if "order" in fields:
        try:
            cleaned["order"] = max(0, int(fields["order"]))
        except (TypeError, ValueError):
            errors.append("The order must be a whole number.")
    if "parent" in fields:
        parent = fields["parent"]
        if parent is not None:
            if parent.codebook_id != codebook.pk:
                errors.append("The parent code belongs to another codebook.")
            elif not parent.active:
                errors.append(f"The parent “{parent.name}” was merged away.")
            elif code is not None and (parent.pk == code.pk or code.pk in [a.pk for a in parent.ancestors()]):
                errors.append("A code cannot be placed inside itself.")
        cleaned["parent"] = parent
    if "item" in fields:
        item = fields["item"]
        if item is not None and item.toolkit.study_id != codebook.study_id and not item.toolkit.study.is_library:
            errors.append(f"No prompt item {item.pk} in this study.")
        cleaned["item"] = item
    if errors:
        raise AnnotationError(" ".join(errors))
    return cleaned


def _record(codebook: Codebook, kind: str, actor: Any, payload: dict[str, Any]) -> CodeOperation:
    return CodeOperation.objects.create(
        codebook=codebook, kind=kind, actor=actor if getattr(actor, "pk", None) else None, payload=payload
    )


@transaction.atomic
def create_code(codebook: Codebook, *, actor: Any = None, **fields: Any) -> Code:
    CODEBOOKS.ensure_editable(codebook)
    fields.setdefault("kind", CodeKind.A_PRIORI)
    cleaned = _clean_code_fields(codebook, fields)
    if "name" not in cleaned:
        raise AnnotationError("A code needs a name.")
    if "order" not in cleaned:
        cleaned["order"] = (codebook.codes.aggregate(m=Max("order"))["m"] or 0) + 1
    code = Code.objects.create(codebook=codebook, created_by=actor if getattr(actor, "pk", None) else None, **cleaned)
    _record(codebook, OperationKind.CREATE, actor, {"code": code.pk, "name": code.name})
    return code


@transaction.atomic
def create_code_from_selection(
    *,
    study: Study,
    codebook: Codebook,
    output: Any,
    coder: Any,
    start: Any,
    end: Any,
    name: str,
    parent: Code | None = None,
    offset_unit: str = "codepoint",
    **fields: Any,
) -> tuple[Code, Coding]:
    """A new inductive code made from a selected span, and the coding of that span with it."""
    fields = {
        "gender_tag": fields.get("gender_tag", ""),
        "color": fields.get("color") or "#f08c00",
        "description": fields.get("description", ""),
        "shortcut": fields.get("shortcut", ""),
    }
    code = create_code(codebook, actor=coder, name=name, parent=parent, kind=CodeKind.INDUCTIVE, **fields)
    coding: Coding = create_coding(  # type: ignore[no-untyped-call]  # annotation.services.codings is not typed yet
        study=study,
        codebook=codebook,
        output=output,
        code=code,
        coder=coder,
        start=start,
        end=end,
        offset_unit=offset_unit,
    )
    return code, coding


@transaction.atomic
def delete_code(code: Code, *, actor: Any = None) -> None:
    """Delete a code of an editable codebook; one with codings or child codes is refused (merge it instead)."""
    CODEBOOKS.ensure_editable(code.codebook)
    if code.codings.exists() or code.children.exists():
        raise AnnotationError(f"“{code.name}” has codings or child codes; merge it instead.")
    record_activity(code.codebook.study, actor, "deleted code", code.name)
    code.delete()


@transaction.atomic
def update_code(code: Code, *, actor: Any = None, **fields: Any) -> Code:
    codebook = code.codebook
    CODEBOOKS.ensure_editable(codebook)
    code = Code.objects.select_for_update().get(pk=code.pk)
    cleaned = _clean_code_fields(codebook, fields, code=code)
    before: dict[str, Any] = {}
    for key, value in cleaned.items():
        old = getattr(code, key + "_id") if key in ("parent", "item") else getattr(code, key)
        new = value.pk if key in ("parent", "item") and value is not None else value
        if old != new:
            before[key] = old
    if not before:
        return code
    for key, value in cleaned.items():
        setattr(code, key, value)
    code.save()
    after = {key: (getattr(code, key + "_id") if key in ("parent", "item") else getattr(code, key)) for key in before}
    kind = OperationKind.MOVE if set(before) == {"parent"} else OperationKind.RENAME
    if kind == OperationKind.MOVE:
        _record(
            codebook,
            kind,
            actor,
            {
                "codes": [{"code": code.pk, "parent": before["parent"], "order": code.order}],
                "new_parent": after["parent"],
            },
        )
    else:
        _record(codebook, kind, actor, {"code": code.pk, "before": before, "after": after})
    return code


def _codes_in(codebook: Codebook, codes: Iterable[Code], label: str) -> list[Code]:
    result: list[Code] = []
    for code in codes:
        if code.codebook_id != codebook.pk:
            raise AnnotationError(f"The {label} “{code.name}” belongs to another codebook.")
        if not code.active:
            raise AnnotationError(f"The {label} “{code.name}” was already merged away.")
        result.append(code)
    return result


@transaction.atomic
def merge_codes(
    codebook: Codebook,
    sources: Iterable[Code],
    *,
    target: Code | None = None,
    new_name: str | None = None,
    new_parent: Code | None = None,
    actor: Any = None,
    **new_fields: Any,
) -> tuple[Code, CodeOperation]:
    """Merge `sources` into `target` (or into a new code `new_name` under `new_parent`). Every coding moves."""
    CODEBOOKS.ensure_editable(codebook)
    sources = _codes_in(codebook, list(dict.fromkeys(sources)), "code")
    if not sources:
        raise AnnotationError("Choose at least one code to merge.")
    created = False
    if target is None:
        if not (new_name or "").strip():
            raise AnnotationError("Choose the code to merge into, or name a new one.")
        if new_parent is not None:
            _codes_in(codebook, [new_parent], "parent")
            if new_parent in sources:
                raise AnnotationError("A merged code cannot be the parent of the result.")
        first = sources[0]
        cleaned = _clean_code_fields(
            codebook,
            {
                "name": new_name,
                "parent": new_parent,
                "color": new_fields.get("color") or first.color,
                "gender_tag": new_fields.get("gender_tag", first.gender_tag),
                "kind": new_fields.get("kind", first.kind),
                "description": new_fields.get("description", ""),
            },
        )
        target = Code.objects.create(
            codebook=codebook, order=first.order, created_by=actor if getattr(actor, "pk", None) else None, **cleaned
        )
        created = True
    else:
        _codes_in(codebook, [target], "target code")
        if target in sources:
            raise AnnotationError(f"“{target.name}” cannot be merged into itself.")
        if not target.codable:
            raise AnnotationError(
                f"“{target.name}” is a dimension or group; merge into a codable code, or name a new code."
            )
        target_ancestors = {a.pk for a in target.ancestors()}
        for source in sources:
            if source.pk in target_ancestors:
                raise AnnotationError(f"“{source.name}” contains “{target.name}”; it cannot be merged into it.")
    entries: list[dict[str, Any]] = []
    for source in Code.objects.select_for_update().filter(pk__in=[s.pk for s in sources]).order_by("pk"):
        coding_ids = list(Coding.objects.filter(code=source).values_list("pk", flat=True))
        Coding.objects.filter(pk__in=coding_ids).update(code=target, updated_at=timezone.now())
        children = list(source.children.filter(active=True).values_list("pk", flat=True))
        Code.objects.filter(pk__in=children).update(parent=target)
        entries.append(
            {
                "code": source.pk,
                "codings": coding_ids,
                "children": children,
                "shortcut": source.shortcut,
                "merged_into": source.merged_into_id,
            }
        )
        source.active = False
        source.merged_into = target
        source.shortcut = ""
        source.save(update_fields=["active", "merged_into", "shortcut"])
    op = _record(
        codebook, OperationKind.MERGE, actor, {"target": target.pk, "created_target": created, "sources": entries}
    )
    record_activity(codebook.study, actor, "merged codes", f"{', '.join(s.name for s in sources)} → {target.name}")
    return target, op


@transaction.atomic
def move_codes(
    codebook: Codebook, codes: Iterable[Code], *, new_parent: Code | None = None, actor: Any = None
) -> CodeOperation:
    """Re-parent codes (None = top level), e.g. to regroup codes into another dimension."""
    CODEBOOKS.ensure_editable(codebook)
    codes = _codes_in(codebook, list(dict.fromkeys(codes)), "code")
    if not codes:
        raise AnnotationError("Choose at least one code to move.")
    if new_parent is not None:
        _codes_in(codebook, [new_parent], "new parent")
        blocked = {new_parent.pk} | {a.pk for a in new_parent.ancestors()}
        for code in codes:
            if code.pk in blocked:
                raise AnnotationError(f"“{code.name}” cannot be moved inside itself.")
    entries = [{"code": c.pk, "parent": c.parent_id, "order": c.order} for c in codes]
    Code.objects.filter(pk__in=[c.pk for c in codes]).update(parent=new_parent)
    op = _record(
        codebook, OperationKind.MOVE, actor, {"codes": entries, "new_parent": new_parent.pk if new_parent else None}
    )
    record_activity(
        codebook.study,
        actor,
        "moved codes",
        f"{', '.join(c.name for c in codes)} → {new_parent.name if new_parent else 'top level'}",
    )
    return op


@transaction.atomic
def split_code(
    code: Code,
    codings: Iterable[Any],
    *,
    target: Code | None = None,
    new_name: str | None = None,
    actor: Any = None,
    **new_fields: Any,
) -> tuple[Code, CodeOperation]:
    """Move the chosen codings of `code` to `target` or to a new sibling code `new_name`."""
    codebook = code.codebook
    CODEBOOKS.ensure_editable(codebook)
    _codes_in(codebook, [code], "code")
    ids = sorted({c.pk if hasattr(c, "pk") else int(c) for c in codings})
    if not ids:
        raise AnnotationError("Choose the codings that go to the new code.")
    found = set(Coding.objects.filter(pk__in=ids, code=code).values_list("pk", flat=True))
    if found != set(ids):
        raise AnnotationError(f"{len(set(ids) - found)} of the chosen codings do not carry “{code.name}”.")
    created = False
    if target is None:
        cleaned = _clean_code_fields(
            codebook,
            {
                "name": new_name or "",
                "parent": code.parent,
                "color": new_fields.get("color") or code.color,
                "gender_tag": new_fields.get("gender_tag", code.gender_tag),
                "kind": new_fields.get("kind", code.kind),
                "description": new_fields.get("description", ""),
            },
        )
        target = Code.objects.create(
            codebook=codebook, order=code.order, created_by=actor if getattr(actor, "pk", None) else None, **cleaned
        )
        created = True
    else:
        _codes_in(codebook, [target], "target code")
        if target.pk == code.pk:
            raise AnnotationError("Split into a different code.")
        if not target.codable:
            raise AnnotationError(f"“{target.name}” is a dimension or group, not a codable code.")
    Coding.objects.filter(pk__in=ids).update(code=target, updated_at=timezone.now())
    op = _record(
        codebook,
        OperationKind.SPLIT,
        actor,
        {"code": code.pk, "target": target.pk, "created_target": created, "codings": ids},
    )
    record_activity(codebook.study, actor, "split code", f"{code.name} → {target.name} ({len(ids)} codings)")
    return target, op


def latest_operation(codebook: Codebook) -> CodeOperation | None:
    return codebook.operations.filter(undone_at__isnull=True).order_by("-created_at", "-id").first()


@transaction.atomic
def undo_operation(op: CodeOperation, *, actor: Any = None) -> str:
    """Reverse one operation exactly. Only the latest not-undone operation of a codebook can be undone."""
    op = CodeOperation.objects.select_for_update().get(pk=op.pk)
    codebook = op.codebook
    CODEBOOKS.ensure_editable(codebook)
    if op.undone_at:
        raise AnnotationError("This operation was already undone.")
    latest = latest_operation(codebook)
    assert latest is not None  # op itself is not undone
    if latest.pk != op.pk:
        raise AnnotationError(
            f"Undo the later {latest.get_kind_display().lower()} (#{latest.pk}) first; history is undone newest first."
        )
    p = op.payload
    note = ""
    if op.kind == OperationKind.MERGE:
        target = Code.objects.get(pk=p["target"])
        for entry in p["sources"]:
            Coding.objects.filter(pk__in=entry["codings"], code=target).update(
                code_id=entry["code"], updated_at=timezone.now()
            )
            Code.objects.filter(pk__in=entry["children"], parent=target).update(parent_id=entry["code"])
            source = Code.objects.get(pk=entry["code"])
            source.active = True
            source.merged_into_id = entry["merged_into"]
            clash = (
                entry["shortcut"]
                and codebook.codes.filter(active=True, shortcut__iexact=entry["shortcut"])
                .exclude(pk=source.pk)
                .exists()
            )
            source.shortcut = "" if clash else entry["shortcut"]
            source.save(update_fields=["active", "merged_into", "shortcut"])
        if p["created_target"]:
            note = _drop_created(target)
    elif op.kind == OperationKind.SPLIT:
        target = Code.objects.get(pk=p["target"])
        Coding.objects.filter(pk__in=p["codings"], code=target).update(code_id=p["code"], updated_at=timezone.now())
        if p["created_target"]:
            note = _drop_created(target)
    elif op.kind == OperationKind.MOVE:
        for entry in p["codes"]:
            Code.objects.filter(pk=entry["code"]).update(parent_id=entry["parent"], order=entry["order"])
    elif op.kind == OperationKind.RENAME:
        code = Code.objects.get(pk=p["code"])
        for key, value in p["before"].items():
            setattr(code, key + "_id" if key in ("parent", "item") else key, value)
        code.save()
    elif op.kind == OperationKind.CREATE:
        created_code = Code.objects.filter(pk=p["code"]).first()
        if created_code is not None:
            if created_code.codings.exists() or created_code.children.exists():
                raise AnnotationError(
                    f"“{created_code.name}” has codings or child codes now; remove them before undoing its creation."
                )
            created_code.delete()
    op.undone_at = timezone.now()
    op.save(update_fields=["undone_at"])
    record_activity(codebook.study, actor, f"undid {op.kind}", f"#{op.pk}")
    return note


def _drop_created(target: Code) -> str:
    """Remove a code a merge/split created, unless codings were added to it since; then keep it and say so."""
    left = target.codings.count()
    if left or target.children.exists():
        return f"“{target.name}” kept: {left} codings were added to it after the operation."
    target.delete()
    return ""
