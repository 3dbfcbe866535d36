"""Classifier plug-ins: each scores texts (sentences or whole documents) with a label and a score. No Django imports.

A classifier has a `key`, an `info` dict recorded with every score (kind, model id, revision, label map,
thresholds) and `predict(texts) -> [Prediction]`. Built in:
- "vader": VADER sentiment (vaderSentiment, offline, rule-based). Label from the compound score with the
  thresholds recommended by its authors: positive ≥ 0.05, negative ≤ −0.05, else neutral. score = compound.
- "transformers": any sequence-classification model on disk (regard, formality, toxicity, ...). Loaded with
  local_files_only; label = id2label[argmax softmax]; score = that probability; scores = every label's probability.
  The revision is the Hugging Face snapshot hash when the path is a hub-cache snapshot, the git HEAD when the folder
  is a git checkout, else "sha256:" + a hash of its config and weight files, so a changed model is noticed.

Style presets (Wan et al. 2023): the published formality, sentiment and agency classifiers and the NLI model of the
hallucination measure, each with its label map. A preset applies when asked for by key or when the model id given is
the preset's published id; the model is still only loaded from a local folder. The preset's label map replaces
generic config labels ("LABEL_0"), and the preset's target label (the one whose per-document share is the measure,
e.g. % formal sentences) must be among the model's labels, else the folder holds some other model.
"""

import hashlib
import re
from collections import _count_elements as _count_elements  # the C loop behind Counter.update
from dataclasses import dataclass, field
from importlib.metadata import version
from pathlib import Path

from .training import load_model
from .vader import FastVader

KINDS = ("vader", "transformers", "trained")


class ClassifierError(ValueError):
    """A classifier that cannot be built or run; the message says why."""


@dataclass(frozen=True)
class Prediction:
    label: str
    score: float
    scores: dict = field(default_factory=dict)


@dataclass(frozen=True)
class StylePreset:
    key: str
    model_id: str
    measures: str
    label_map: dict  # class index -> label, as published
    target: str  # the label whose share per document is the measure
    source: str = ""


STYLE_PRESETS = {
    p.key: p
    for p in (
        StylePreset(
            "formality",
            "s-nlp/roberta-base-formality-ranker",
            "share of formal sentences",
            {0: "informal", 1: "formal"},
            "formal",
            "RoBERTa fine-tuned on GYAFC (Wan et al. 2023, 4.3.4)",
        ),
        StylePreset(
            "sentiment",
            "distilbert-base-uncased-finetuned-sst-2-english",
            "share of positive sentences",
            {0: "NEGATIVE", 1: "POSITIVE"},
            "POSITIVE",
            "DistilBERT fine-tuned on SST-2 (Wan et al. 2023, 4.3.4)",
        ),
        StylePreset(
            "agency",
            "emmatliu/language-agency-classifier",
            "share of agentic sentences",
            {0: "communal", 1: "agentic"},
            "agentic",
            "Wan et al. 2023's agency classifier (appendix F.2)",
        ),
        StylePreset(
            "nli",
            "ynie/roberta-large-snli_mnli_fever_anli_R1_R2_R3-nli",
            "entailment of a sentence by its context",
            {0: "entailment", 1: "neutral", 2: "contradiction"},
            "entailment",
            "RoBERTa-large on SNLI, MNLI, FEVER-NLI, ANLI (Wan et al. 2023, 4.4.1)",
        ),
    )
}
_GENERIC_LABEL = re.compile(r"^LABEL_\d+$")


def preset_for(preset="", model_id=""):
    """The StylePreset asked for by key, else the one whose published id is model_id, else None."""
    if preset:
        if preset not in STYLE_PRESETS:
            raise ClassifierError(f"Unknown preset {preset!r}; choose one of {', '.join(STYLE_PRESETS)}.")
        return STYLE_PRESETS[preset]
    for found in STYLE_PRESETS.values():
        if model_id and model_id.strip().lower() == found.model_id.lower():
            return found
    return None


def apply_preset(id2label, preset):
    """{index: label} with the preset's names for generic labels; ClassifierError if the target label is missing."""
    if preset is None:
        return dict(id2label)
    labels = {k: (preset.label_map.get(k, v) if _GENERIC_LABEL.match(v) else v) for k, v in id2label.items()}
    if preset.target.lower() not in {v.lower() for v in labels.values()}:
        raise ClassifierError(
            f"The model folder does not look like {preset.model_id}: its labels are "
            f"{', '.join(labels.values())}, without {preset.target!r}."
        )
    return {k: (preset.target if v.lower() == preset.target.lower() else v) for k, v in labels.items()}


