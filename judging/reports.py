"""Reads for reports: verdict rows, detection rates, Table 3, weights and flags for one or more rounds."""

from collections import defaultdict

from django.utils import timezone

from . import weights as W
from .models import ItemWeight, JudgeRound, Verdict, VerdictStatus


def detected(value, template):
    """A verdict's 0/1 detection: binary templates as given; scales count from the template's threshold."""
    if template.scale_min == 0 and template.scale_max == 1:
        return int(value)
    return int(value >= template.detect_threshold)


def verdict_rows(rounds):
    """(rows for judging.weights, {item pk: item}) from the ok verdicts of `rounds`."""
    rows, items = [], {}
    for rnd in rounds:
        qs = (
            rnd.verdicts.filter(status=VerdictStatus.OK, value__isnull=False)
            .select_related("output", "output__item", "output__item__dimension", "output__item__toolkit")
            .order_by("pk")
        )
        for v in qs:
            item = v.output.item
            if item is None:
                continue
            items[item.pk] = item
            rows.append(
                {
                    "output": v.output_id,
                    "item": item.pk,
                    "position": v.position,
                    "dimension": item.dimension.name if item.dimension_id else "(no dimension)",
                    "generator": v.output.model_identity,
                    "judge": v.judge_model,
                    "value": detected(v.value, rnd.template),
                    "raw_value": v.value,
                }
            )
    return rows, items


def dimension_order(items):
    dims = {}
    for item in items.values():
        if item.dimension_id:
            dims[item.dimension.name] = (item.dimension.order, item.dimension.name)
        else:
            dims["(no dimension)"] = (10**6, "")
    return sorted(dims, key=lambda d: dims[d])


def by_position(rows):
    """Detection rate by position in the shuffled batch: a check for position effects."""
    cells = defaultdict(list)
    for r in rows:
        if r.get("position"):
            cells[r["position"]].append(r["value"])
    return [
        {"position": p, "n": len(v), "rate": sum(v) / len(v), "ci": W.wilson(sum(v), len(v))}
        for p, v in sorted(cells.items())
    ]


def mean_scores(rows):
    """Mean raw judge value per item (the Likert presence score for Likert templates)."""
    cells = defaultdict(list)
    for r in rows:
        cells[r["item"]].append(r["raw_value"])
    return {item: sum(v) / len(v) for item, v in cells.items()}


def weighted_scores(item_rows, generators, dimensions):
    """Per dimension × generator model: the weighted detection score Σ w·rate / Σ w over the dimension's prompts
    (and the raw score, the unweighted mean of the prompts' rates, beside it),
    with a prompt's imported weight (attached to its toolkit version) when it has one, else the computed weight."""
    out = []
    for dim in dimensions:
        rows = [r for r in item_rows if r["dimension"] == dim]
        cells = []
        for g in generators:
            pairs = [
                (
                    r["imported_weight"] if r.get("imported_weight") is not None else r["weight"],
                    r["by_generator"][g]["rate"],
                )
                for r in rows
                if r["by_generator"].get(g)
            ]
            total = sum(w for w, _ in pairs)
            cells.append(
                {
                    "model": g,
                    "score": sum(w * rate for w, rate in pairs) / total if total > 0 else None,
                    "raw": sum(rate for _, rate in pairs) / len(pairs) if pairs else None,
                }
            )
        out.append({"dimension": dim, "cells": cells})
    return out


