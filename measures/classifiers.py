"""Classifier plug-ins: each scores texts (sentences or whole documents) with a label and a score. No Django imports.

A classifier has a `key`, an `info` dict recorded with every score (kind, model id, revision, label map,
thresholds) and `predict(texts) -> [Prediction]`. Built in:
- "vader": VADER sentiment (vaderSentiment, offline, rule-based). Label from the compound score with the
  thresholds recommended by its authors: positive ≥ 0.05, negative ≤ −0.05, else neutral. score = compound.
- "transformers": any sequence-classification model on disk (regard, formality, toxicity, ...). Loaded with
  local_files_only; label = id2label[argmax softmax]; score = that probability; scores = every label's probability.
  The revision is the Hugging Face snapshot hash when the path is a hub-cache snapshot, the git HEAD when the folder
  is a git checkout, else "sha256:" + a hash of its config and weight files, so a changed model is noticed.
"""
import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

KINDS = ("vader", "transformers", "trained")


class ClassifierError(ValueError):
    """A classifier that cannot be built or run; the message says why."""


@dataclass(frozen=True)
class Prediction:
    label: str
    score: float
    scores: dict = field(default_factory=dict)


class VaderClassifier:
    key = "vader"
    POSITIVE = 0.05
    NEGATIVE = -0.05

    def __init__(self):
        from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

        self._analyzer = SentimentIntensityAnalyzer()
        self._cache = {}
        try:
            from importlib.metadata import version

            revision = version("vaderSentiment")
        except Exception:  # pragma: no cover - metadata missing
            revision = "unknown"
        self.info = {"kind": "vader", "model_id": "vaderSentiment", "revision": revision,
                     "labels": ["negative", "neutral", "positive"],
                     "label_map": {"positive": f"compound ≥ {self.POSITIVE}", "negative": f"compound ≤ {self.NEGATIVE}",
                                   "neutral": "otherwise"},
                     "score": "compound"}

    def label_for(self, compound):
        return "positive" if compound >= self.POSITIVE else "negative" if compound <= self.NEGATIVE else "neutral"

    def predict(self, texts):
        """VADER is deterministic, so repeated sentences (sign-offs, boilerplate) are scored once."""
        out = []
        cache = self._cache
        for text in texts:
            text = text or ""
            found = cache.get(text)
            if found is None:
                s = self._analyzer.polarity_scores(text)
                found = Prediction(self.label_for(s["compound"]), s["compound"], dict(s))
                if len(cache) < 200_000:
                    cache[text] = found
            out.append(found)
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
    files = sorted(p for p in path.iterdir() if p.is_file() and (p.suffix in (".json", ".safetensors", ".bin", ".txt", ".model")))
    for file in files:
        digest.update(file.name.encode())
        with open(file, "rb") as fh:
            for block in iter(lambda: fh.read(1 << 20), b""):
                digest.update(block)
    return "sha256:" + digest.hexdigest()[:16], "content hash"


class TransformersClassifier:
    key = "transformers"

    def __init__(self, path, model_id="", batch_size=16, max_length=512):
        path = Path(path or "")
        if not str(path) or not path.is_dir():
            raise ClassifierError(f"No model folder at {str(path)!r}; download the model first and give its folder.")
        if not (path / "config.json").exists():
            raise ClassifierError(f"{path} has no config.json; is it a Hugging Face model folder?")
        try:
            import torch
            from transformers import AutoModelForSequenceClassification, AutoTokenizer
        except ImportError as exc:  # the 'local' extra is missing on this server
            raise ClassifierError("torch and transformers are needed for this classifier: install the 'local' extra "
                                  f"(pip install -e .[local]); {exc}") from exc
        try:
            self._tokenizer = AutoTokenizer.from_pretrained(str(path), local_files_only=True)
            self._model = AutoModelForSequenceClassification.from_pretrained(str(path), local_files_only=True)
        except Exception as exc:
            raise ClassifierError(f"Could not load a text-classification model from {path}: {exc}")
        self._model.eval()
        self._torch = torch
        self.batch_size = max(1, int(batch_size))
        self.max_length = int(max_length)
        id2label = {int(k): str(v) for k, v in (self._model.config.id2label or {}).items()}
        revision, how = model_revision(path)
        self.info = {"kind": "transformers", "model_id": model_id or getattr(self._model.config, "_name_or_path", "") or path.name,
                     "path": str(path), "revision": revision, "revision_source": how,
                     "label_map": {str(k): v for k, v in sorted(id2label.items())},
                     "labels": [id2label[k] for k in sorted(id2label)], "score": "probability of the predicted label",
                     "max_length": self.max_length}
        self._id2label = id2label

    def predict(self, texts):
        torch = self._torch
        out = []
        texts = [t or "" for t in texts]
        with torch.inference_mode():
            for i in range(0, len(texts), self.batch_size):
                batch = texts[i:i + self.batch_size]
                enc = self._tokenizer(batch, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
                probs = torch.softmax(self._model(**enc).logits.float(), dim=-1)
                for row in probs.tolist():
                    best = max(range(len(row)), key=row.__getitem__)
                    out.append(Prediction(self._id2label.get(best, str(best)), float(row[best]),
                                          {self._id2label.get(j, str(j)): float(p) for j, p in enumerate(row)}))
        return out


class TrainedModelClassifier:
    """A classifier trained in the product (measures.training): label = the most probable class."""

    key = "trained"

    def __init__(self, model_blob, info):
        from .training import load_model

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
            out.append(Prediction(classes[best], float(row[best]), {c: float(p) for c, p in zip(classes, row)}))
        return out


def make_classifier(kind, path="", model_id="", **options):
    if kind == "vader":
        return VaderClassifier()
    if kind == "trained":
        return TrainedModelClassifier(options.get("model_blob"), options.get("info") or {})
    if kind == "transformers":
        return TransformersClassifier(path, model_id=model_id, **options)
    raise ClassifierError(f"Unknown classifier {kind!r}; choose one of {', '.join(KINDS)}.")


def label_shares(labels, all_labels=()):
    """{label: share of the items with that label}; labels listed in all_labels appear with 0."""
    shares = dict.fromkeys(all_labels, 0.0)
    if not labels:
        return shares
    for label in labels:
        shares[label] = shares.get(label, 0.0) + 1
    return {label: n / len(labels) for label, n in shares.items()}
