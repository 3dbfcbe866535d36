"""The study report: what the study holds, in the order of a paper (Methods, Results, the seed study's tables,
Reproducibility). Every number is read from the database through the apps' own report functions (judging's
Table 3 and weights, agreement's study report and variables, psychometrics' run report, measures' contrasts), never
computed again here; numbers are printed by numbers.py ("—" with the reason when undefined)."""

import hashlib
import json
from collections import Counter, defaultdict
from importlib import metadata
from pathlib import Path

from django.utils import timezone

from . import render, seeds
from . import svg as figures
from .document import SECTION_KEYS, TITLES, Document, Section, bullets, code, figure, heading, para, table
from .numbers import DASH, ci, defined, integer, mean_sd, num, p_value, pct
from .services import chosen_sections


def _date(value):
    return value.strftime("%Y-%m-%d") if value else "not run"


def _span(starts, ends):
    starts, ends = [s for s in starts if s], [e for e in ends if e]
    if not starts:
        return "not run"
    first, last = _date(min(starts)), _date(max(ends)) if ends else "unfinished"
    return first if first == last else f"{first} to {last}"


def _params(params):
    return ", ".join(f"{k} = {v}" for k, v in sorted((params or {}).items())) or "provider defaults"


def _plural(n, one, many=None):
    return f"{integer(n)} {one if n == 1 else (many or one + 's')}"


# --- Methods --------------------------------------------------------------------------------------------------------


def _generation_methods(study, section):
    from generation import selectors as generation  # lazy: the apps' report modules load scipy and pandas on first use
    from generation.runs.providers.base import (
        merged_params,
    )  # lazy: the apps' report modules load scipy and pandas on first use

    runs = list(generation.study_runs(study).select_related("toolkit").prefetch_related("endpoints").order_by("pk"))
    if not runs:
        section.add(para("The study has no generation runs."))
        return
    used = defaultdict(lambda: {"starts": [], "ends": [], "params": None, "runs": []})
    for run in runs:
        for endpoint in run.endpoints.all():
            entry = used[endpoint.pk]
            entry["endpoint"] = endpoint
            entry["starts"].append(run.started_at)
            entry["ends"].append(run.finished_at)
            entry["params"] = merged_params(endpoint, run.param_overrides or {})
            entry["runs"].append(run.name)
    rows = []
    for entry in sorted(used.values(), key=lambda e: e["endpoint"].name):
        e = entry["endpoint"]
        rows.append([e.name, e.provider, e.model_id, _params(entry["params"]), _span(entry["starts"], entry["ends"])])
    section.add(
        heading("Models"),
        table(
            "Models, provider model ids, sampling parameters and run dates",
            ["Model", "Provider", "Provider model id", "Sampling parameters", "Run dates"],
            rows,
            note="Note. Sampling parameters are the endpoint's defaults merged with the run's overrides, as sent.",
            key="models",
        ),
        heading("Prompts and generations"),
    )
    for run in runs:
        counts = generation.run_output_counts(run)
        done = counts.get("done", 0)
        models = run.endpoints.count()
        if run.is_import:
            section.add(para(f"The run “{run.name}” holds {_plural(sum(counts.values()), 'imported output')}."))
            continue
        n_items = run.toolkit.items.count() if run.toolkit_id else 0
        contexts = len(run.contexts or [])
        grid = f"{_plural(n_items, 'prompt')} × {_plural(run.trials, 'trial')} × {_plural(models, 'model')}"
        if contexts:
            grid += f" × {_plural(contexts, 'context')}"
        toolkit = f" of the toolkit “{run.toolkit.name}” (version {run.toolkit.version})" if run.toolkit_id else ""
        section.add(
            para(
                f"The run “{run.name}” asked {grid}{toolkit}; {_plural(done, 'output')} were completed "
                f"({_span([run.started_at], [run.finished_at])})."
            )
        )


