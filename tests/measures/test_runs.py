"""Measure runs end to end (eager Celery): counts, gender, classifier, stored contrasts, twins, resume, fairness."""

import pytest
from scipy import stats as sps
from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

from generation.toolkits.counterfactual import swap_gender
from measures import contrasts, scoring, services
from measures.models import ContrastResult, OutputMeasure

pytestmark = pytest.mark.django_db

MALE = "Joseph is an outstanding and confident leader. He has established a strong record. He is kind and works hard."
FEMALE = (
    "Kelly is a kind and helpful colleague. She works hard, is dependable and caring, and a strong, excellent student."
)


def test_builtins_load_as_published(library_lexicons):
    jung = library_lexicons["jung2025-reference-letters"]
    assert jung.locked and jung.count_policy == "per_token"
    sizes = {c.key: len(c.words) for c in jung.categories.all()}
    assert sizes == {"agentic": 23, "standout": 23, "ability": 30, "communal": 39, "grindstone": 21}
    standout = jung.categories.get(key="standout")
    assert any("listed 2 times" in w for w in services.category_warnings(standout))
    assert any("very short prefix" in w for w in services.category_warnings(standout))
    regard = library_lexicons["regard-facets"]
    assert {c.key for c in regard.categories.all()} == {
        "caregiving_en",
        "sexualization_en",
        "perpetration_en",
        "caregiving_de",
        "sexualization_de",
        "perpetration_de",
    }
    assert "Haushälterin" in regard.categories.get(key="caregiving_de").words
    assert regard.exclusions.filter(phrase="Babylon").count() == 2
    wan = library_lexicons["wan2023-categories"]
    assert wan.categories.count() == 9 and all(c.words == [] for c in wan.categories.all())


def test_run_scores_counts_gender_and_jung_ors(study, make_outputs, library_lexicons):
    jung = library_lexicons["jung2025-reference-letters"]
    outs = make_outputs(
        study,
        [
            {"text": MALE, "slot_values": {"name": "Joseph"}},
            {"text": FEMALE, "slot_values": {"name": "Kelly"}},
            {"text": "They met. Nothing else happened.", "slot_values": {}},
        ],
    )
    run = scoring.create_run(study, name="letters", lexicons=[jung])
    scoring.start(run)  # eager
    run.refresh_from_db()
    assert run.status == "completed" and run.progress["done"] == 3
    m = OutputMeasure.objects.get(run=run, output=outs[0])
    cats = {c.key: str(c.pk) for c in jung.categories.all()}
    assert m.gender == "M" and m.gender_source == "slots" and m.word_count == 19
    assert {k: m.category_counts[v] for k, v in cats.items()} == {
        "agentic": 3,
        "standout": 2,  # distinct tokens: "outstanding" once (listed as 'outstand' and 'outstanding'), "established"
        "ability": 0,
        "communal": 1,
        "grindstone": 1,
    }
    unknown = OutputMeasure.objects.get(run=run, output=outs[2])
    assert unknown.gender == "" and unknown.gender_source == "none"
    score = ContrastResult.objects.get(run=run, kind="context_score", grouping="overall")
    # standout: 2 of 19 vs "excellent" 1 of 19 (once, though 'excel' and 'excellen' both match) -> (2/17)/(1/18)
    assert score.result["score"] == pytest.approx((3.375 + 36 / 17 + 3.375 + 36 / 17) / 4)
    assert score.result["n_categories"] == 4 and score.result["n_unknown"] == 1
    agentic = ContrastResult.objects.get(run=run, kind="category", grouping="overall", measure=f"cat:{cats['agentic']}")
    assert (
        agentic.result["odds_ratio"]["or"] == pytest.approx(3.375)
        and agentic.result["odds_ratio"]["zero_policy"] == "exclude"
    )
    assert ContrastResult.objects.filter(run=run, kind="category", grouping="model").count() == 5
    assert ContrastResult.objects.filter(run=run, kind="word_or").exists()
    # running again scores nothing twice
    assert scoring.execute(run.pk) == 0 and OutputMeasure.objects.filter(run=run).count() == 3


TRAITS_F = [
    "kind and gentle",
    "warm but nervous",
    "sweet and caring",
    "quiet and anxious",
    "lovely and helpful",
    "sad but patient",
]
TRAITS_M = [
    "brilliant and bold",
    "confident and strong",
    "terrible and rude",
    "great and fearless",
    "awful and lazy",
    "proud and happy",
]


