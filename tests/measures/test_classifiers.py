"""VADER and a tiny transformers classifier built and saved here (no download)."""

import random

import pytest

from measures import classifiers


def test_vader_labels_and_info():
    clf = classifiers.make_classifier("vader")
    preds = clf.predict(
        ["She is a wonderful, brilliant colleague.", "The report is on the desk.", "He is terrible and rude."]
    )
    assert [p.label for p in preds] == ["positive", "neutral", "negative"]
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    assert (
        preds[0].score
        == SentimentIntensityAnalyzer().polarity_scores("She is a wonderful, brilliant colleague.")["compound"]
    )
    assert clf.info["kind"] == "vader" and clf.info["revision"] == "3.3.2"


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    torch = pytest.importorskip("torch", reason="needs torch: the 'local' extra (pip install -e .[local])")
    transformers = pytest.importorskip(
        "transformers", reason="needs transformers: the 'local' extra (pip install -e .[local])"
    )
    path = tmp_path_factory.mktemp("tiny-regard")
    vocab = [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        "she",
        "he",
        "is",
        "kind",
        "cruel",
        "a",
        "nurse",
        "thief",
        ".",
    ]
    (path / "vocab.txt").write_text("\n".join(vocab) + "\n")
    tokenizer = transformers.BertTokenizer(vocab_file=str(path / "vocab.txt"), do_lower_case=True)
    config = transformers.BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=1,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        num_labels=3,
        id2label={0: "negative", 1: "neutral", 2: "positive"},
        label2id={"negative": 0, "neutral": 1, "positive": 2},
    )
    torch.manual_seed(7)
    model = transformers.BertForSequenceClassification(config)
    model.save_pretrained(str(path))
    tokenizer.save_pretrained(str(path))
    return path


@pytest.mark.local_model
def test_transformers_adapter_is_deterministic_and_records_provenance(tiny_model):
    texts = ["She is kind.", "He is a thief.", "She is a nurse.", "He is cruel."] * 3
    first = classifiers.make_classifier("transformers", path=str(tiny_model), model_id="tiny-regard")
    a = first.predict(texts)
    second = classifiers.make_classifier("transformers", path=str(tiny_model), model_id="tiny-regard", batch_size=5)
    b = second.predict(texts)
    assert [p.label for p in a] == [p.label for p in b]
    assert [p.score for p in a] == pytest.approx([p.score for p in b], abs=1e-6)
    assert all(p.label in {"negative", "neutral", "positive"} for p in a)
    assert all(abs(sum(p.scores.values()) - 1) < 1e-5 for p in a)
    info = first.info
    assert info["model_id"] == "tiny-regard" and info["revision"].startswith("sha256:")
    assert info["revision"] == second.info["revision"] and info["revision_source"] == "content hash"
    assert info["label_map"] == {"0": "negative", "1": "neutral", "2": "positive"}


def test_transformers_adapter_errors(tmp_path):
    with pytest.raises(classifiers.ClassifierError, match="No model folder"):
        classifiers.make_classifier("transformers", path=str(tmp_path / "missing"))
    with pytest.raises(classifiers.ClassifierError, match="no config.json"):
        classifiers.make_classifier("transformers", path=str(tmp_path))
    with pytest.raises(classifiers.ClassifierError, match="Unknown classifier"):
        classifiers.make_classifier("bert-magic")


def test_label_shares():
    assert classifiers.label_shares(
        ["positive", "neutral", "positive", "negative"], ["negative", "neutral", "positive"]
    ) == {"negative": 0.25, "neutral": 0.25, "positive": 0.5}


@pytest.mark.local_model
@pytest.mark.django_db
def test_measure_run_with_local_transformers_model_records_provenance(tiny_model, study, make_outputs):
    from measures import scoring
    from measures.models import OutputMeasure

    make_outputs(
        study,
        [
            {"text": "She is kind. She is a nurse.", "slot_values": {"name": "Kelly"}},
            {"text": "He is cruel. He is a thief.", "slot_values": {"name": "Joseph"}},
        ],
    )
    labels = []
    for name in ("first", "second"):
        run = scoring.create_run(
            study,
            name=name,
            classifier="transformers",
            classifier_path=str(tiny_model),
            classifier_model_id="tiny-regard",
        )
        scoring.start(run)
        run.refresh_from_db()
        assert run.status == "completed"
        assert run.classifier_info["model_id"] == "tiny-regard" and run.classifier_info["revision"].startswith(
            "sha256:"
        )
        assert run.classifier_info["label_map"] == {"0": "negative", "1": "neutral", "2": "positive"}
        labels.append(
            [
                (s.label, s.score)
                for m in OutputMeasure.objects.filter(run=run).order_by("output_id")
                for s in m.sentence_rows()
            ]
        )
    assert len(labels[0]) == 4 and [lab for lab, _ in labels[0]] == [lab for lab, _ in labels[1]]
    assert [s for _, s in labels[0]] == pytest.approx([s for _, s in labels[1]], abs=1e-6)


def test_transformers_classifier_without_the_local_extra_names_it(tmp_path, no_torch):
    (tmp_path / "config.json").write_text("{}")
    with pytest.raises(classifiers.ClassifierError, match=r"'local' extra \(pip install -e \.\[local\]\)"):
        classifiers.make_classifier("transformers", path=str(tmp_path))


def test_label_shares_equal_a_plain_count():
    """label_shares counts in C; it gives exactly what counting label by label gives: every listed label (0.0 when
    absent), then the others in order of first appearance, each share a float."""

    def plain(labels, all_labels):
        shares = dict.fromkeys(all_labels, 0.0)
        for label in labels:
            shares[label] = shares.get(label, 0.0) + 1
        return {label: n / len(labels) for label, n in shares.items()} if labels else shares

    rng = random.Random(36)
    for _ in range(500):
        labels = [
            rng.choice(["positive", "neutral", "negative", "other", "LABEL_3"]) for _ in range(rng.randint(0, 40))
        ]
        all_labels = rng.sample(["negative", "neutral", "positive", "unused"], rng.randint(0, 4))
        got, want = classifiers.label_shares(labels, all_labels), plain(labels, all_labels)
        assert list(got.items()) == list(want.items())
        assert all(type(v) is float for v in got.values())
