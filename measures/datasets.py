"""Export datasets of the measures app: per-output measures (long format), per-sentence labels, stored contrasts,
Jung's per-context scores."""

import json

from stereoscope.datasets import Column, register_dataset

from .contrasts import json_clean, per_context_scores
from .models import ContrastResult, LexiconCategory, MeasureRun, OutputMeasure
from .selectors import packed_sentences, sentence_record

MEASURE_COLUMNS = (
    Column("measure_run_id", "Measure run id."),
    Column("measure_run", "Measure run name."),
    Column("output_id", "Output (story) id; joins the outputs dataset."),
    Column("generation_run_id", "Generation run of the output."),
    Column("model", "Model that wrote the output."),
    Column("item_number", "Prompt item number."),
    Column("dimension", "Toolkit dimension (context type) of the item."),
    Column("trial", "Trial number."),
    Column("variant_key", "Canonical slot values of the prompt variant."),
    Column("language", "Language the lexicon categories were applied for."),
    Column("gender", "Subject gender: F, M or empty (unknown)."),
    Column("gender_source", "Where the gender came from: slots, coders, pronouns or none."),
    Column("words", "Number of words (letters/digits joined by inner hyphens or apostrophes)."),
    Column("sentences", "Number of sentences (the documented splitting rule in stereoscope/stats/textproc.py)."),
    Column(
        "measure",
        "lexicon:<lexicon> v<version>:<category key> (matches), share:<label> (share of sentences), "
        "doc_label, score (mean classifier score).",
    ),
    Column("value", "The measure's value for this output."),
    Column("direction", "Stereotyped direction of a lexicon category (male, female, none)."),
    Column("classifier", "Classifier model id and revision for classifier measures."),
)


def _measures(study, options):
    qs = OutputMeasure.objects.filter(run__study=study)
    if options.get("run_ids"):
        qs = qs.filter(output__run_id__in=options["run_ids"])
    if options.get("models"):
        qs = qs.filter(output__model_name__in=options["models"])
    if options.get("item_numbers"):
        qs = qs.filter(output__item__number__in=options["item_numbers"])
    return qs


@register_dataset(
    "text_measures",
    title="Text measures per output (lexicon counts, classifier shares, subject gender)",
    app="measures",
    columns=MEASURE_COLUMNS,
)
def text_measure_rows(study, options):
    runs = {r.pk: r for r in MeasureRun.objects.filter(study=study)}
    categories = {
        str(c.pk): c
        for c in LexiconCategory.objects.filter(lexicon__measure_runs__study=study).select_related("lexicon")
    }
    qs = _measures(study, options).select_related("output__item__dimension").order_by("run_id", "output_id")
    for m in qs.iterator(chunk_size=1000):
        run, out = runs[m.run_id], m.output
        info = run.classifier_info or {}
        classifier = f"{info.get('model_id', '')}@{info.get('revision', '')}" if run.classifier else ""
        base = {
            "measure_run_id": run.pk,
            "measure_run": run.name,
            "output_id": out.pk,
            "generation_run_id": out.run_id,
            "model": out.model_name,
            "item_number": out.item.number if out.item_id else None,
            "dimension": out.item.dimension.name if out.item_id and out.item.dimension_id else "",
            "trial": out.trial,
            "variant_key": out.variant_key,
            "language": m.language,
            "gender": m.gender,
            "gender_source": m.gender_source,
            "words": m.word_count,
            "sentences": m.sentence_count,
        }
        for key, n in m.category_counts.items():
            cat = categories.get(key)
            if cat is None:
                continue
            yield {
                **base,
                "measure": f"lexicon:{cat.lexicon.name} v{cat.lexicon.version}:{cat.key}",
                "value": n,
                "direction": cat.direction,
                "classifier": "",
            }
        if run.classifier:
            for label, share in sorted(m.label_shares.items()):
                yield {**base, "measure": f"share:{label}", "value": share, "direction": "", "classifier": classifier}
            if m.doc_label:
                yield {**base, "measure": "doc_label", "value": m.doc_label, "direction": "", "classifier": classifier}
            yield {**base, "measure": "score", "value": m.mean_score, "direction": "", "classifier": classifier}


SENTENCE_COLUMNS = (
    Column("measure_run_id", "Measure run id."),
    Column("output_id", "Output id."),
    Column("gender", "Subject gender of the output (F, M, empty)."),
    Column("sentence", "Sentence index in the output, from 0."),
    Column("start", "Start offset (code points) in the output text."),
    Column("end", "End offset (code points, exclusive)."),
    Column("text", "The sentence."),
    Column("label", "Classifier label."),
    Column("score", "Classifier score (VADER compound, or the predicted label's probability)."),
    Column("scores", "Every label's score as JSON."),
    Column("classifier", "Classifier model id."),
    Column("revision", "Classifier revision."),
)


@register_dataset("text_sentences", title="Classifier labels per sentence", app="measures", columns=SENTENCE_COLUMNS)
def text_sentence_rows(study, options):
    runs = {r.pk: r for r in MeasureRun.objects.filter(study=study)}
    for om, text, s in packed_sentences(_measures(study, options).order_by("run_id", "output_id")):
        info = runs[om.run_id].classifier_info or {}
        yield {"measure_run_id": om.run_id, **sentence_record(om, text, s, info), "scores": s.scores}