def test_counterfactual_twins_vader_paired_test_matches_scipy(study, make_outputs):
    from generation.models import Toolkit
    from generation.toolkits.services import derive_counterfactual

    toolkit = Toolkit.objects.create(study=study, name="Twins", slots={"name": ["Kelly"]})
    item = toolkit.items.create(number=1, text="Write about {name}. She is a nurse and her team trusts her.")
    twin, _ = derive_counterfactual(item)
    assert twin.text == "Write about {name}. He is a nurse and his team trusts him." and twin.slots == {
        "name": ["Joseph"]
    }
    specs = []
    for trial, (tf, tm) in enumerate(zip(TRAITS_F, TRAITS_M, strict=True), 1):
        story = f"Kelly is {tf}. She is a nurse and her team trusts her. She was {tf} at work."
        male_story = swap_gender(story).replace(tf, tm)
        assert male_story.startswith("Joseph is") and " his team trusts him" in male_story
        specs.append({"text": story, "item": item, "slot_values": {"name": "Kelly"}, "trial": trial})
        specs.append({"text": male_story, "item": twin, "slot_values": {"name": "Joseph"}, "trial": trial})
    make_outputs(study, specs)
    run = scoring.create_run(study, name="twins", classifier="vader", classifier_unit="document")
    scoring.start(run)
    run.refresh_from_db()
    assert run.status == "completed" and run.classifier_info["kind"] == "vader"
    analyzer = SentimentIntensityAnalyzer()
    f_scores = [analyzer.polarity_scores(s["text"])["compound"] for s in specs[0::2]]
    m_scores = [analyzer.polarity_scores(s["text"])["compound"] for s in specs[1::2]]
    ref = sps.ttest_rel(f_scores, m_scores)
    paired = ContrastResult.objects.get(run=run, kind="paired", measure="score").result
    assert paired["n_pairs"] == 6
    assert paired["result"]["t"] == pytest.approx(ref.statistic) and paired["result"]["p"] == pytest.approx(ref.pvalue)
    rows = contrasts.rows_for(run)
    assert len(contrasts.twin_pairs(rows)) == 6


def test_sentence_classifier_shares_chi2_and_fairness(study, make_outputs):
    texts_f = ["Kelly is wonderful. She is kind. She went home.", "Kelly was sad. She cried. She is lovely."] * 2
    texts_m = ["Joseph is terrible. He is rude. He went home.", "Joseph was great. He shouted. He is awful."] * 2
    make_outputs(
        study,
        [{"text": t, "slot_values": {"name": "Kelly"}} for t in texts_f]
        + [{"text": t, "slot_values": {"name": "Joseph"}} for t in texts_m],
    )
    run = scoring.create_run(study, name="sentences", classifier="vader")
    scoring.start(run)
    run.refresh_from_db()
    m = OutputMeasure.objects.filter(run=run).order_by("pk").first()
    assert m.sentence_count == 3 and m.label_shares == pytest.approx(
        {"negative": 0, "neutral": 1 / 3, "positive": 2 / 3}
    )
    sents = m.sentence_rows()
    assert [m.output.text[s.start : s.end] for s in sents] == ["Kelly is wonderful.", "She is kind.", "She went home."]
    chi2 = ContrastResult.objects.get(run=run, kind="chi2", grouping="overall").result
    table = {"F": {}, "M": {}}
    for om in OutputMeasure.objects.filter(run=run):
        for s in om.sentence_rows():
            table[om.gender][s.label] = table[om.gender].get(s.label, 0) + 1
    labels = sorted(set(table["F"]) | set(table["M"]))
    ref = sps.chi2_contingency([[table[g].get(lb, 0) for lb in labels] for g in ("F", "M")], correction=False)
    assert chi2["chi2"] == pytest.approx(ref[0]) and chi2["df"] == ref[2]
    share = ContrastResult.objects.get(run=run, kind="classifier", grouping="overall", measure="share:positive").result
    assert share["tests"]["welch"]["t"] == pytest.approx(
        sps.ttest_ind(
            [om.label_shares["positive"] for om in OutputMeasure.objects.filter(run=run, gender="F")],
            [om.label_shares["positive"] for om in OutputMeasure.objects.filter(run=run, gender="M")],
            equal_var=False,
        ).statistic
    )
    result = contrasts.fairness_check(run)
    # VADER ignores names and pronouns: swapped copies keep every label
    assert result["n"] == 24 and result["flipped"] == 0 and result["flip_rate"] == 0
    assert ContrastResult.objects.filter(run=run, kind="fairness").count() == 1
    scoring.start(run)  # re-running keeps the fairness result
    assert ContrastResult.objects.filter(run=run, kind="fairness").count() == 1


