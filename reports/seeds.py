"""Seed layouts: a study applied from a built-in recipe gets a section laying out its seed study's own tables,
citing the seed (recipes/library.py GALLERY). Keyed by the built-in recipe's name; the numbers come from the same
report functions the API serves."""

from .document import TITLES, Section, para, table
from .numbers import ci, integer, mean_sd, num, p_value


def seed_name(study):
    """The built-in recipe a study was applied from (matched by the recipe's study name), or None."""
    from recipes import library  # lazy: the apps' report modules load scipy and pandas on first use
    from recipes.models import AppliedRecipe  # lazy: the apps' report modules load scipy and pandas on first use

    applied = [a.recipe.get("study", {}).get("name") for a in AppliedRecipe.objects.filter(study=study)]
    names = set(applied) | {study.name}
    for name in library.names():
        try:
            if library.load(name).get("study", {}).get("name") in names:
                return name
        except ValueError:
            continue
    return None


def _fang(study, section):
    from judging import reports as judging_reports  # lazy: the apps' report modules load scipy and pandas on first use

    from .builder import table3_block, weights_block  # cycle: builder imports seeds

    for rnd in judging_reports.rounds_of(study):
        data = judging_reports.report([rnd])
        if not data["rows"]:
            continue
        block = table3_block(data, rnd.name, key=f"seed-table3-{rnd.pk}")
        block["title"] = f"Table 3 of the seed: detection rates by dimension and model ({rnd.name})"
        section.add(block, weights_block(data, rnd.name, key=f"seed-weights-{rnd.pk}"))
    _fang_phase1(study, section)


def _fang_phase1(study, section):
    """Phase 1: each model's scale scores against the scale midpoint (one-sample t), per score, and the ANOVA across
    models (psychometrics.reports.run_report's group tests)."""
    from psychometrics import (
        reports as psych_reports,
    )  # lazy: the apps' report modules load scipy and pandas on first use
    from psychometrics import (
        selectors as psychometrics,  # lazy: the apps' report modules load scipy and pandas on first use
    )

    for run in psychometrics.study_questionnaire_runs(study).filter(status="completed"):
        tests = psych_reports.run_report(run)["group_tests"] or {}
        one_sample = tests.get("one_sample") or []
        if not one_sample:
            continue
        rows = [
            [
                t["model"],
                t["score"],
                integer(t["n"]),
                mean_sd(t["mean"], t["sd"]),
                num(t["t"]),
                "—" if t["df"] is None else str(t["df"]),
                p_value(t["p"]),
                num(t["d"]),
            ]
            for t in one_sample
        ]
        values = [[None, None, t["n"], t["mean"], t["t"], t["df"], t["p"], t["d"]] for t in one_sample]
        reasons = sorted({t["note"] for t in one_sample if t.get("note")})
        anova = [
            f"{score}: F({a['df1']}, {a['df2']}) = {num(a['F'])}, p = {p_value(a['p'])}, η² = {num(a['eta2'])}"
            if a.get("F") is not None
            else f"{score}: ANOVA — ({a.get('note') or 'undefined'})"
            for score, a in (tests.get("anova") or {}).items()
        ]
        section.add(
            table(
                f"Phase 1: scale scores against the midpoint {num(tests.get('midpoint'))} ({run.name})",
                ["Model", "Score", "n", "M (SD)", "t", "df", "p", "d"],
                rows,
                values=values,
                note="Note. One-sample t against the scale midpoint, as in the seed's Phase 1."
                + (f" Across models: {'; '.join(anova)}." if anova else "")
                + (f" — : {'; '.join(reasons)}" if reasons else ""),
                key=f"seed-phase1-{run.pk}",
            )
        )