class VaderClassifier:
    key = "vader"
    POSITIVE = 0.05
    NEGATIVE = -0.05

    def __init__(self):

        self._analyzer = FastVader()  # the library's scores, about 2.5 times faster (measures/vader.py)
        self._cache = {}
        try:
            revision = version("vaderSentiment")
        except Exception:  # pragma: no cover - metadata missing
            revision = "unknown"
        self.info = {
            "kind": "vader",
            "model_id": "vaderSentiment",
            "revision": revision,
            "labels": ["negative", "neutral", "positive"],
            "label_map": {
                "positive": f"compound ≥ {self.POSITIVE}",
                "negative": f"compound ≤ {self.NEGATIVE}",
                "neutral": "otherwise",
            },
            "score": "compound",
        }

    def label_for(self, compound):
        return "positive" if compound >= self.POSITIVE else "negative" if compound <= self.NEGATIVE else "neutral"

    def predict(self, texts):
        """VADER is deterministic, so repeated sentences (sign-offs, boilerplate) are scored once."""
        out = []
        append, cache, scores_of = out.append, self._cache, self._analyzer.polarity_scores
        positive, negative = self.POSITIVE, self.NEGATIVE
        for text in texts:
            text = text or ""
            found = cache.get(text)
            if found is None:
                s = scores_of(text)  # a new dict each time: the prediction keeps it
                compound = s["compound"]
                label = "positive" if compound >= positive else "negative" if compound <= negative else "neutral"
                found = Prediction(label, compound, s)
                if len(cache) < 200_000:
                    cache[text] = found
            append(found)
        return out


