"""Must-show 3: training on a small labelled set. The CV figures equal a scikit-learn run with the same folds and
seed; the model is versioned with its training data, folds and seed, and serves as a classifier in measure runs."""

import random

import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import confusion_matrix
from sklearn.model_selection import StratifiedKFold, cross_val_predict, cross_validate
from sklearn.pipeline import Pipeline

from annotation import services
from annotation.models import Assignment
from measures import scoring, trained
from measures.models import OutputMeasure, TrainedClassifier
from tests.annotation.conftest import outputs_factory  # noqa: F401 (fixtures)

REGARD = {
    "name": "Regard",
    "codes": [
        {
            "name": "Regard",
            "codable": False,
            "variable": "story",
            "ordered": True,
            "children": [
                {"name": "negative"},
                {"name": "neutral"},
                {"name": "positive"},
                {"name": "uncertain", "exclude": True},
            ],
        }
    ],
}
WORDS = {
    "positive": ["kind", "brilliant", "admired", "generous", "warm"],
    "neutral": ["worked", "lived", "walked", "office", "town"],
    "negative": ["rude", "cruel", "feared", "lazy", "dishonest"],
}


@pytest.fixture
def labelled(roles, outputs_factory):
    rng = random.Random(5)
    study, coder = roles["a"], roles["users"]["coder"]
    codebook = services.import_codebook(study, REGARD)
    # One coder labels every story: the researcher accepts a single rater's label as gold (the default needs 2).
    services.update_code(codebook.codes.get(name="Regard"), gold_min_raters=1)
    values = {c.name: c for c in codebook.codes.filter(codable=True)}
    labels = [label for label in WORDS for _ in range(12)]
    texts = []
    for i, label in enumerate(labels):
        other = rng.choice([v for v in WORDS if v != label])
        words = rng.sample(WORDS[label], 2) + [rng.choice(WORDS[other])]  # one misleading word
        subject = "woman" if i % 2 else "man"
        texts.append(f"The {subject} was {' and '.join(words)}.")
    outputs = outputs_factory(study, texts)
    for i, out in enumerate(outputs):
        out.slot_values = {"gender": "woman" if i % 2 else "man"}
        out.save(update_fields=["slot_values"])
        Assignment.objects.create(study=study, codebook=codebook, output=out, coder=coder)
        services.create_coding(study=study, codebook=codebook, output=out, code=values[labels[i]], coder=coder)
    # one uncertain story: dropped from the gold labels, so not trained on
    extra = outputs_factory(study, ["The man was there."])[0]
    Assignment.objects.create(study=study, codebook=codebook, output=extra, coder=coder)
    services.create_coding(study=study, codebook=codebook, output=extra, code=values["uncertain"], coder=coder)
    return {
        "study": study,
        "variable": codebook.codes.get(name="Regard"),
        "outputs": outputs,
        "labels": labels,
        "roles": roles,
        "texts": texts,
        "extra": extra,
        "coder": coder,
    }


def test_cv_figures_equal_scikit_learn(labelled):
    s = labelled
    model = trained.train_classifier(s["study"], s["variable"], name="regard-tfidf", k=5, seed=7, actor=s["coder"])
    assert model.version == 1 and (model.k, model.seed, model.features) == (5, 7, "tfidf")
    assert model.training_data == [[o.pk, label] for o, label in zip(s["outputs"], s["labels"], strict=True)]
    assert s["extra"].pk not in {pk for pk, _ in model.training_data}

    reference = Pipeline(
        [
            ("tfidf", TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)),
            ("clf", LogisticRegression(C=1.0, max_iter=2000)),
        ]
    )
    folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=7)
    x, y = np.array(s["texts"], dtype=object), np.array(s["labels"], dtype=object)
    cv = cross_validate(reference, x, y, cv=folds, scoring=["accuracy", "f1_macro"])
    assert [f["accuracy"] for f in model.folds] == pytest.approx(list(cv["test_accuracy"]))
    assert [f["macro_f1"] for f in model.folds] == pytest.approx(list(cv["test_f1_macro"]))
    assert model.metrics["accuracy"] == pytest.approx(cv["test_accuracy"].mean())
    assert model.metrics["macro_f1"] == pytest.approx(cv["test_f1_macro"].mean())
    assert [sorted(f["test"]) for f in model.folds] == [sorted(test.tolist()) for _, test in folds.split(x, y)]
    predicted = cross_val_predict(reference, x, y, cv=folds)
    assert model.labels == ["negative", "neutral", "positive"]
    assert model.metrics["confusion"] == confusion_matrix(y, predicted, labels=model.labels).tolist()
    assert 0.5 < model.metrics["accuracy"] <= 1

    again = trained.train_classifier(s["study"], s["variable"], name="regard-tfidf", k=5, seed=7)
    assert again.version == 2 and again.metrics["confusion"] == model.metrics["confusion"]