def _judging_methods(study, section):
    from judging import selectors as judging  # lazy: the apps' report modules load scipy and pandas on first use

    rounds = judging.study_rounds(study)
    if not rounds:
        return
    section.add(heading("Judging"))
    for rnd in rounds:
        judges = sorted(rnd.judges.all(), key=lambda e: e.name)
        plan = {
            "rotation": "in rotation, so that no model judges its own outputs",
            "panel": "by every judge of the panel",
            "k_of_n": f"by {rnd.k} of the {len(judges)} judges" if getattr(rnd, "k", None) else "by k of n judges",
        }.get(rnd.policy, f"with the policy {rnd.policy}")
        section.add(
            para(
                f"The outputs of “{rnd.source_run.name if rnd.source_run_id else 'the study'}” were judged in the "
                f"round "
                f"“{rnd.name}” with the template “{rnd.template.name}” (version {rnd.template.version}, "
                f"{rnd.template.kind}, detected from {rnd.template.detect_threshold}) by "
                f"{', '.join(f'{e.name} ({e.model_id})' for e in judges) or 'no judges'}, {plan} "
                f"(seed {rnd.seed}, {_plural(rnd.batch_size, 'output')} per call; "
                f"{_span([rnd.started_at], [rnd.finished_at])})."
            )
        )


def _coding_methods(study, section):
    from annotation import selectors as annotation  # lazy: the apps' report modules load scipy and pandas on first use

    books = list(annotation.study_codebooks(study).order_by("name", "version"))
    if not books:
        return
    section.add(heading("Coding"))
    for book in books:
        assignments = list(annotation.codebook_assignments(book).values_list("output_id", "coder_id", "mode"))
        codes = book.codes.count() if hasattr(book, "codes") else 0
        if not assignments:
            section.add(
                para(
                    f"The codebook “{book.name}” (version {book.version}, {_plural(codes, 'code')}) has no "
                    "assignments yet."
                )
            )
            continue
        per_output = Counter(o for o, _c, _m in assignments)
        coders = {c for _o, c, _m in assignments}
        modes = Counter(m for _o, _c, m in assignments)
        overlap = sorted(set(per_output.values()))
        overlap_text = str(overlap[0]) if len(overlap) == 1 else f"{overlap[0]} to {overlap[-1]}"
        mode_text = " and ".join(f"{m} ({n})" for m, n in sorted(modes.items()))
        section.add(
            para(
                f"With the codebook “{book.name}” (version {book.version}, {_plural(codes, 'code')}), "
                f"{_plural(len(coders), 'coder')} coded {_plural(len(per_output), 'output')} "
                f"({_plural(len(assignments), 'assignment')}; {overlap_text} coders per output) in {mode_text} mode; "
                "in blind mode a coder sees only their own codings."
            )
        )


def _questionnaire_methods(study, section):
    from psychometrics import (
        selectors as psychometrics,  # lazy: the apps' report modules load scipy and pandas on first use
    )

    runs = list(psychometrics.study_questionnaire_runs(study))
    if not runs:
        return
    section.add(heading("Questionnaires"))
    for run in runs:
        inst = run.instrument
        contexts = run.context_set.contexts.filter(included=True).count() if run.context_set_id else 0
        models = ", ".join(e.name for e in run.endpoints.order_by("name"))
        section.add(
            para(
                f"The questionnaire run “{run.name}” asked the instrument “{inst.name}” (version {inst.version}, "
                f"{_plural(inst.items.count(), 'item')}, scale {num(inst.scale_min, 0)} to {num(inst.scale_max, 0)}) "
                f"of {models or 'no models'} in {_plural(contexts or 1, 'context')} "
                f"× {_plural(run.repetitions, 'repetition')}, with the prompt template {run.template_key}, options "
                f"as {run.option_format} in {run.option_order} order (seed {run.order_seed}) "
                f"({_span([run.started_at], [run.finished_at])})."
            )
        )


def _measure_methods(study, section):
    from measures import selectors as measures  # lazy: the apps' report modules load scipy and pandas on first use

    runs = list(measures.study_measure_runs(study).prefetch_related("lexicons", "source_runs").order_by("pk"))
    if not runs:
        return
    section.add(heading("Measures and lexicons"))
    for run in runs:
        lexicons = [
            f"“{lx.name}” (version {lx.version}, {_plural(lx.categories.count(), 'category', 'categories')})"
            for lx in run.lexicons.order_by("name")
        ]
        sources = ", ".join(f"“{r.name}”" for r in run.source_runs.order_by("pk"))
        classifier = f"; classifier {run.classifier}" if run.classifier else ""
        section.add(
            para(
                f"The measure run “{run.name}” scored the outputs of {sources or 'no runs'} with the lexicons "
                f"{', '.join(lexicons) or 'none'}{classifier}; zero counts: {run.zero_policy} "
                f"({_span([run.started_at], [run.finished_at])})."
            )
        )