def _jung(study, section):
    from psychometrics import (
        reports as psych_reports,
    )  # lazy: the apps' report modules load scipy and pandas on first use
    from psychometrics import (
        selectors as psychometrics,  # lazy: the apps' report modules load scipy and pandas on first use
    )

    for run in psychometrics.study_questionnaire_runs(study).filter(status="completed"):
        report = psych_reports.run_report(run)
        rows, values = [], []
        for m in report["models"]:
            a = m["analysis"]
            names = [k for k in a["alpha"] if k != "total"]
            rows.append(
                [
                    m["endpoint"],
                    integer(a["n"]),
                    num(a["alpha"].get("total"), 2, bounded=True),
                    "; ".join(f"{k} {num(a['alpha'][k], 2, bounded=True)}" for k in names) or "—",
                    num(a.get("stratified_alpha"), 2, bounded=True),
                    num(a.get("omega_total"), 2, bounded=True),
                ]
            )
            values.append(
                [None, a["n"], a["alpha"].get("total"), None, a.get("stratified_alpha"), a.get("omega_total")]
            )
        if not rows:
            continue
        section.add(
            table(
                f"Reliability of “{run.instrument.name}” ({run.name})",
                ["Model", "n", "α", "α per subscale", "Stratified α", "ω"],
                rows,
                values=values,
                note="Note. As in the seed's reliability table: Cronbach's α, stratified α over the subscales and "
                "McDonald's ω total from the CFA. — : undefined (see the questionnaire notes).",
                key=f"seed-reliability-{run.pk}",
            )
        )
        for m in report["models"]:
            items = m["analysis"]["items"]
            section.add(
                table(
                    f"Item statistics of “{run.instrument.name}”, {m['endpoint']} ({run.name})",
                    ["Item", "Subscale", "n", "M (SD)", "Corrected item–total r", "α if deleted"],
                    [
                        [
                            i["item"],
                            i["subscale"] or "",
                            integer(i["n"]),
                            mean_sd(i["mean"], i["sd"]),
                            num(i["corrected_item_total_r"], 2, bounded=True),
                            num(i["alpha_if_deleted"], 2, bounded=True),
                        ]
                        for i in items
                    ],
                    values=[
                        [None, None, i["n"], i["mean"], i["corrected_item_total_r"], i["alpha_if_deleted"]]
                        for i in items
                    ],
                    note="Note. Recoded item values; the item–total r correlates the item with the rest of its "
                    "subscale.",
                    key=f"seed-items-{run.pk}-{m['endpoint']}",
                )
            )
    _jung_validity(study, section)


def comparison_kind(base, other):
    """How the seed reads the correlation of two questionnaire runs over the same contexts."""
    a, b = base.instrument, other.instrument
    if a.pk == b.pk:
        return "option_order" if other.option_order != base.option_order else "repeat"
    if a.parallel_of_id == b.pk or b.parallel_of_id == a.pk or a.name in b.name or b.name in a.name:
        return "alternate_form"
    return "convergent"


def _jung_validity(study, section):
    """Reliability and validity correlations of the first run's total with each other questionnaire run's total over
    the same contexts (psychometrics.reports.compare_runs: alternate form, option order, convergent)."""
    from psychometrics import (
        reports as psych_reports,
    )  # lazy: the apps' report modules load scipy and pandas on first use
    from psychometrics import (
        selectors as psychometrics,  # lazy: the apps' report modules load scipy and pandas on first use
    )

    runs = list(psychometrics.study_questionnaire_runs(study).filter(status="completed"))
    if len(runs) < 2:
        return
    base = runs[0]
    rows, values = [], []
    for other in runs[1:]:
        kind = comparison_kind(base, other)
        result = psych_reports.compare_runs(base, other, kind)
        for r in result["rows"]:
            if r["score"] != "total":
                continue
            rows.append(
                [
                    other.name,
                    result["title"],
                    r["model"],
                    integer(r["n"]),
                    num(r["r"], 2, bounded=True),
                    ci(r["ci_low"], r["ci_high"], 2, bounded=True),
                    p_value(r["p"]),
                    str(r["rating"] or "—"),
                ]
            )
            values.append([other.pk, None, None, r["n"], r["r"], None, r["p"], None])
    if rows:
        section.add(
            table(
                f"Reliability and validity correlations with “{base.name}”",
                ["Run", "Reading", "Model", "n", "r", "95% CI", "p", "Rating"],
                rows,
                values=values,
                note="Note. Pearson r of total scores over the same contexts, Fisher-z 95% CI; ratings after the "
                "seed (— : undefined, e.g. no variance in a total).",
                key="seed-validity",
            )
        )


