"""Export datasets of agreement: per code/dimension figures, the long rating tables (gold as a rater), gold labels.
Found by the registry's discovery of `<app>.datasets`."""

from stereoscope.datasets import Column, register_dataset

from . import services

COEF = ("krippendorff_alpha", "gwet_ac1", "cohen_kappa_mean", "percent_agreement")

AGREEMENT_COLUMNS = (
    Column("target", "code:<id> or dimension:<id> (document level: story × code)."),
    Column("kind", "code or dimension."),
    Column("name", "Code or dimension name."),
    Column("path", "Dimension/Group/Code path in the codebook."),
    Column("n_units", "Stories coded by at least one coder."),
    Column("n_double_coded", "Stories coded by two or more coders (the pairable units)."),
    Column("n_raters", "Coders in the table."),
    Column("prevalence", "Share of ratings that are 1 (code applied)."),
    Column("krippendorff_alpha", "Krippendorff's alpha, nominal (null with a note when undefined)."),
    Column("gwet_ac1", "Gwet's AC1 (robust to rare codes)."),
    Column("cohen_kappa_mean", "Mean of Cohen's kappa over coder pairs."),
    Column("percent_agreement", "Share of agreeing coder pairs per story, averaged."),
    *[Column(f"{c}_ci_low", f"Lower bound of the bootstrap 95% CI of {c} (1,000 resamples of stories).") for c in COEF],
    *[Column(f"{c}_ci_high", f"Upper bound of the bootstrap 95% CI of {c}.") for c in COEF],
    Column("low_agreement", "True when alpha is below .667 (Krippendorff's lowest acceptable level)."),
    Column("notes", "Why a coefficient is null, and bootstrap remarks."),
)


@register_dataset(
    "agreement", title="Inter-coder agreement per code and dimension", app="agreement", columns=AGREEMENT_COLUMNS
)
def agreement_dataset(study, options):
    yield from services.agreement_rows(study, options)


@register_dataset(
    "agreement_ratings",
    title="Rating tables behind agreement (coders, judges, checks, gold)",
    app="agreement",
    columns=(
        Column("target", "code:<id>, dimension:<id> or stereotype (judge verdicts per story)."),
        Column("unit", "Output (story) id."),
        Column("rater", "coder:<name>, check:<name> (human verification), judge:<model> or gold."),
        Column("value", "1/0 for codes and binary verdicts, 0-4 for Likert verdicts."),
    ),
)
def agreement_ratings_dataset(study, options):
    yield from services.rating_rows(study, options)


@register_dataset(
    "gold_labels",
    title="Adjudicated gold labels",
    app="agreement",
    columns=(
        Column(
            "target",
            "code:<id>, dimension:<id>, stereotype, variable:<id> (a story-level categorical variable) or "
            "variable:<id>:<unit> (a span-level variable's sentence s<n> or segment <start>-<end> of the story). "
            "Only the labels a researcher set; every variable's gold labels (majority and adjudicated) are in "
            "variable_gold.",
        ),
        Column("output_id", "Output (story) id."),
        Column(
            "value",
            "The gold value set by a researcher: 1/0 for codes and dimensions, 0-4 for stereotype verdicts, the "
            "value's position from 0 for variables (value_name gives its name).",
        ),
        Column("value_name", "The value's name for variable targets (e.g. neutral); the value itself otherwise."),
        Column("decided_by", "Who set it (pseudonym when pseudonymised)."),
        Column("note", "The adjudicator's note."),
        Column("updated_at", "When it was last set (ISO 8601, UTC)."),
    ),
)
def gold_labels_dataset(study, options):
    yield from services.gold_label_rows(study, options)


@register_dataset(
    "variable_ratings",
    title="Ratings of categorical variables (coders and judges)",
    app="agreement",
    columns=(
        Column("variable", "variable:<id> (a categorical code group)."),
        Column(
            "unit",
            "Output (story) id, or for a span-level variable the sentence '<story>:s<n>' the coders' spans cover; "
            "units where any rater chose an exclude value are left out.",
        ),
        Column("rater", "coder:<name> or judge:<model>."),
        Column("value", "The value (label) chosen."),
        Column("position", "The value's position in the variable (1 = first; for ordinal agreement)."),
    ),
)
def variable_ratings_dataset(study, options):
    from . import variables

    yield from variables.rating_rows(study, options)


@register_dataset(
    "variable_gold",
    title="Gold labels of categorical variables (every unit: majority of coders, ties, adjudication)",
    app="agreement",
    columns=(
        Column("variable", "variable:<id> (a categorical code group)."),
        Column("variable_name", "The variable's name."),
        Column(
            "unit",
            "Output (story) id, or for a span-level variable the unit '<story>:s<n>' (sentence) or "
            "'<story>:<start>-<end>' (segment); units where any rater chose an exclude value are left out.",
        ),
        Column("output_id", "Output (story) id of the unit."),
        Column("sentence", "Span-level sentence units: the sentence number (from 1); empty otherwise."),
        Column("start", "Span-level units: start offset in the story text (characters); empty otherwise."),
        Column("end", "Span-level units: end offset (exclusive); empty otherwise."),
        Column(
            "gold",
            "The gold value's name: the adjudicated value when a researcher set one, else the coders' label under "
            "the variable's gold rule; empty when undecided (tie, no majority, too few raters).",
        ),
        Column("gold_position", "The gold value's position in the variable (1 = first; for ordinal analyses)."),
        Column("majority", "The coders' label under the variable's gold rule (empty when there is none)."),
        Column("n_raters", "Coders who rated the unit."),
        Column("agreement_share", "Share of the unit's coders who chose the most frequent value."),
        Column("tie", "1 when two or more values are equally most frequent."),
        Column("undecided", "1 when the coders give no gold label (tie, no majority, too few raters)."),
        Column("reason", "Why there is no majority label (empty when there is one)."),
        Column("adjudicated", "The value a researcher set for the unit (empty when none)."),
        Column("decided_by", "Who set it (pseudonym when pseudonymised)."),
        Column("note", "The adjudicator's note."),
        Column("counts", "How many coders chose each value, as JSON."),
    ),
)
def variable_gold_dataset(study, options):
    from . import variables

    yield from variables.variable_gold_rows(study, options)
