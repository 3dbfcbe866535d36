"""Wan et al. 2023's style presets (formality, sentiment, agency) through the transformers adapter, on tiny models
built here (no download)."""

import pytest

from measures import classifiers


def build_tiny_model(path, id2label, seed=3):
    """A 1-layer BERT sequence classifier with the given labels, saved to `path`."""
    torch = pytest.importorskip("torch", reason="needs torch: the 'local' extra (pip install -e .[local])")
    transformers = pytest.importorskip(
        "transformers", reason="needs transformers: the 'local' extra (pip install -e .[local])"
    )
    vocab = [
        "[PAD]",
        "[UNK]",
        "[CLS]",
        "[SEP]",
        "[MASK]",
        "she",
        "he",
        "is",
        "a",
        "leader",
        "kind",
        "warm",
        "led",
        "the",
        "team",
        "born",
        "in",
        "paris",
        "works",
        "as",
        "nurse",
        "engineer",
        "recommend",
        "i",
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
        max_position_embeddings=128,
        num_labels=len(id2label),
        id2label=dict(id2label),
        label2id={v: k for k, v in id2label.items()},
    )
    torch.manual_seed(seed)
    model = transformers.BertForSequenceClassification(config)
    model.save_pretrained(str(path))
    tokenizer.save_pretrained(str(path))
    return path


# Each preset's label map as the published model itself has it (checked against the sources, not the model cards'
# prose; no model is downloaded):
# - formality: the model's config.json, "id2label": {"0": "informal", "1": "formal"}
#   (huggingface.co/s-nlp/roberta-base-formality-ranker/blob/main/config.json).
# - sentiment: config.json "id2label": {"0": "NEGATIVE", "1": "POSITIVE"}, as carried by copies of the model that
#   name it as their _name_or_path (e.g. huggingface.co/optimum/distilbert-base-uncased-finetuned-sst-2-english,
#   config.json); the original's own config.json was not in the searchable sources.
# - agency: config.json not findable; the model card's usage example (huggingface.co/emmatliu/
#   language-agency-classifier) maps {1: 'agentic', 0: 'communal'}, and Wan et al.'s own inference code
#   (github.com/uclanlp/biases-llm-reference-letters, bert_inference.py) uses {0: "communal", 1: "agentic"}.
# - nli: config.json not findable; the id2label {"0": "entailment", "1": "neutral", "2": "contradiction"} is quoted
#   in the model's usage example and in Wan et al.'s hallucination_detection.py (same repository).
PUBLISHED_LABEL_MAPS = {
    "formality": {0: "informal", 1: "formal"},
    "sentiment": {0: "NEGATIVE", 1: "POSITIVE"},
    "agency": {0: "communal", 1: "agentic"},
    "nli": {0: "entailment", 1: "neutral", 2: "contradiction"},
}


def test_presets_name_the_published_models_and_label_maps():
    presets = classifiers.STYLE_PRESETS
    assert presets["formality"].model_id == "s-nlp/roberta-base-formality-ranker"
    assert presets["sentiment"].model_id == "distilbert-base-uncased-finetuned-sst-2-english"
    assert presets["agency"].model_id == "emmatliu/language-agency-classifier"
    assert presets["nli"].model_id == "ynie/roberta-large-snli_mnli_fever_anli_R1_R2_R3-nli"
    assert {key: preset.label_map for key, preset in presets.items()} == PUBLISHED_LABEL_MAPS
    assert presets["agency"].target == "agentic" and presets["nli"].target == "entailment"
    assert classifiers.preset_for(model_id="S-NLP/roberta-base-formality-ranker").key == "formality"
    assert classifiers.preset_for(model_id="sasha/regardv3") is None
    with pytest.raises(classifiers.ClassifierError, match="Unknown preset"):
        classifiers.preset_for("politeness")


def test_preset_label_map_replaces_generic_labels_and_checks_the_target():
    preset = classifiers.STYLE_PRESETS["formality"]
    assert classifiers.apply_preset({0: "LABEL_0", 1: "LABEL_1"}, preset) == {0: "informal", 1: "formal"}
    assert classifiers.apply_preset({0: "Informal", 1: "Formal"}, preset) == {0: "Informal", 1: "formal"}
    with pytest.raises(classifiers.ClassifierError, match="does not look like s-nlp/roberta-base-formality-ranker"):
        classifiers.apply_preset({0: "negative", 1: "positive"}, preset)


def test_target_share():
    preds = [classifiers.Prediction(label, 1.0) for label in ("agentic", "communal", "agentic", "agentic")]
    assert classifiers.target_share(preds, "agentic") == 0.75
    assert classifiers.target_share([], "agentic") is None


@pytest.mark.local_model
def test_style_preset_on_a_tiny_model_records_the_preset(tmp_path):
    path = build_tiny_model(tmp_path, {0: "LABEL_0", 1: "LABEL_1"})
    clf = classifiers.make_classifier("transformers", path=str(path), model_id="emmatliu/language-agency-classifier")
    assert clf.info["preset"] == "agency" and clf.info["target_label"] == "agentic"
    assert clf.info["label_map"] == {"0": "communal", "1": "agentic"}
    texts = ["She is kind.", "He led the team.", "She is a leader.", "He is warm."]
    preds = clf.predict(texts)
    assert {p.label for p in preds} <= {"agentic", "communal"}
    share = classifiers.target_share(preds, "agentic")
    assert share == sum(p.scores["agentic"] > p.scores["communal"] for p in preds) / 4
    by_key = classifiers.make_classifier("transformers", path=str(path), preset="agency")
    assert [p.label for p in by_key.predict(texts)] == [p.label for p in preds]
    other = tmp_path / "sentiment-model"
    other.mkdir()
    build_tiny_model(other, {0: "neg", 1: "pos"})
    with pytest.raises(classifiers.ClassifierError, match="does not look like"):
        classifiers.make_classifier("transformers", path=str(other), preset="formality")