def _wan(study, section):
    from measures import selectors as measures  # lazy: the apps' report modules load scipy and pandas on first use

    from .builder import category_block, forest_block  # cycle: builder imports seeds

    for run in measures.study_measure_runs(study).filter(status="completed").order_by("pk"):
        groups = measures.report(run)["groups"] or {}
        overall = groups.get("") or (next(iter(groups.values())) if groups else None)
        if not overall or not overall["categories"]:
            continue
        section.add(
            category_block(
                run,
                overall["categories"],
                f"seed-or-{run.pk}",
                title=f"Odds ratios and Welch t per lexicon category, as in the seed ({run.name})",
            ),
            forest_block(run, overall["categories"], f"seed-forest-{run.pk}"),
        )


def _regard(study, section):
    from .builder import _variables, chi2_block, gold_share_block  # cycle: builder imports seeds

    for variable, report, contrast in _variables(study):
        level = report["levels"].get("nominal")
        if level is not None:
            section.add(
                table(
                    f"Annotator agreement on “{variable.name}”",
                    ["Units", "Annotators", "α", "Fleiss' κ", "Full agreement"],
                    [
                        [
                            integer(level.n_units),
                            integer(level.n_raters),
                            num(level.krippendorff_alpha, 2, bounded=True),
                            num(level.fleiss_kappa, 2, bounded=True),
                            num(report.get("full_agreement"), 2, bounded=True),
                        ]
                    ],
                    values=[
                        [
                            level.n_units,
                            level.n_raters,
                            level.krippendorff_alpha,
                            level.fleiss_kappa,
                            report.get("full_agreement"),
                        ]
                    ],
                    note="Note. Units with any excluded label (e.g. uncertain) dropped first, as in the seed.",
                    key=f"seed-agreement-{variable.pk}",
                )
            )
        section.add(gold_share_block(variable, report, f"seed-gold-{variable.pk}"))
        if contrast is not None:
            section.add(chi2_block(variable, contrast, f"seed-chi2-{variable.pk}")[0])


def _rupsycho(study, section):
    from psychometrics import (
        reports as psych_reports,
    )  # lazy: the apps' report modules load scipy and pandas on first use
    from psychometrics import (
        selectors as psychometrics,  # lazy: the apps' report modules load scipy and pandas on first use
    )

    for run in psychometrics.study_questionnaire_runs(study).filter(status="completed"):
        tests = psych_reports.run_report(run)["attribute_tests"]
        rows, values = [], []
        for t in tests:
            means = t.get("means") or {}
            stat = t.get("t") if t.get("test") == "Welch t" else t.get("F")
            rows.append(
                [
                    t["endpoint"],
                    t["attribute"],
                    t["score"],
                    "; ".join(f"{g} {num(v)}" for g, v in means.items()) or "—",
                    str(t.get("test") or "—"),
                    num(stat),
                    p_value(t.get("p")),
                    num(t.get("d") if t.get("test") == "Welch t" else t.get("eta2")),
                ]
            )
            values.append(
                [
                    None,
                    None,
                    None,
                    None,
                    None,
                    stat,
                    t.get("p"),
                    t.get("d") if t.get("test") == "Welch t" else t.get("eta2"),
                ]
            )
        if rows:
            notes = sorted({t["note"] for t in tests if t.get("note")})
            section.add(
                table(
                    f"Scores per persona attribute ({run.name})",
                    ["Model", "Attribute", "Score", "Means", "Test", "t / F", "p", "d / η²"],
                    rows,
                    values=values,
                    note="Note. Each model's scores compared across the values of a persona attribute."
                    + (f" — : {'; '.join(notes)}." if notes else ""),
                    key=f"seed-attributes-{run.pk}",
                )
            )


LAYOUTS = {
    "fang2025": _fang,
    "jung2025-asi": _jung,
    "wan2023-letters": _wan,
    "regard": _regard,
    "rupsycho-personas": _rupsycho,
}


def section(study):
    from recipes import library  # lazy: the apps' report modules load scipy and pandas on first use

    name = seed_name(study)
    if name is None:
        return None
    entry = library.gallery_entry(name) or {"title": name, "citation": ""}
    result = Section("seed", f"{TITLES['seed']}: {entry['title']}")
    result.add(para(f"This study was applied from the built-in recipe “{name}”, after {entry['citation']}"))
    layout = LAYOUTS.get(name)
    before = len(result.blocks)
    if layout is not None:
        layout(study, result)
    if len(result.blocks) == before:
        result.add(para("The seed's tables fill in once the study's runs are completed."))
    return result