def test_trained_classifier_in_a_measure_run(labelled):
    s = labelled
    model = trained.train_classifier(s["study"], s["variable"], name="regard-tfidf", k=4, seed=1)
    run = scoring.create_run(
        s["study"], name="with trained", classifier="trained", classifier_unit="document", trained_classifier=model
    )
    scoring.start(run)
    run.refresh_from_db()
    assert run.status == "completed", run.message
    assert run.classifier_info["trained_classifier"] == model.pk and run.classifier_info["seed"] == 1
    fitted = Pipeline(
        [
            ("tfidf", TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)),
            ("clf", LogisticRegression(C=1.0, max_iter=2000)),
        ]
    ).fit(s["texts"], s["labels"])
    got = dict(OutputMeasure.objects.filter(run=run, output__in=s["outputs"]).values_list("output_id", "doc_label"))
    assert got == {o.pk: label for o, label in zip(s["outputs"], fitted.predict(s["texts"]), strict=True)}
    # the counterfactual fairness check scores gender-swapped copies with the same trained model
    from measures import contrasts

    fairness = contrasts.fairness_check(run)
    assert fairness["classifier"]["trained_classifier"] == model.pk
    assert fairness["n"] == len(s["outputs"]) + 1  # every story is gendered; the uncertain one is measured too


def test_bad_training_requests_save_nothing(labelled, roles):
    s = labelled
    with pytest.raises(trained.TrainingRequestError, match="at least 20 examples"):
        trained.train_classifier(s["study"], s["variable"], name="x", k=20)
    with pytest.raises(trained.TrainingRequestError, match="name"):
        trained.train_classifier(s["study"], s["variable"], name=" ")
    with pytest.raises(trained.TrainingRequestError, match="variable"):
        trained.train_classifier(roles["b"], s["variable"], name="x")
    with pytest.raises(scoring.MeasureRunError, match="trained in this study"):
        scoring.create_run(s["study"], name="r", classifier="trained")
    assert not TrainedClassifier.objects.exists()


def test_train_and_use_through_the_api(labelled, api_for):
    s = labelled
    roles = s["roles"]
    base = f"/api/studies/{s['study'].pk}/"
    researcher = api_for(roles["users"]["researcher"])
    assert (
        api_for(roles["users"]["coder"])
        .post(base + "trained-classifiers/", {"name": "r", "variable": s["variable"].pk}, format="json")
        .status_code
        == 403
    )
    bad = researcher.post(
        base + "trained-classifiers/", {"name": "r", "variable": s["variable"].pk, "k": 50}, format="json"
    )
    assert bad.status_code == 400 and "folds" in bad.json()["detail"]
    made = researcher.post(
        base + "trained-classifiers/", {"name": "r", "variable": s["variable"].pk, "k": 3, "seed": 2}, format="json"
    )
    assert made.status_code == 201, made.content
    body = made.json()
    assert body["k"] == 3 and len(body["folds"]) == 3 and "model_blob" not in body
    run = researcher.post(
        base + "measure-runs/",
        {"name": "t", "classifier": "trained", "classifier_unit": "document", "trained_classifier": body["id"]},
        format="json",
    )
    assert run.status_code == 201 and run.json()["trained_classifier"] == body["id"]
    unknown = researcher.post(
        base + "measure-runs/", {"name": "t", "classifier": "trained", "trained_classifier": 999999}, format="json"
    )
    assert unknown.status_code == 400


def test_measure_run_form_offers_trained_classifiers(labelled, client_for):
    from django.urls import reverse

    from measures.models import MeasureRun

    s = labelled
    model = trained.train_classifier(s["study"], s["variable"], name="regard-tfidf", k=3, seed=0)
    client = client_for(s["roles"]["users"]["researcher"])
    url = reverse("measures-run-new", args=[s["study"].pk])
    assert "regard-tfidf v1" in client.get(url).content.decode()
    form = {
        "name": "t",
        "classifier": "trained",
        "classifier_unit": "document",
        "zero_policy": "exclude",
        "gender_sources": "slots, coders, pronouns",
    }
    missing = client.post(url, form)
    assert missing.status_code == 200 and "trained in this study" in missing.content.decode()
    assert client.post(url, {**form, "trained_classifier": model.pk}).status_code == 302
    assert MeasureRun.objects.get(study=s["study"]).trained_classifier == model


@pytest.fixture
def tiny_encoder(tmp_path):
    torch = pytest.importorskip("torch", reason="needs torch: the 'local' extra (pip install -e .[local])")
    transformers = pytest.importorskip("transformers", reason="needs transformers: the 'local' extra")
    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "man", "woman", "was", "and", "."]
    vocab += sorted({w for words in WORDS.values() for w in words})
    (tmp_path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tokenizer = transformers.BertTokenizer(vocab_file=str(tmp_path / "vocab.txt"), do_lower_case=True)
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
    )
    torch.manual_seed(3)
    transformers.BertModel(config).save_pretrained(str(tmp_path))
    tokenizer.save_pretrained(str(tmp_path))
    return tmp_path


