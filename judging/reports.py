"""Reads for reports: verdict rows, detection rates, Table 3, weights and flags for one or more rounds."""
from collections import defaultdict

from django.utils import timezone

from . import weights as W
from .models import JudgeRound, VerdictStatus


def detected(value, template):
    """A verdict's 0/1 detection: binary templates as given; scales count from the template's threshold."""
    if template.scale_min == 0 and template.scale_max == 1:
        return int(value)
    return int(value >= template.detect_threshold)


def verdict_rows(rounds):
    """(rows for judging.weights, {item pk: item}) from the ok verdicts of `rounds`."""
    rows, items = [], {}
    for rnd in rounds:
        qs = (rnd.verdicts.filter(status=VerdictStatus.OK, value__isnull=False)
              .select_related("output", "output__item", "output__item__dimension", "output__item__toolkit")
              .order_by("pk"))
        for v in qs:
            item = v.output.item
            if item is None:
                continue
            items[item.pk] = item
            rows.append({"output": v.output_id, "item": item.pk,
                         "dimension": item.dimension.name if item.dimension_id else "(no dimension)",
                         "generator": v.output.model_identity, "judge": v.judge_model,
                         "value": detected(v.value, rnd.template), "raw_value": v.value})
    return rows, items


def dimension_order(items):
    dims = {}
    for item in items.values():
        if item.dimension_id:
            dims[item.dimension.name] = (item.dimension.order, item.dimension.name)
        else:
            dims["(no dimension)"] = (10 ** 6, "")
    return sorted(dims, key=lambda d: dims[d])


def report(rounds, *, method="shrunk", weak_below=0.3):
    """Everything the report page and the exports show, for one or more rounds."""
    rounds = list(rounds)
    rows, items = verdict_rows(rounds)
    item_stats = W.detection_by_item(rows)
    by_generator = W.detection_by(rows, "generator")
    by_judge = W.detection_by(rows, "judge")
    weighted = W.weights(item_stats, method=method) if item_stats else {}
    flagged = W.flags(item_stats, by_judge, weak_below=weak_below)
    dims = dimension_order(items)
    generators = sorted({r["generator"] for r in rows})
    judges = sorted({r["judge"] for r in rows})
    table = W.table3(rows, dimensions=dims, models=generators) if rows else None
    item_rows = []
    for pk, s in sorted(weighted.items(), key=lambda kv: (items[kv[0]].toolkit_id, items[kv[0]].number)):
        item = items[pk]
        item_rows.append(dict(
            s, item_pk=pk, item_number=item.number, toolkit=str(item.toolkit), toolkit_id=item.toolkit_id,
            toolkit_name=item.toolkit.name, toolkit_version=item.toolkit.version, text=item.text,
            target_stereotype=item.target_stereotype or item.gender_mapping, flags=flagged.get(pk, []),
            by_generator={g: by_generator.get((pk, g)) for g in generators},
            by_judge={j: by_judge.get((pk, j)) for j in judges}))
    return {"rounds": rounds, "rows": rows, "items": item_rows, "generators": generators, "judges": judges,
            "dimensions": dims, "table3": table, "matrix": W.judge_generator_matrix(rows), "method": method,
            "method_text": W.METHODS[method]}


def provenance(rounds):
    """Who and what produced the weights: rounds, templates, judge panels, toolkits, date."""
    rounds = list(rounds)
    return {
        "rounds": [{"id": r.pk, "name": r.name, "policy": r.policy, "seed": r.seed, "batch_size": r.batch_size,
                    "temperature": r.temperature, "template": {"name": r.template.name, "version": r.template.version,
                                                               "kind": r.template.kind,
                                                               "detect_threshold": r.template.detect_threshold},
                    "judge_panel": sorted({e.model_identity for e in r.judges.all()}),
                    "source_run": r.source_run.name if r.source_run_id else None,
                    "finished_at": r.finished_at.isoformat() if r.finished_at else None} for r in rounds],
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
    overall = [{"model": m, "mean": table["overall"][m][0], "sd": table["overall"][m][1], "shade": shade(table["overall"][m][0])}
               for m in table["models"]]
    overall.append({"model": "All models", "mean": table["overall_all"][0], "sd": table["overall_all"][1],
                    "shade": shade(table["overall_all"][0])})
    out.append({"dimension": "Overall", "cells": overall})
    return out


def shade(value):
    """An rgb() fill from white (0) to deep red (1) for heatmap cells."""
    if value is None:
        return "rgb(240,240,240)"
    v = max(0.0, min(1.0, value))
    return f"rgb({255 - int(40 * v)},{int(255 - 190 * v)},{int(255 - 190 * v)})"


def bars(item_rows, width=420):
    """Geometry for the detection-bar chart: one bar per prompt with its Wilson interval."""
    out = []
    for i, row in enumerate(item_rows):
        out.append({"y": 24 * i + 8, "label": f"{row['item_number']}", "rate": row["rate"],
                    "w": round(width * row["rate"], 1), "lo": round(width * (row["ci_low"] or 0), 1),
                    "hi": round(width * (row["ci_high"] or 0), 1), "flagged": bool(row["flags"]),
                    "title": f"Item {row['item_number']}: {row['rate']:.2f} [{row['ci_low']:.2f}, {row['ci_high']:.2f}], n = {row['n']}"})
    return {"bars": out, "height": 24 * len(out) + 30, "width": width, "ticks": [
        {"x": round(width * t / 4, 1), "label": f"{t / 4:.2f}"} for t in range(5)]}


def matrix_cells(report_data):
    judges, generators, matrix = report_data["judges"], report_data["generators"], report_data["matrix"]
    rows = []
    for j in judges:
        cells = []
        for g in generators:
            cell = matrix.get((j, g))
            cells.append({"generator": g, "n": cell["n"] if cell else 0, "rate": cell["rate"] if cell else None,
                          "shade": shade(cell["rate"]) if cell else "rgb(250,250,250)"})
        values = [matrix[(j, g)] for g in generators if (j, g) in matrix]
        n = sum(c["n"] for c in values)
        rows.append({"judge": j, "cells": cells, "n": n,
                     "rate": sum(c["rate"] * c["n"] for c in values) / n if n else None})
    return rows


def item_breakdown(rows_by):
    out = defaultdict(dict)
    for (item, model), cell in rows_by.items():
        out[item][model] = cell
    return out
