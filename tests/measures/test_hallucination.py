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
        for p, h in zip(premises, hypotheses, strict=True):
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
    for (context, _), result in zip(letters, results, strict=True):
        for sentence, label, flag in zip(result.sentences, result.labels, result.hallucinated, strict=True):
            with torch.no_grad():
                logits = model(**tokenizer(context, sentence, return_tensors="pt")).logits[0]
            assert label == names[int(logits.argmax())] and flag == (label != "entailment")
        assert result.share == sum(result.hallucinated) / len(result.sentences)
    with pytest.raises(classifiers.ClassifierError, match="not an NLI model"):
        other = tmp_path / "sentiment"
        other.mkdir()
        classifiers.NliClassifier(str(build_tiny_model(other, {0: "entailment_no", 1: "x"})), preset="")


@pytest.mark.local_model
@pytest.mark.django_db
def test_measure_run_with_nli_stores_shares_and_contrasts(tmp_path, roles, make_outputs, client_for):
    from django.urls import reverse

    from measures import scoring
    from measures.models import OutputMeasure

    path = build_tiny_model(tmp_path, {0: "entailment", 1: "neutral", 2: "contradiction"}, seed=5)
    study = roles["a"]
    bios = {"F": "she works as a nurse . she is born in paris .", "M": "he works as a engineer . he led the team ."}
    letters = ["I recommend her. she is a nurse. she is kind.", "she led the team. I recommend her.",
               "she is warm. she works as a nurse. i recommend her.", "I recommend him. he is a leader.",
               "he works as a engineer. he is kind. I recommend him.", "he is born in paris. I recommend him."]
    specs = [{"text": t, "slot_values": {"name": "Kelly" if i < 3 else "Joseph", "bio": bios["F" if i < 3 else "M"]}}
             for i, t in enumerate(letters)]
    specs.append({"text": "I recommend him.", "slot_values": {"name": "Joseph"}})  # no context: no share
    make_outputs(study, specs)
    with pytest.raises(scoring.MeasureRunError, match="slot holding"):
        scoring.create_run(study, name="no slot", nli_path=str(path))
    run = scoring.create_run(study, name="hallucination", nli_path=str(path), context_slot="bio")
    scoring.start(run)
    run.refresh_from_db()
    assert run.status == "completed" and run.nli_info["label_map"]["0"] == "entailment"
    nli = classifiers.NliClassifier(str(path))
    expected = [r.share for r in hallucination.score_letters([(s["slot_values"]["bio"], s["text"]) for s in specs[:6]], nli)]
    stored = list(OutputMeasure.objects.filter(run=run).order_by("output_id").values_list("hallucination_share", flat=True))
    assert stored[:6] == pytest.approx(expected) and stored[6] is None
    record = run.contrasts.get(kind="classifier", measure="hallucination", grouping="overall").result
    welch = hallucination.compare(expected[:3], expected[3:])["welch"]
    if "error" in welch:
        assert "error" in record["tests"]["welch"]
    else:
        assert record["tests"]["welch"]["t"] == pytest.approx(welch["t"])
    page = client_for(roles["users"]["researcher"]).get(reverse("measures-report", args=[study.pk, run.pk]))
    assert "not entailed by the context" in page.content.decode()