def methods(study):
    section = Section("methods", TITLES["methods"])
    if study.description:
        section.add(para(study.description))
    _generation_methods(study, section)
    _judging_methods(study, section)
    _coding_methods(study, section)
    _questionnaire_methods(study, section)
    _measure_methods(study, section)
    return section


# --- Results --------------------------------------------------------------------------------------------------------


def table3_block(data, round_name, key="table3"):
    """The seed's Table 3 (detection rate M (SD) by dimension × model, with all models and overall) of a judging
    report (judging.reports.report)."""
    t = data["table3"]
    models = t["models"]
    columns = ["Dimension", *models, "All models"]
    rows, values = [], []
    for dim in t["dimensions"]:
        cells = [t["cells"].get((dim, m), (None, None)) for m in models] + [t["all"].get(dim, (None, None))]
        rows.append([dim, *(mean_sd(*c) for c in cells)])
        values.append([None, *(c[0] for c in cells)])
    overall = [t["overall"].get(m, (None, None)) for m in models] + [t["overall_all"]]
    rows.append(["Overall", *(mean_sd(*c) for c in overall)])
    values.append([None, *(c[0] for c in overall)])
    return table(
        f"Detection rate by dimension and model ({round_name})",
        columns,
        rows,
        values=values,
        note="Note. M (SD) of the prompts' detection rates (share of a prompt's outputs judged to show the "
        "targeted stereotype). — : no outputs.",
        key=key,
    )


def weights_block(data, round_name, key="weights"):
    rows, values = [], []
    for item in data["items"]:
        rows.append(
            [
                str(item["item_number"]),
                item["dimension"],
                integer(item["n"]),
                pct(item["rate"]),
                ci(item["ci_low"], item["ci_high"], 2, bounded=True),
                num(item.get("weight")),
            ]
        )
        values.append([item["item_number"], None, item["n"], item["rate"], None, item.get("weight")])
    return table(
        f"Detection rate and weight per prompt ({round_name})",
        ["Prompt", "Dimension", "n", "Detected", "95% CI", "Weight"],
        rows,
        values=values,
        note=f"Note. 95% Wilson intervals. Weights: {data['method_text']}",
        key=key,
    )


def detection(study):
    from judging import reports as judging_reports  # lazy: the apps' report modules load scipy and pandas on first use

    section = Section("detection", TITLES["detection"])
    for rnd in judging_reports.rounds_of(study):
        data = judging_reports.report([rnd])
        if not data["rows"]:
            continue
        section.add(heading(f"Round “{rnd.name}”"), table3_block(data, rnd.name), weights_block(data, rnd.name))
        t3 = data["table3"]
        section.add(
            figure(
                f"Detection rate by dimension and model ({rnd.name})",
                "Heatmap: the mean detection rate of each dimension (rows) for each model (columns), darker = "
                "higher; the numbers are in the detection-rate table.",
                figures.heatmap(
                    f"fig-table3-{rnd.pk}",
                    f"Detection rate by dimension and model ({rnd.name})",
                    "Mean detection rate per dimension and model.",
                    t3["dimensions"],
                    t3["models"],
                    [[t3["cells"].get((d, m), (None, None))[0] for m in t3["models"]] for d in t3["dimensions"]],
                ),
            )
        )
        section.add(
            figure(
                f"Detection rate per prompt ({rnd.name})",
                "Horizontal bars: the share of each prompt's outputs judged to show the stereotype (0 to 100%); "
                "the numbers are in the table of detection rates and weights.",
                figures.bars(
                    f"fig-detect-{rnd.pk}",
                    f"Detection rate per prompt ({rnd.name})",
                    "Share of each prompt's outputs judged to show the targeted stereotype.",
                    [(f"Prompt {i['item_number']}", i["rate"]) for i in data["items"]],
                ),
            )
        )
    if not section.blocks:
        section.add(para("No judge verdicts yet."))
    return section