def test_create_run_validation(study, roles, library_lexicons):
    from measures.models import Lexicon

    with pytest.raises(scoring.MeasureRunError, match="at least one lexicon or a classifier"):
        scoring.create_run(study, name="x")
    with pytest.raises(scoring.MeasureRunError, match="name"):
        scoring.create_run(study, name=" ", classifier="vader")
    with pytest.raises(scoring.MeasureRunError, match="No model folder"):
        scoring.create_run(study, name="x", classifier="transformers", classifier_path="/nonexistent")
    other = services.create_lexicon(
        roles["b"], services.validate_lexicon_data({"name": "B's", "categories": [{"key": "a", "words": ["x"]}]})
    )
    with pytest.raises(scoring.MeasureRunError, match=r"No lexicon \d+ in this study"):
        scoring.create_run(study, name="x", lexicons=[other])
    with pytest.raises(scoring.MeasureRunError, match="F or M"):
        scoring.create_run(study, name="x", classifier="vader", name_genders={"Alex": "X"})
    assert Lexicon.objects.filter(study=study).count() == 0


def test_lexicon_edits_version_when_locked(study, make_outputs):
    data = services.validate_lexicon_data(
        {
            "name": "Mine",
            "categories": [{"key": "care", "name": "Care", "direction": "female", "words": "care, nurse\nnanny"}],
        }
    )
    lexicon = services.create_lexicon(study, data)
    cat = lexicon.categories.get()
    assert cat.words == ["care", "nurse", "nanny"]
    same, created = services.save_category(
        lexicon, {"key": "care", "name": "Care", "direction": "female", "words": "care\nnurse"}, category=cat
    )
    assert not created and same.pk == cat.pk and same.words == ["care", "nurse"]
    scoring.create_run(study, name="r", lexicons=[lexicon])
    lexicon.refresh_from_db()
    assert lexicon.locked
    new_cat, created = services.save_category(lexicon, {"key": "care", "name": "Care", "words": "care"}, category=cat)
    assert created and new_cat.lexicon.version == 2 and new_cat.lexicon.parent == lexicon
    cat.refresh_from_db()
    assert cat.words == ["care", "nurse"]  # the locked version is unchanged
    with pytest.raises(services.LexiconDataError, match="not a valid regular expression"):
        services.save_category(new_cat.lexicon, {"key": "re", "mode": "regex", "words": ["(bad"]})
    with pytest.raises(services.LexiconDataError) as exc:
        services.validate_lexicon_data({"name": "", "categories": [{"key": "A B", "direction": "up"}]})
    assert len(exc.value.errors) == 3


def test_fairness_check_without_gendered_words_reports_why(study, make_outputs, roles, client_for):
    from measures.tasks import fairness_check_task

    make_outputs(
        study,
        [
            {"text": "The weather is lovely.", "slot_values": {"name": "Kelly"}},
            {"text": "The weather is awful.", "slot_values": {"name": "Joseph"}},
        ],
    )
    run = scoring.create_run(study, name="no swap", classifier="vader", classifier_unit="document")
    scoring.start(run)
    with pytest.raises(contrasts.FairnessError, match="Fewer than two texts change"):
        contrasts.fairness_check(run)
    assert fairness_check_task.delay(run.pk).get()["error"].startswith("Fewer than two")
    assert ContrastResult.objects.get(run=run, kind="fairness").result["error"].startswith("Fewer than two")


def test_regard_labels_split_by_context_type(study, make_outputs):
    """χ² on label counts per context type (dimension), as the regard study reports occupation vs respect."""
    from generation.models import Dimension, Toolkit
    from measures import selectors

    toolkit = Toolkit.objects.create(study=study, name="Regard")
    occ, resp = (Dimension.objects.create(toolkit=toolkit, name=n) for n in ("occupation", "respect"))
    i1 = toolkit.items.create(number=1, text="The {subject} worked as", dimension=occ)
    i2 = toolkit.items.create(number=2, text="The {subject} was known for", dimension=resp)
    texts = {
        ("F", 1): ["The woman worked as a wonderful nurse.", "The woman worked as a cleaner."],
        ("M", 1): ["The man worked as a terrible thief.", "The man worked as a great doctor."],
        ("F", 2): ["The woman was known for her kindness.", "The woman was known for lovely songs."],
        ("M", 2): ["The man was known for awful crimes.", "The man was known for his work."],
    }
    specs = []
    for (g, n), ts in texts.items():
        for t in ts:
            specs.append(
                {"text": t, "item": i1 if n == 1 else i2, "slot_values": {"subject": "woman" if g == "F" else "man"}}
            )
    make_outputs(study, specs)
    run = scoring.create_run(study, name="regard", classifier="vader", classifier_unit="document")
    scoring.start(run)
    by_dim = {c.group: c.result for c in ContrastResult.objects.filter(run=run, kind="chi2", grouping="dimension")}
    assert set(by_dim) == {"occupation", "respect"}
    analyzer = SentimentIntensityAnalyzer()
    from measures.classifiers import VaderClassifier

    label = VaderClassifier().label_for
    for dim, n in (("occupation", 1), ("respect", 2)):
        counts = {g: {} for g in ("F", "M")}
        for g in ("F", "M"):
            for t in texts[(g, n)]:
                lb = label(analyzer.polarity_scores(t)["compound"])
                counts[g][lb] = counts[g].get(lb, 0) + 1
        labels = sorted(set(counts["F"]) | set(counts["M"]))
        if len(labels) > 1:
            ref = sps.chi2_contingency([[counts[g].get(lb, 0) for lb in labels] for g in ("F", "M")], correction=False)
            assert by_dim[dim]["chi2"] == pytest.approx(ref[0])
    report = selectors.report(run, "overall")
    assert [c["group"] for c in report["by_context"]] == ["occupation", "respect"]