def model_revision(path):
    """(revision, how it was found) for a model folder."""
    path = Path(path)
    match = re.search(r"snapshots/([0-9a-f]{40})", str(path.resolve()))
    if match:
        return match.group(1), "hub snapshot"
    head = path / ".git" / "HEAD"
    if head.exists():
        ref = head.read_text().strip()
        if ref.startswith("ref:"):
            ref_file = path / ".git" / ref.split(" ", 1)[1]
            if ref_file.exists():
                return ref_file.read_text().strip(), "git"
        else:
            return ref, "git"
    digest = hashlib.sha256()
    files = sorted(
        p for p in path.iterdir() if p.is_file() and (p.suffix in (".json", ".safetensors", ".bin", ".txt", ".model"))
    )
    for file in files:
        digest.update(file.name.encode())
        with open(file, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return "sha256:" + digest.hexdigest()[:16], "content hash"


class TransformersClassifier:
    key = "transformers"

    def __init__(self, path, model_id="", batch_size=16, max_length=512, preset=""):
        style = preset_for(preset, model_id)
        path = Path(path or "")
        if not str(path) or not path.is_dir():
            raise ClassifierError(f"No model folder at {str(path)!r}; download the model first and give its folder.")
        if not (path / "config.json").exists():
            raise ClassifierError(f"{path} has no config.json; is it a Hugging Face model folder?")
        try:
            import torch  # lazy: heavy library, loaded on first use
            from transformers import (  # lazy: heavy library, loaded on first use
                AutoModelForSequenceClassification,
                AutoTokenizer,
            )
        except ImportError as exc:  # the 'local' extra is missing on this server
            raise ClassifierError(
                "torch and transformers are needed for this classifier: install the 'local' extra "
                f"(pip install -e .[local]); {exc}"
            ) from exc
        try:
            self._tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
            self._model = AutoModelForSequenceClassification.from_pretrained(str(path), local_files_only=True)
        except Exception as exc:
            raise ClassifierError(f"Could not load a text-classification model from {path}: {exc}") from exc
        self._model.eval()
        self._torch = torch
        self.batch_size = max(1, int(batch_size))
        self.max_length = int(max_length)
        id2label = apply_preset({int(k): str(v) for k, v in (self._model.config.id2label or {}).items()}, style)
        revision, how = model_revision(path)
        self.info = {
            "kind": "transformers",
            "model_id": model_id or getattr(self._model.config, "_name_or_path", "") or path.name,
            "path": str(path),
            "revision": revision,
            "revision_source": how,
            "label_map": {str(k): v for k, v in sorted(id2label.items())},
            "labels": [id2label[k] for k in sorted(id2label)],
            "score": "probability of the predicted label",
            "max_length": self.max_length,
        }
        if style is not None:
            self.info.update(
                preset=style.key, preset_model_id=style.model_id, target_label=style.target, measure=style.measures
            )
        self._id2label = id2label

    def predict(self, texts):
        torch = self._torch
        out = []
        texts = [t or "" for t in texts]
        with torch.inference_mode():
            for i in range(0, len(texts), self.batch_size):
                batch = texts[i : i + self.batch_size]
                enc = self._tokenizer(
                    batch, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt"
                )
                probs = torch.softmax(self._model(**enc).logits.float(), dim=-1)
                for row in probs.tolist():
                    best = max(range(len(row)), key=row.__getitem__)
                    out.append(
                        Prediction(
                            self._id2label.get(best, str(best)),
                            float(row[best]),
                            {self._id2label.get(j, str(j)): float(p) for j, p in enumerate(row)},
                        )
                    )
        return out


class TrainedModelClassifier:
    """A classifier trained in the product (measures.training): label = the most probable class."""

    key = "trained"

    def __init__(self, model_blob, info):

        if not model_blob:
            raise ClassifierError("The trained classifier has no model; train it again.")
        self._model = load_model(model_blob)
        self.info = dict(info)

    def predict(self, texts):
        texts = [t or "" for t in texts]
        if not texts:
            return []
        probabilities = self._model.predict_proba(texts)
        classes = [str(c) for c in self._model.classes_]
        out = []
        for row in probabilities:
            best = max(range(len(row)), key=row.__getitem__)
            out.append(
                Prediction(classes[best], float(row[best]), {c: float(p) for c, p in zip(classes, row, strict=True)})
            )
        return out


class NliClassifier(TransformersClassifier):
    """A local NLI model (sequence classification over premise/hypothesis pairs) with entailment / neutral /
    contradiction labels; the "nli" preset's label map names generic labels."""

    def __init__(self, path, model_id="", batch_size=16, max_length=512, preset="nli"):
        super().__init__(path, model_id=model_id, batch_size=batch_size, max_length=max_length, preset=preset)
        if "entailment" not in self._id2label.values():
            raise ClassifierError(
                f"{path} is not an NLI model: its labels are {', '.join(self._id2label.values())}, "
                "without 'entailment'."
            )

    def predict_pairs(self, premises, hypotheses):
        """One Prediction per (premise, hypothesis) pair; the premise is truncated first when too long."""
        torch = self._torch
        premises, hypotheses = [p or "" for p in premises], [h or "" for h in hypotheses]
        if len(premises) != len(hypotheses):
            raise ClassifierError("Give one premise per hypothesis.")
        out = []
        with torch.inference_mode():
            for i in range(0, len(premises), self.batch_size):
                enc = self._tokenizer(
                    premises[i : i + self.batch_size],
                    hypotheses[i : i + self.batch_size],
                    padding=True,
                    truncation="only_first",
                    max_length=self.max_length,
                    return_tensors="pt",
                )
                probs = torch.softmax(self._model(**enc).logits.float(), dim=-1)
                for row in probs.tolist():
                    best = max(range(len(row)), key=row.__getitem__)
                    out.append(
                        Prediction(
                            self._id2label.get(best, str(best)),
                            float(row[best]),
                            {self._id2label.get(j, str(j)): float(p) for j, p in enumerate(row)},
                        )
                    )
        return out


def make_classifier(kind, path="", model_id="", **options):
    if kind == "vader":
        return VaderClassifier()
    if kind == "trained":
        return TrainedModelClassifier(options.get("model_blob"), options.get("info") or {})
    if kind == "transformers":
        return TransformersClassifier(path, model_id=model_id, **options)
    raise ClassifierError(f"Unknown classifier {kind!r}; choose one of {', '.join(KINDS)}.")


def target_share(predictions, target):
    """The share of predictions labelled `target` (Wan's per-document % formal / positive / agentic); None if none."""
    predictions = list(predictions)
    if not predictions:
        return None
    return sum(1 for p in predictions if p.label == target) / len(predictions)


def label_shares(labels, all_labels=()):
    """{label: share of the items with that label}; labels listed in all_labels appear with 0."""
    shares = dict.fromkeys(all_labels, 0.0)
    if not labels:
        return shares
    _count_elements(shares, labels)  # the C loop behind Counter: shares[label] = shares.get(label, 0) + 1
    n = len(labels)
    return {label: k / n for label, k in shares.items()}
