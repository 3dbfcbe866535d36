"""Hallucination bias (Wan et al. 2023, 4.4): sentences of a letter not entailed by its biography, female vs male."""
import pytest
from scipy import stats as sps

from measures import classifiers, hallucination
from tests.measures.test_style_classifiers import build_tiny_model

BIO_F = "Kelly works as a nurse. She was born in Paris."
BIO_M = "Joseph works as an engineer. He was born in Paris."


class OverlapNli:
    """A stand-in NLI model: a hypothesis is entailed when every word of it occurs in the premise."""

    def predict_pairs(self, premises, hypotheses):
        out = []
        for p, h in zip(premises, hypotheses):
            words = {w.strip(".").lower() for w in p.split()}
            entailed = all(w.strip(".").lower() in words for w in h.split())
            out.append(classifiers.Prediction("entailment" if entailed else "neutral", 1.0))
        return out


def test_share_of_sentences_not_entailed_by_hand():
    letters = [(BIO_F, "I recommend Kelly. Kelly works as a nurse. She was born in Paris. She is a joy to work with."),
               (BIO_M, "Joseph works as an engineer. He is a natural leader."),
               (BIO_M, "")]
    results = hallucination.score_letters(letters, OverlapNli())
    assert results[0].hallucinated == [True, False, False, True] and results[0].share == 0.5
    assert results[1].hallucinated == [False, True] and results[1].share == 0.5
    assert results[2].share is None and results[2].sentences == []


def test_female_vs_male_equals_scipy():
    shares_f, shares_m = [0.5, 0.25, 0.75, 0.4], [0.1, 0.2, 0.0, 0.3, 0.25]
    result = hallucination.compare(shares_f, shares_m)
    welch = sps.ttest_ind(shares_f, shares_m, equal_var=False)
    assert result["welch"]["t"] == pytest.approx(welch.statistic) and result["welch"]["p"] == pytest.approx(welch.pvalue)
    mw = sps.mannwhitneyu(shares_f, shares_m, alternative="two-sided")
    assert result["mann_whitney"]["p"] == pytest.approx(mw.pvalue)
    assert "error" in hallucination.compare([0.5], [0.1])["welch"]


@pytest.mark.local_model
def test_tiny_nli_model_labels_pairs_like_the_model_itself(tmp_path):
    path = build_tiny_model(tmp_path, {0: "LABEL_0", 1: "LABEL_1", 2: "LABEL_2"}, seed=11)
    nli = classifiers.NliClassifier(str(path), model_id="ynie/roberta-large-snli_mnli_fever_anli_R1_R2_R3-nli")
    assert nli.info["label_map"] == {"0": "entailment", "1": "neutral", "2": "contradiction"}
    letters = [("she works as a nurse . she is born in paris .", "she is a nurse. she is kind. she led the team."),
               ("he works as a engineer .", "he is a leader. he works as a engineer.")]
    results = hallucination.score_letters(letters, nli)
    import torch
    import transformers

    tokenizer = transformers.BertTokenizer.from_pretrained(str(path))
    model = transformers.BertForSequenceClassification.from_pretrained(str(path)).eval()
    names = {0: "entailment", 1: "neutral", 2: "contradiction"}
    for (context, _), result in zip(letters, results):
        for sentence, label, flag in zip(result.sentences, result.labels, result.hallucinated):
            with torch.no_grad():
                logits = model(**tokenizer(context, sentence, return_tensors="pt")).logits[0]
            assert label == names[int(logits.argmax())] and flag == (label != "entailment")
        assert result.share == sum(result.hallucinated) / len(result.sentences)
    with pytest.raises(classifiers.ClassifierError, match="not an NLI model"):
        other = tmp_path / "sentiment"
        other.mkdir()
        classifiers.NliClassifier(str(build_tiny_model(other, {0: "entailment_no", 1: "x"})), preset="")