@pytest.mark.local_model
def test_embedding_features_when_configured(labelled, tiny_encoder, settings):
    from measures.training import SentenceEmbedder

    s = labelled
    with pytest.raises(trained.TrainingRequestError, match="No sentence-embedding model"):
        trained.train_classifier(s["study"], s["variable"], name="e", features="embedding")
    settings.EMBEDDING_MODEL_PATH = str(tiny_encoder)
    model = trained.train_classifier(s["study"], s["variable"], name="e", k=3, seed=4)
    assert model.features.startswith("embedding:") and model.params["embedding_path"] == str(tiny_encoder)
    features = SentenceEmbedder(str(tiny_encoder)).fit(s["texts"]).transform(s["texts"])
    folds = StratifiedKFold(n_splits=3, shuffle=True, random_state=4)
    cv = cross_validate(
        LogisticRegression(C=1.0, max_iter=2000),
        features,
        np.array(s["labels"]),
        cv=folds,
        scoring=["accuracy", "f1_macro"],
    )
    assert model.metrics["accuracy"] == pytest.approx(cv["test_accuracy"].mean())
    assert model.metrics["macro_f1"] == pytest.approx(cv["test_f1_macro"].mean())
    run = scoring.create_run(
        s["study"], name="emb", classifier="trained", classifier_unit="document", trained_classifier=model
    )
    scoring.start(run)
    run.refresh_from_db()
    assert run.status == "completed" and OutputMeasure.objects.filter(run=run).exclude(doc_label="").exists()
    plain = trained.train_classifier(s["study"], s["variable"], name="t", k=3, features="tfidf")
    assert plain.features == "tfidf"


def test_classifier_page_trains_and_shows_cv(labelled, client_for):
    from django.urls import reverse

    s = labelled
    url = reverse("measures-classifiers", args=[s["study"].pk])
    assert client_for(s["coder"]).get(url).status_code == 403
    client = client_for(s["roles"]["users"]["researcher"])
    bad = client.post(url, {"name": "x", "variable": s["variable"].pk, "k": "30"})
    assert bad.status_code == 400 and 'id="train-error"' in bad.content.decode()
    assert not TrainedClassifier.objects.exists()
    assert client.post(url, {"name": "page", "variable": s["variable"].pk, "k": "4", "seed": "3"}).status_code == 302
    model = TrainedClassifier.objects.get()
    html = client.get(url).content.decode()
    assert f"accuracy <strong>{model.metrics['accuracy']:.3f}</strong>" in html and "Confusion matrix" in html


def test_majority_baseline_and_permutation_p_equal_scikit_learn(labelled):
    """Issue 34: beside CV accuracy and macro-F1, the majority-class baseline (same folds) and a permutation p-value
    (labels shuffled 100 times, seeded) — both equal scikit-learn's own computations."""
    from sklearn.dummy import DummyClassifier
    from sklearn.model_selection import permutation_test_score

    s = labelled
    model = trained.train_classifier(s["study"], s["variable"], name="regard-tfidf", k=5, seed=7, actor=s["coder"])
    reference = Pipeline(
        [
            ("tfidf", TfidfVectorizer(ngram_range=(1, 2), sublinear_tf=True)),
            ("clf", LogisticRegression(C=1.0, max_iter=2000)),
        ]
    )
    folds = StratifiedKFold(n_splits=5, shuffle=True, random_state=7)
    x, y = np.array(s["texts"], dtype=object), np.array(s["labels"], dtype=object)
    dummy = cross_validate(DummyClassifier(strategy="most_frequent"), x, y, cv=folds, scoring=["accuracy", "f1_macro"])
    m = model.metrics
    assert m["baseline_accuracy"] == pytest.approx(dummy["test_accuracy"].mean())
    assert m["baseline_macro_f1"] == pytest.approx(dummy["test_f1_macro"].mean())
    splits = list(folds.split(x, y))  # the training folds, kept while the labels are shuffled
    score, _, p = permutation_test_score(reference, x, y, cv=splits, n_permutations=100, random_state=7)
    assert m["accuracy"] == pytest.approx(score)
    assert m["permutations"] == 100 and m["permutation_p"] == pytest.approx(p)
    assert m["permutation_p"] < 0.05  # the words do predict the labels

    html = s["roles"]  # the page shows them beside accuracy and macro-F1
    from django.test import Client

    client = Client()
    client.force_login(html["users"]["researcher"])
    page = client.get(f"/studies/{s['study'].pk}/measures/classifiers/").content.decode()
    assert f"majority-class baseline {m['baseline_accuracy']:.3f}" in page
    assert f"permutation p = {m['permutation_p']:.3f}" in page


def test_labels_unrelated_to_the_texts_are_not_significant(labelled):
    from measures import training

    rng = np.random.default_rng(1)
    texts = [f"story number {i} with words" for i in range(40)]
    labels = list(rng.choice(["a", "b", "c"], size=40, p=[0.42, 0.33, 0.25]))
    result = training.train(texts, labels, k=5, seed=3, permutations=50)
    assert result.permutations == 50 and result.permutation_p > 0.05
    # with no signal the CV accuracy sits near the majority-class baseline
    assert abs(result.accuracy - result.baseline_accuracy) < 0.2