def _agreement_row(row):
    cis = row.get("ci95") or {}
    alpha_ci = cis.get("krippendorff_alpha") or (None, None)
    return [
        row["name"],
        integer(row["n_units"]),
        integer(row["n_raters"]),
        num(row["krippendorff_alpha"], 2, bounded=True),
        ci(*alpha_ci, 2, bounded=True),
        num(row["gwet_ac1"], 2, bounded=True),
        num(row["cohen_kappa_mean"], 2, bounded=True),
        pct(row["percent_agreement"]),
    ]


def agreement(study):
    from agreement import (
        services as agreement_services,
    )  # lazy: the apps' report modules load scipy and pandas on first use

    section = Section("agreement", TITLES["agreement"])
    report = agreement_services.cached_study_report(study, None, bootstrap=1000, low=agreement_services.LOW_ALPHA)
    rows = report["dimensions"] + report["codes"]
    if rows and any(r["n_ratings"] for r in rows):
        notes = sorted({n for r in rows for n in r["notes"]})
        section.add(
            table(
                f"Agreement among {_plural(len(report['coders']), 'coder')} per dimension and code",
                ["Dimension / code", "Units", "Raters", "α", "95% CI", "AC1", "κ (mean)", "Agreement"],
                [_agreement_row(r) for r in rows],
                values=[
                    [
                        None,
                        r["n_units"],
                        r["n_raters"],
                        r["krippendorff_alpha"],
                        None,
                        r["gwet_ac1"],
                        r["cohen_kappa_mean"],
                        r["percent_agreement"],
                    ]
                    for r in rows
                ],
                note="Note. Krippendorff's α (nominal) with a bootstrap 95% CI over units "
                f"({integer(report['bootstrap'])} resamples); AC1 = Gwet's AC1; κ = mean Cohen's κ over coder pairs. "
                f"α below {num(report['low_threshold'], 3, bounded=True)} supports tentative conclusions only. "
                "— : undefined" + (f" ({'; '.join(notes)})." if notes else "."),
                key="agreement",
            )
        )
    for variable, var_report, _contrast in _variables(study):
        level = var_report["levels"].get("nominal")
        if level is None:
            continue
        alpha_ci = (level.ci95 or {}).get("krippendorff_alpha") or (None, None)
        section.add(
            table(
                f"Agreement on “{variable.name}”",
                ["Units", "Raters", "α", "95% CI", "Fleiss' κ", "Agreement"],
                [
                    [
                        integer(level.n_units),
                        integer(level.n_raters),
                        num(level.krippendorff_alpha, 2, bounded=True),
                        ci(*alpha_ci, 2, bounded=True),
                        num(level.fleiss_kappa, 2, bounded=True),
                        pct(level.percent_agreement),
                    ]
                ],
                values=[
                    [
                        level.n_units,
                        level.n_raters,
                        level.krippendorff_alpha,
                        None,
                        level.fleiss_kappa,
                        level.percent_agreement,
                    ]
                ],
                note="Note. "
                + (
                    f"{integer(var_report['n_excluded'])} units dropped as excluded. "
                    if var_report["n_excluded"]
                    else ""
                )
                + ("; ".join(level.notes) or "Nominal level, bootstrap 95% CI."),
                key=f"variable-agreement-{variable.pk}",
            )
        )
    if not section.blocks:
        section.add(para("No codings yet."))
    return section


def _variables(study):
    """(variable, variable report, gender contrast or None) of each categorical variable with ratings."""
    from agreement import (
        contrasts as agreement_contrasts,
    )  # lazy: the apps' report modules load scipy and pandas on first use
    from agreement import (
        variables as agreement_variables,
    )  # lazy: the apps' report modules load scipy and pandas on first use
    from agreement.rating_tables import (
        AgreementRequestError,
    )  # lazy: the apps' report modules load scipy and pandas on first use
    from annotation import selectors as annotation  # lazy: the apps' report modules load scipy and pandas on first use

    out = []
    for variable in annotation.study_variables(study):
        report = agreement_variables.variable_report(study, variable)
        if not report["ratings"]:
            continue
        try:
            contrast = agreement_contrasts.label_contrast(study, variable, by="gender")
        except AgreementRequestError:
            contrast = None
        out.append((variable, report, contrast))
    return out