CONTRAST_COLUMNS = (
    Column("measure_run_id", "Measure run id."),
    Column("kind", "category (odds ratio + rate tests), context_score, classifier, chi2, paired, word_or, fairness."),
    Column("measure", "cat:<category id>, lexicon:<id>, share:<label>, score, labels, rate:<category id>, words."),
    Column("name", "Readable name of the measure (category, lexicon or label)."),
    Column("grouping", "overall, model, item or dimension."),
    Column("group", "The group's value (e.g. the model)."),
    Column("odds_ratio", "Jung's category odds ratio (OR_male for male-typed, OR_female for female-typed categories)."),
    Column("zero_policy", "How zero counts were treated: exclude (no OR) or smooth (+0.5 per cell)."),
    Column("context_score", "Mean of the category ORs of a lexicon (Jung's context score)."),
    Column("statistic", "t (Welch or paired) or χ²."),
    Column("df", "Degrees of freedom."),
    Column("p", "Two-sided p value."),
    Column("stars", "* p < .1, ** p < .05, *** p < .01."),
    Column("effect_size", "Cohen's d (Welch), d_z (paired) or Cramér's V (χ²)."),
    Column("n_f", "Female-subject outputs (or pairs)."),
    Column("n_m", "Male-subject outputs."),
    Column("result", "The full stored result as JSON."),
)


def _summary(kind, result):
    if kind == "category":
        w = result.get("rate_tests", {}).get("welch", {})
        return {
            "name": result.get("category"),
            "odds_ratio": result["odds_ratio"].get("or"),
            "zero_policy": result["odds_ratio"].get("zero_policy"),
            "statistic": w.get("t"),
            "df": w.get("df"),
            "p": w.get("p"),
            "stars": w.get("stars"),
            "effect_size": w.get("cohens_d"),
        }
    if kind == "context_score":
        return {"name": result.get("lexicon"), "context_score": result.get("score")}
    if kind == "classifier":
        w = result.get("tests", {}).get("welch", {})
        return {
            "name": result.get("label"),
            "statistic": w.get("t"),
            "df": w.get("df"),
            "p": w.get("p"),
            "stars": w.get("stars"),
            "effect_size": w.get("cohens_d"),
        }
    if kind == "chi2":
        return {
            "name": "labels",
            "statistic": result.get("chi2"),
            "df": result.get("df"),
            "p": result.get("p"),
            "stars": result.get("stars"),
            "effect_size": result.get("cramers_v"),
        }
    if kind == "paired":
        r = result.get("result", {})
        return {
            "name": result.get("name"),
            "statistic": r.get("t"),
            "df": r.get("df"),
            "p": r.get("p"),
            "stars": r.get("stars"),
            "effect_size": r.get("cohens_dz"),
            "n_f": result.get("n_pairs"),
            "n_m": result.get("n_pairs"),
        }
    return {}


@register_dataset(
    "text_contrasts",
    title="Female vs male contrasts of text measures (tests, odds ratios)",
    app="measures",
    columns=CONTRAST_COLUMNS,
)
def text_contrast_rows(study, options):
    qs = ContrastResult.objects.filter(run__study=study).order_by("run_id", "kind", "grouping", "group", "measure")
    for c in qs.iterator(chunk_size=1000):
        row = {col.name: None for col in CONTRAST_COLUMNS}
        row.update(
            {
                "measure_run_id": c.run_id,
                "kind": c.kind,
                "measure": c.measure,
                "grouping": c.grouping,
                "group": c.group,
                "n_f": c.result.get("n_f"),
                "n_m": c.result.get("n_m"),
                "result": c.result,
            }
        )
        row.update({k: v for k, v in _summary(c.kind, c.result).items() if v is not None or k not in row})
        yield row


CONTEXT_SCORE_COLUMNS = (
    Column("measure_run_id", "Measure run id."),
    Column("endpoint", "Endpoint name of the generation run that wrote the texts."),
    Column("model", "Model id that wrote the texts."),
    Column("context", "Context key the texts were generated in (e.g. a persona)."),
    Column("lexicon", "Lexicon whose category ORs are averaged."),
    Column("context_score", "Jung's context score: mean of the category ORs in this context (empty = undefined)."),
    Column("n_categories", "Categories with a defined OR (of all male- or female-typed categories)."),
    Column("n_f", "Female-subject texts in this context."),
    Column("n_m", "Male-subject texts in this context."),
    Column("ors", "The category ORs (JSON)."),
)


@register_dataset(
    "text_context_scores",
    title="Jung's context scores of texts generated in contexts (per context)",
    app="measures",
    columns=CONTEXT_SCORE_COLUMNS,
)
def text_context_score_rows(study, options):

    options = options or {}
    runs = MeasureRun.objects.filter(study=study).order_by("pk")
    if options.get("run_ids"):
        runs = runs.filter(pk__in=options["run_ids"])
    for run in runs:
        for s in per_context_scores(run):
            yield {
                "measure_run_id": run.pk,
                "endpoint": s["endpoint"],
                "model": s["model"],
                "context": s["context"],
                "lexicon": s["lexicon"],
                "context_score": s["score"],
                "n_categories": s["n_categories"],
                "n_f": s["n_f"],
                "n_m": s["n_m"],
                "ors": json.dumps(json_clean(s["ors"]), sort_keys=True),
            }