def report(rounds, *, method=W.DEFAULT_METHOD, weak_below=0.3):
    """Everything the report page and the exports show, for one or more rounds."""
    rounds = list(rounds)
    rows, items = verdict_rows(rounds)
    item_stats = W.detection_by_item(rows)
    scores = mean_scores(rows)
    by_generator = W.detection_by(rows, "generator")
    by_judge = W.detection_by(rows, "judge")
    weighted = W.weights(item_stats, method=method) if item_stats else {}
    # Judges can only be compared on outputs they both judged (panel, k-of-n); in a rotation each judge sees
    # other writers, so a spread of judge rates says nothing about stability there.
    judges_per_output = defaultdict(int)
    for r in rows:
        judges_per_output[r["output"]] += 1
    shared = [r for r in rows if judges_per_output[r["output"]] > 1]
    flagged = W.flags(item_stats, W.detection_by(shared, "judge") if shared else None, weak_below=weak_below)
    dims = dimension_order(items)
    generators = sorted({r["generator"] for r in rows})
    judges = sorted({r["judge"] for r in rows})
    table = W.table3(rows, dimensions=dims, models=generators) if rows else None
    item_rows = []
    for pk, s in sorted(weighted.items(), key=lambda kv: (items[kv[0]].toolkit_id, items[kv[0]].number)):
        item = items[pk]
        item_rows.append(
            dict(
                s,
                item_pk=pk,
                item_number=item.number,
                toolkit=str(item.toolkit),
                toolkit_id=item.toolkit_id,
                toolkit_name=item.toolkit.name,
                toolkit_version=item.toolkit.version,
                text=item.text,
                target_stereotype=item.target_stereotype or item.gender_mapping,
                flags=flagged.get(pk, []),
                mean_score=scores.get(pk),
                by_generator={g: by_generator.get((pk, g)) for g in generators},
                by_judge={j: by_judge.get((pk, j)) for j in judges},
            )
        )
    imported = {w.item_id: w.weight for w in ItemWeight.objects.filter(item_id__in=list(items))}
    for r in item_rows:
        r["imported_weight"] = imported.get(r["item_pk"])
    return {
        "rounds": rounds,
        "rows": rows,
        "items": item_rows,
        "weighted": weighted_scores(item_rows, generators, dims),
        "uses_imported": bool(imported),
        "generators": generators,
        "judges": judges,
        "dimensions": dims,
        "table3": table,
        "matrix": W.judge_generator_matrix(rows),
        "method": method,
        "method_text": W.METHODS[method],
        "positions": by_position(rows),
        "weak_below": weak_below,
        "scale_max": max((r.template.scale_max for r in rounds), default=1),
    }


def provenance(rounds):
    """Who and what produced the weights: rounds, templates, judge panels, toolkits, date."""
    rounds = list(rounds)
    return {
        "rounds": [
            {
                "id": r.pk,
                "name": r.name,
                "policy": r.policy,
                "seed": r.seed,
                "batch_size": r.batch_size,
                "temperature": r.temperature,
                "template": {
                    "name": r.template.name,
                    "version": r.template.version,
                    "kind": r.template.kind,
                    "detect_threshold": r.template.detect_threshold,
                },
                "judge_panel": sorted({e.model_identity for e in r.judges.all()}),
                "source_run": r.source_run.name if r.source_run_id else None,
                "finished_at": r.finished_at.isoformat() if r.finished_at else None,
            }
            for r in rounds
        ],
        "generated_at": timezone.now().isoformat(),
    }


def rounds_of(study, round_ids=None):
    qs = JudgeRound.objects.filter(study=study).select_related("template", "source_run").prefetch_related("judges")
    if round_ids:
        qs = qs.filter(pk__in=list(round_ids))
    else:
        qs = qs.filter(verdicts__status=VerdictStatus.OK).distinct()
    return list(qs.order_by("pk"))


def heatmap(table):
    """Cells for the model × dimension heatmap: [{"dimension", "cells": [{"model", "mean", "sd", "shade"}]}]."""
    if not table:
        return []
    out = []
    for dim in table["dimensions"]:
        cells = []
        for model in table["models"] + ["All models"]:
            m, sd = table["all"][dim] if model == "All models" else table["cells"][(dim, model)]
            cells.append({"model": model, "mean": m, "sd": sd, "shade": shade(m)})
        out.append({"dimension": dim, "cells": cells})
    overall = [
        {
            "model": m,
            "mean": table["overall"][m][0],
            "sd": table["overall"][m][1],
            "shade": shade(table["overall"][m][0]),
        }
        for m in table["models"]
    ]
    overall.append(
        {
            "model": "All models",
            "mean": table["overall_all"][0],
            "sd": table["overall_all"][1],
            "shade": shade(table["overall_all"][0]),
        }
    )
    out.append({"dimension": "Overall", "cells": overall})
    return out


def shade(value):
    """An rgb() fill from white (0) to red (1) for heatmap cells, light enough that the dark values printed on it
    keep WCAG AA contrast (at least 5:1, tests/a11y/test_contrast.py)."""
    if value is None:
        return "rgb(240,240,240)"
    v = max(0.0, min(1.0, value))
    return f"rgb({255 - int(25 * v)},{int(255 - 145 * v)},{int(255 - 145 * v)})"