def gold_share_block(variable, report, key):
    counts = Counter(g["gold"] for g in report["gold"] if g["gold"])
    total = sum(counts.values())
    labels = list(report["values"])
    rows = [
        [label, integer(counts.get(label, 0)), pct(counts.get(label, 0) / total if total else None)] for label in labels
    ]
    values = [[None, counts.get(label, 0), counts.get(label, 0) / total if total else None] for label in labels]
    undecided = sum(1 for g in report["gold"] if not g["gold"])
    return table(
        f"Gold labels of “{variable.name}”",
        ["Label", "n", "Share"],
        rows,
        values=values,
        note=f"Note. Gold: {report['gold_rule']['text']} {integer(total)} units with a gold label"
        + (f"; {integer(undecided)} undecided (ties or too few raters)." if undecided else "."),
        key=key,
    )


def chi2_block(variable, contrast, key):
    c = contrast["contrast"]
    rows, values = [], []
    for group, row in zip(c.groups, c.table, strict=True):
        total = sum(row)
        rows.append([group, integer(total), *(f"{integer(n)} ({pct(n / total if total else None)})" for n in row)])
        values.append([None, total, *row])
    stat = (
        f"χ²({c.df}, N = {c.n}) = {num(c.chi2)}, p = {p_value(c.p_value)}, "
        f"Cramér's V = {num(c.cramers_v, 2, bounded=True)}"
        if defined(c.chi2)
        else f"χ² {DASH}: {'; '.join(c.notes) or 'undefined'}"
    )
    return table(
        f"Gold labels of “{variable.name}” by subject gender",
        ["Gender", "n", *c.labels],
        rows,
        values=values,
        note=f"Note. {stat}." + (f" {'; '.join(c.notes)}." if c.notes and defined(c.chi2) else ""),
        key=key,
    ), c


def gold(study):
    section = Section("gold", TITLES["gold"])
    for variable, report, contrast in _variables(study):
        section.add(gold_share_block(variable, report, f"gold-{variable.pk}"))
        if contrast is not None:
            section.add(chi2_block(variable, contrast, f"chi2-{variable.pk}")[0])
    if not section.blocks:
        section.add(para("No gold labels yet."))
    return section


def questionnaire_block(run, report, key):
    rows, values = [], []
    for m in report["models"]:
        a = m["analysis"]
        total = (a.get("descriptives") or {}).get("total") or {}
        rows.append(
            [
                m["endpoint"],
                integer(a["n"]),
                num(a["alpha"].get("total"), 2, bounded=True),
                num(a.get("stratified_alpha"), 2, bounded=True),
                num(a.get("omega_total"), 2, bounded=True),
                mean_sd(total.get("mean"), total.get("sd")),
            ]
        )
        values.append(
            [None, a["n"], a["alpha"].get("total"), a.get("stratified_alpha"), a.get("omega_total"), total.get("mean")]
        )
    notes = sorted({n for m in report["models"] for n in m["analysis"].get("notes", [])})
    return table(
        f"Reliability and scores of “{run.instrument.name}” ({run.name})",
        ["Model", "n", "α", "Stratified α", "ω", "Total M (SD)"],
        rows,
        values=values,
        note="Note. Cronbach's α of all items; stratified α over the subscales; McDonald's ω from the CFA. "
        + " ".join(notes),
        key=key,
    )


def questionnaires(study):
    from psychometrics import (
        reports as psych_reports,
    )  # lazy: the apps' report modules load scipy and pandas on first use
    from psychometrics import (
        selectors as psychometrics,  # lazy: the apps' report modules load scipy and pandas on first use
    )

    section = Section("questionnaires", TITLES["questionnaires"])
    for run in psychometrics.study_questionnaire_runs(study).filter(status="completed"):
        report = psych_reports.run_report(run)
        if not report["models"]:
            continue
        section.add(questionnaire_block(run, report, f"questionnaire-{run.pk}"))
        for m in report["models"]:
            hist = (m["analysis"].get("histograms") or {}).get("total") or []
            if not hist:
                continue
            title = f"Total scores of {m['endpoint']} ({run.name})"
            section.add(
                figure(
                    title,
                    "Histogram: how many respondents (contexts × repetitions) scored in each range of the total "
                    "score; the mean and SD are in the table.",
                    figures.bars(
                        f"fig-hist-{run.pk}-{len(section.blocks)}",
                        title,
                        "Number of respondents per score range.",
                        [(f"{num(b['lo'])} to {num(b['hi'])}", b["count"]) for b in hist],
                        maximum=max(b["count"] for b in hist) or 1,
                        digits=0,
                    ),
                )
            )
    if not section.blocks:
        section.add(para("No completed questionnaire runs."))
    return section