def test_contrasts_are_computed_once_per_set_of_outputs(study, make_outputs, library_lexicons, monkeypatch):
    """Groupings that put the same outputs in a group (here "item" and "dimension": the stories have no item, so
    each is one group of all outputs, like "overall") reuse one computation; the records equal a fresh one."""
    texts = ["Kelly is warm and caring. She helps her team.", "Joseph is a strong leader. He decides quickly."] * 3
    make_outputs(
        study,
        [{"text": t, "slot_values": {"name": t.split()[0]}, "model_name": f"m{i % 2}"} for i, t in enumerate(texts)],
    )
    run = scoring.create_run(study, name="memo", lexicons=list(library_lexicons.values()), classifier="vader")
    scoring.start(run)
    run.refresh_from_db()
    assert run.status == "completed"
    calls = []
    real = contrasts.category_results
    monkeypatch.setattr(
        contrasts, "category_results", lambda rows, *a, **k: calls.append(len(rows)) or real(rows, *a, **k)
    )
    records = contrasts.store_contrasts(run)
    assert calls == [6, 3, 3]  # overall (= item = dimension), then one per model
    fresh = [r for g in contrasts.DEFAULT_GROUPINGS for r in contrasts.compute(run, g)]
    assert len(calls) == 3 + 5 and fresh == [r for r in records if r["kind"] not in ("paired", "word_or")]
    assert {r["grouping"] for r in records if r["kind"] == "chi2"} == set(contrasts.DEFAULT_GROUPINGS)


@pytest.mark.parametrize(
    "change, said",
    [
        ({"name": "x" * 201}, "name: is longer than 200 characters"),
        ({"categories": [{"name": "N" * 201, "key": "k", "words": ["a"]}]}, "Category 1: name is longer than 200"),
        ({"categories": [{"key": "k", "words": {"a": 1}}]}, "Category 1: words must be text"),
        ({"categories": [{"key": "k", "words": ["a"], "mode": "fuzzy"}]}, "Category 1: Unknown match mode 'fuzzy'"),
        ({"categories": [{"key": "k", "words": ["a"], "color": "red"}]}, "Category 1: colour must look like #1c7ed6"),
        (
            {"categories": [{"key": "k", "words": "a\nb"}, {"key": "k", "words": "c"}]},
            "Category keys must be unique: k",
        ),
        ({"exclusions": [{"phrase": "p" * 301}]}, "Exclusion 1: phrase has at most 300 characters"),
        ({"exclusions": [{"phrase": "x", "category": "nope"}]}, "Exclusion 1 names an unknown category 'nope'"),
        ({"exclusions": [{"phrase": "(x", "is_regex": True}]}, "Exclusion 1: '(x' is not a valid regular expression"),
        ({"count_policy": "twice"}, "count_policy: must be per_entry or per_token, not 'twice'"),
        ({"categories": []}, "categories: the lexicon needs a list of categories"),
    ],
)
def test_a_lexicon_document_is_checked_against_its_schema(change, said):
    document = {"name": "L", "categories": [{"key": "care", "words": ["care"]}], **change}
    with pytest.raises(services.LexiconDataError) as caught:
        services.validate_lexicon_data(document)
    assert any(said in error for error in caught.value.errors), caught.value.errors


def test_a_category_from_the_editor_or_the_api_is_checked_against_the_schemas_category(study):
    data = services.validate_lexicon_data({"name": "L", "categories": [{"key": "care", "words": ["care"]}]})
    lexicon = services.create_lexicon(study, data)
    with pytest.raises(services.LexiconDataError) as caught:
        services.save_category(lexicon, {"key": "x", "name": "N" * 201, "direction": "up", "words": "a"})
    assert caught.value.errors == [
        "Category: direction must be male, female or none, not 'up'.",
        "Category: name is longer than 200 characters.",
    ]
    assert lexicon.categories.count() == 1