def bars(item_rows, width=420):
    """Geometry for the detection-bar chart: one bar per prompt with its Wilson interval."""
    out = []
    for i, row in enumerate(item_rows):
        out.append(
            {
                "y": 24 * i + 8,
                "label": f"{row['item_number']}",
                "rate": row["rate"],
                # a 0 rate still gets a visible 3 px marker (and a "0" label in the chart)
                "w": max(3.0, round(width * row["rate"], 1)),
                "zero": row["rate"] == 0,
                "lo": round(width * (row["ci_low"] or 0), 1),
                "hi": round(width * (row["ci_high"] or 0), 1),
                "flagged": bool(row["flags"]),
                "title": (
                    f"Item {row['item_number']}: {row['rate']:.2f} "
                    f"[{row['ci_low']:.2f}, {row['ci_high']:.2f}], n = {row['n']}"
                ),
            }
        )
    return {
        "bars": out,
        "height": 24 * len(out) + 30,
        "width": width,
        "ticks": [{"x": round(width * t / 4, 1), "label": f"{t / 4:.2f}"} for t in range(5)],
    }


def matrix_cells(report_data):
    judges, generators, matrix = report_data["judges"], report_data["generators"], report_data["matrix"]
    rows = []
    for j in judges:
        cells = []
        for g in generators:
            cell = matrix.get((j, g))
            cells.append(
                {
                    "generator": g,
                    "n": cell["n"] if cell else 0,
                    "rate": cell["rate"] if cell else None,
                    "shade": shade(cell["rate"]) if cell else "rgb(250,250,250)",
                }
            )
        values = [matrix[(j, g)] for g in generators if (j, g) in matrix]
        n = sum(c["n"] for c in values)
        rows.append(
            {"judge": j, "cells": cells, "n": n, "rate": sum(c["rate"] * c["n"] for c in values) / n if n else None}
        )
    return rows


def item_breakdown(rows_by):
    out = defaultdict(dict)
    for (item, model), cell in rows_by.items():
        out[item][model] = cell
    return out


VERDICT_COLUMNS = [
    ("round_id", "Judge round id"),
    ("round", "Judge round name"),
    ("verdict_id", "Verdict id"),
    ("output_id", "Judged output id"),
    ("run", "Generation run of the output"),
    ("toolkit", "Toolkit name"),
    ("toolkit_version", "Toolkit version"),
    ("item_number", "Prompt item number"),
    ("dimension", "Dimension of the item"),
    ("target_stereotype", "The stereotype the judge was asked about"),
    ("generator_model", "Model that wrote the output"),
    ("trial", "Trial of the output"),
    ("judge_model", "Judge model (identity)"),
    ("judge_endpoint", "Judge endpoint name"),
    ("template", "Judge template name and version"),
    ("value", "Verdict: 0/1, or the Likert score"),
    ("detected", "0/1 detection (Likert: value at or above the template's threshold)"),
    ("status", "ok, missing, unparseable, failed or pending"),
    ("rationale", "The judge's rationale"),
    ("batch_ref", "Batch (one call) the verdict came from"),
    ("position", "Position of the story in its shuffled batch"),
    ("reasked", "Asked again alone after a missing/unparseable answer"),
    ("raw_text", "The judge's raw answer"),
]


def verdict_export_rows(study, round_ids=None, models=None, item_numbers=None, pseudonym=None):
    """One dict per verdict of the study's rounds (filters optional), in VERDICT_COLUMNS order."""

    qs = (
        Verdict.objects.filter(round__study=study)
        .select_related(
            "round",
            "round__template",
            "output",
            "output__run",
            "output__item",
            "output__item__dimension",
            "output__item__toolkit",
            "judge_endpoint",
        )
        .order_by("round_id", "pk")
    )
    if round_ids:
        qs = qs.filter(round_id__in=list(round_ids))
    if item_numbers:
        qs = qs.filter(output__item__number__in=list(item_numbers))
    if models:
        wanted = {m.strip().lower() for m in models}
        qs = [v for v in qs if v.output.model_identity in wanted or v.judge_model in wanted]
    for v in qs.iterator() if hasattr(qs, "iterator") else qs:
        item, template = v.output.item, v.round.template
        yield {
            "round_id": v.round_id,
            "round": v.round.name,
            "verdict_id": v.pk,
            "output_id": v.output_id,
            "run": v.output.run.name,
            "toolkit": item.toolkit.name if item else "",
            "toolkit_version": item.toolkit.version if item else "",
            "item_number": item.number if item else "",
            "dimension": item.dimension.name if item and item.dimension_id else "",
            "target_stereotype": v.question,
            "generator_model": v.output.model_identity,
            "trial": v.output.trial,
            "judge_model": v.judge_model,
            "judge_endpoint": v.judge_endpoint.name if v.judge_endpoint_id else "",
            "template": f"{template.name} v{template.version}",
            "value": v.value,
            "detected": detected(v.value, template) if v.value is not None else None,
            "status": v.status,
            "rationale": v.rationale,
            "batch_ref": v.batch_ref,
            "position": v.position,
            "reasked": v.reasked,
            "raw_text": v.raw_text,
        }