def category_block(run, categories, key, title=None):
    rows, values = [], []
    for c in categories:
        odds = c["odds_ratio"] or {}
        welch = (c.get("rate_tests") or {}).get("welch") or {}
        rows.append(
            [
                c["category"],
                c["lexicon"],
                integer(c["n_f"]),
                integer(c["n_m"]),
                num(odds.get("or")),
                num(welch.get("t")),
                num(welch.get("df"), 1),
                p_value(welch.get("p")),
                num(welch.get("cohens_d")),
            ]
        )
        values.append(
            [
                None,
                None,
                c["n_f"],
                c["n_m"],
                odds.get("or"),
                welch.get("t"),
                welch.get("df"),
                welch.get("p"),
                welch.get("cohens_d"),
            ]
        )
    reasons = sorted(
        {
            r
            for c in categories
            for r in (
                (c["odds_ratio"] or {}).get("note"),
                ((c.get("rate_tests") or {}).get("welch") or {}).get("error"),
            )
            if r
        }
    )
    return table(
        title or f"Lexical odds ratios and Welch t per category ({run.name})",
        ["Category", "Lexicon", "n F", "n M", "OR", "t", "df", "p", "d"],
        rows,
        values=values,
        note="Note. OR: odds ratio of category words in texts about men vs women (above 1 = male-salient); "
        "Welch t on per-text rates per 100 words (F − M), Cohen's d."
        + (f" — : {'; '.join(reasons)}." if reasons else ""),
        key=key,
    )


def forest_block(run, categories, key):
    rows = []
    for c in categories:
        odds = c["odds_ratio"] or {}
        rows.append((c["category"], odds.get("or"), odds.get("ci_low"), odds.get("ci_high")))
    return figure(
        f"Odds ratios per lexicon category ({run.name})",
        "Forest plot: each category's odds ratio on a log scale, the dashed line at OR = 1 (no difference); the "
        "numbers are in the table of odds ratios.",
        figures.forest(f"fig-forest-{run.pk}", f"Odds ratios ({run.name})", "Odds ratio per lexicon category.", rows),
        key=key,
    )


def contrasts(study):
    from measures import selectors as measures  # lazy: the apps' report modules load scipy and pandas on first use

    section = Section("contrasts", TITLES["contrasts"])
    for run in measures.study_measure_runs(study).filter(status="completed").order_by("pk"):
        report = measures.report(run)
        overall = (report["groups"] or {}).get("")
        if overall is None and report["groups"]:
            overall = next(iter(report["groups"].values()))
        if not overall or not overall["categories"]:
            continue
        section.add(category_block(run, overall["categories"], f"contrast-{run.pk}"))
        section.add(forest_block(run, overall["categories"], f"forest-{run.pk}"))
    if not section.blocks:
        section.add(para("No completed measure runs with lexicon categories."))
    return section


def classifiers(study):
    from measures import selectors as measures  # lazy: the apps' report modules load scipy and pandas on first use

    section = Section("classifiers", TITLES["classifiers"])
    rows, values = [], []
    for clf in measures.study_trained_classifiers(study):
        m = clf.metrics or {}
        rows.append(
            [
                f"{clf.name} v{clf.version}",
                integer(m.get("n")),
                str(clf.k),
                mean_sd(m.get("accuracy"), m.get("accuracy_sd")),
                num(m.get("baseline_accuracy")),
                mean_sd(m.get("macro_f1"), m.get("macro_f1_sd")),
                num(m.get("baseline_macro_f1")),
                p_value(m.get("permutation_p")),
            ]
        )
        values.append(
            [
                None,
                m.get("n"),
                clf.k,
                m.get("accuracy"),
                m.get("baseline_accuracy"),
                m.get("macro_f1"),
                m.get("baseline_macro_f1"),
                m.get("permutation_p"),
            ]
        )
    if rows:
        section.add(
            table(
                "Trained classifiers: cross-validation against the majority baseline",
                ["Classifier", "n", "Folds", "Accuracy M (SD)", "Baseline", "Macro F1 M (SD)", "Baseline F1", "p"],
                rows,
                values=values,
                note="Note. Stratified k-fold cross-validation; baseline: the majority class of each training fold on "
                "the same folds; p: permutation test of the CV accuracy. — : not computed.",
                key="classifiers",
            )
        )
    else:
        section.add(para("No trained classifiers."))
    return section


# --- Reproducibility ------------------------------------------------------------------------------------------------

DEPENDENCIES = ("django", "numpy", "scipy", "pandas", "scikit-learn", "krippendorff", "semopy", "statsmodels")


def dependency_versions():

    out = []
    for name in DEPENDENCIES:
        try:
            out.append((name, metadata.version(name)))
        except metadata.PackageNotFoundError:
            continue
    return out


def reproducibility(study):

    from exports.manifest import software  # lazy: the apps' report modules load scipy and pandas on first use
    from exports.selectors import latest_data_export  # lazy: as above, scipy and pandas load on first use
    from recipes.exporting import export_recipe  # lazy: the apps' report modules load scipy and pandas on first use
    from recipes.loader import dump  # lazy: the apps' report modules load scipy and pandas on first use

    section = Section("reproducibility", TITLES["reproducibility"])
    info = software()
    section.add(
        para(
            f"Built with Stereoscope {info['version']}"
            + (f" (commit {info['git_commit'][:12]})" if info["git_commit"] else " (no git commit recorded)")
            + f", Django {info['django']} and Python {info['python']}."
        ),
        table(
            "Dependency versions",
            ["Package", "Version"],
            [[name, version] for name, version in dependency_versions()],
            key="dependencies",
        ),
    )
    export = latest_data_export(study)  # the report's own PDFs are exports too, but not of the data
    if export is not None:
        manifest_hash = hashlib.sha256(
            json.dumps(export.manifest, sort_keys=True, ensure_ascii=False).encode("utf-8")
        ).hexdigest()
        section.add(
            para(
                f"The latest export bundle ({export.format}, {_date(export.created_at)}) has the SHA-256 "
                f"{export.sha256 or DASH}; its manifest hashes to {manifest_hash}."
            )
        )
    else:
        section.add(para("The study has no completed export bundle yet; export one to record its manifest hash."))
    try:
        recipe_text = dump(export_recipe(study))
    except ValueError as exc:
        recipe_text = None
        section.add(para(f"The study's recipe could not be written: {exc}"))
    section.add(
        heading("How to reproduce"),
        bullets(
            [
                "Save the recipe below as recipe.yaml and name your endpoints in endpoints.yaml.",
                "manage.py recipe apply recipe.yaml --endpoints endpoints.yaml",
                "manage.py recipe run recipe.yaml --endpoints endpoints.yaml",
            ]
        ),
    )
    if recipe_text:
        section.add(heading("Recipe"), code(recipe_text, "yaml"))
    return section


BUILDERS = {
    "methods": methods,
    "detection": detection,
    "agreement": agreement,
    "questionnaires": questionnaires,
    "contrasts": contrasts,
    "gold": gold,
    "classifiers": classifiers,
    "seed": seeds.section,
    "reproducibility": reproducibility,
}


def build(study, sections=None):
    """The report Document of a study with the chosen sections (default: the study's saved choice)."""

    keys = [k for k in SECTION_KEYS if k in (sections if sections is not None else chosen_sections(study))]
    doc = Document(
        title=study.name,
        subtitle=f"Study report, generated {timezone.now().strftime('%Y-%m-%d %H:%M UTC')}",
    )
    for key in keys:
        section = BUILDERS[key](study)
        if section is not None:
            doc.sections.append(section)
    return doc.number()


def write_pdf(study, path):
    """The study report as PDF at `path`, for the export job of format "report" (a worker): WeasyPrint's layout takes
    seconds and grows with the study, so no web request renders a PDF."""
    Path(path).write_bytes(render.pdf(build(study)))
