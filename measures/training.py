"""Training a text classifier on labelled texts: TF-IDF features (or mean-pooled sentence embeddings from a local
transformers model folder), a linear classifier (logistic regression), and stratified k-fold cross-validation with
accuracy, macro-F1 and a confusion matrix. No Django imports.

The folds, seed and parameters are returned so they can be stored with the model; the same (texts, labels, k, seed)
always give the same folds, figures and model.
"""

from __future__ import annotations

import io
from dataclasses import dataclass, field

import joblib
import numpy as np

DEFAULTS = {"ngram_max": 2, "min_df": 1, "sublinear_tf": True, "C": 1.0, "max_iter": 2000}


class TrainingError(ValueError):
    """The labelled set cannot be used as given; the message says why."""


class SentenceEmbedder:
    """A scikit-learn transformer: texts → mean-pooled last hidden states of a local model (local_files_only).
    Only the folder path is pickled; the model is loaded again where the classifier runs."""

    def __init__(self, path="", max_length=256, batch_size=16):
        self.path, self.max_length, self.batch_size = path, max_length, batch_size

    def get_params(self, deep=True):
        return {"path": self.path, "max_length": self.max_length, "batch_size": self.batch_size}

    def set_params(self, **params):
        for key, value in params.items():
            setattr(self, key, value)
        return self

    def __getstate__(self):
        return self.get_params()

    def __setstate__(self, state):
        self.__init__(**state)

    def _load(self):
        if getattr(self, "_model", None) is None:
            try:
                from transformers import AutoModel, AutoTokenizer  # lazy: heavy library, loaded on first use

                self._tokenizer = AutoTokenizer.from_pretrained(self.path, local_files_only=True)
                self._model = AutoModel.from_pretrained(self.path, local_files_only=True).eval()
            except Exception as exc:  # missing extra, missing folder, not a model
                raise TrainingError(f"Could not load a sentence-embedding model from {self.path}: {exc}") from None
        return self._tokenizer, self._model

    def fit(self, texts, labels=None):
        self._load()
        return self

    def transform(self, texts):
        import torch  # lazy: heavy library, loaded on first use

        tokenizer, model = self._load()
        rows = []
        with torch.inference_mode():
            for i in range(0, len(texts), self.batch_size):
                batch = [str(t) for t in texts[i : i + self.batch_size]]
                enc = tokenizer(batch, padding=True, truncation=True, max_length=self.max_length, return_tensors="pt")
                hidden = model(**enc).last_hidden_state
                mask = enc["attention_mask"].unsqueeze(-1).float()
                rows.append(((hidden * mask).sum(1) / mask.sum(1).clamp(min=1)).numpy())
        return np.vstack(rows) if rows else np.zeros((0, 0))


def make_pipeline(params=None):
    from sklearn.feature_extraction.text import TfidfVectorizer  # lazy: heavy library, loaded on first use
    from sklearn.linear_model import LogisticRegression  # lazy: heavy library, loaded on first use
    from sklearn.pipeline import Pipeline  # lazy: heavy library, loaded on first use

    p = {**DEFAULTS, **(params or {})}
    if p.get("embedding_path"):
        return Pipeline(
            [
                ("embed", SentenceEmbedder(p["embedding_path"])),
                ("clf", LogisticRegression(C=float(p["C"]), max_iter=int(p["max_iter"]))),
            ]
        )
    return Pipeline(
        [
            (
                "tfidf",
                TfidfVectorizer(
                    ngram_range=(1, int(p["ngram_max"])), min_df=int(p["min_df"]), sublinear_tf=bool(p["sublinear_tf"])
                ),
            ),
            ("clf", LogisticRegression(C=float(p["C"]), max_iter=int(p["max_iter"]))),
        ]
    )


def stratified_folds(labels, k, seed):
    """[(train indices, test indices)] of StratifiedKFold(k, shuffle=True, random_state=seed)."""
    from sklearn.model_selection import StratifiedKFold  # lazy: heavy library, loaded on first use

    splitter = StratifiedKFold(n_splits=k, shuffle=True, random_state=seed)
    return [(train.tolist(), test.tolist()) for train, test in splitter.split(np.zeros(len(labels)), labels)]


@dataclass
class TrainingResult:
    labels: list
    k: int
    seed: int
    params: dict
    folds: list  # [{"train": [...], "test": [...], "accuracy": x, "macro_f1": y}]
    accuracy: float  # mean over folds
    macro_f1: float  # mean over folds
    accuracy_sd: float
    macro_f1_sd: float
    confusion: list  # rows = true label, columns = predicted (out-of-fold predictions), in `labels` order
    predictions: list  # out-of-fold prediction per example
    model: object = field(repr=False, default=None)
    baseline_accuracy: float | None = None  # majority class of each training fold, same folds
    baseline_macro_f1: float | None = None
    permutations: int = 0
    permutation_p: float | None = None  # (C + 1) / (permutations + 1), C = shuffles scoring >= the CV accuracy


def check_examples(texts, labels, k):
    if len(texts) != len(labels):
        raise TrainingError("Each text needs one label.")
    if not 2 <= k <= 20:
        raise TrainingError("The number of folds must be between 2 and 20.")
    counts = {label: labels.count(label) for label in set(labels)}
    if len(counts) < 2:
        raise TrainingError("Training needs examples of at least two labels.")
    few = sorted(label for label, n in counts.items() if n < k)
    if few:
        raise TrainingError(
            f"Each label needs at least {k} examples for {k}-fold cross-validation; too few: "
            f"{', '.join(f'{label} ({counts[label]})' for label in few)}."
        )
    if not any((t or "").strip() for t in texts):
        raise TrainingError("Every text is empty.")


PERMUTATIONS = 100


def train(texts, labels, *, k=5, seed=0, params=None, label_order=None, permutations=PERMUTATIONS) -> TrainingResult:
    """Cross-validate, then fit the final model on every example. Beside the CV figures: the majority-class
    baseline on the same folds (DummyClassifier "most_frequent") and a permutation p-value of the CV accuracy: the
    labels shuffled `permutations` times (numpy RandomState(seed).permutation, as scikit-learn's
    permutation_test_score does) and cross-validated on the same folds; p = (C + 1) / (permutations + 1), C the
    shuffles scoring at least the observed accuracy. Equals permutation_test_score(pipeline, x, y, cv=<the folds>,
    n_permutations, random_state=seed); the features of each fold are computed once (texts do not move)."""
    from sklearn.base import clone  # lazy: heavy library, loaded on first use
    from sklearn.dummy import DummyClassifier  # lazy: heavy library, loaded on first use
    from sklearn.metrics import accuracy_score, confusion_matrix, f1_score  # lazy: heavy library, loaded on first use
    from sklearn.model_selection import cross_validate  # lazy: heavy library, loaded on first use

    texts, labels = [t or "" for t in texts], [str(v) for v in labels]
    check_examples(texts, labels, k)
    order = [v for v in (label_order or []) if v in set(labels)] or sorted(set(labels))
    base = make_pipeline(params)
    folds, predictions = [], [None] * len(texts)
    x, y = np.array(texts, dtype=object), np.array(labels, dtype=object)
    splits = stratified_folds(labels, k, seed)
    for train_idx, test_idx in splits:
        model = clone(base).fit(x[train_idx], y[train_idx])
        predicted = model.predict(x[test_idx])
        for i, value in zip(test_idx, predicted, strict=True):
            predictions[i] = str(value)
        folds.append(
            {
                "train": train_idx,
                "test": test_idx,
                "accuracy": float(accuracy_score(y[test_idx], predicted)),
                "macro_f1": float(f1_score(y[test_idx], predicted, average="macro")),
            }
        )
    accuracies = np.array([f["accuracy"] for f in folds])
    f1s = np.array([f["macro_f1"] for f in folds])
    final = clone(base).fit(x, y)
    dummy = cross_validate(DummyClassifier(strategy="most_frequent"), x, y, cv=splits, scoring=["accuracy", "f1_macro"])
    observed = float(accuracies.mean())
    permutation_p = permutation_pvalue(base, x, y, splits, observed, int(permutations or 0), seed)
    return TrainingResult(
        baseline_accuracy=float(dummy["test_accuracy"].mean()),
        baseline_macro_f1=float(dummy["test_f1_macro"].mean()),
        permutations=int(permutations or 0),
        permutation_p=None if permutation_p is None else float(permutation_p),
        labels=order,
        k=k,
        seed=seed,
        params={**DEFAULTS, **(params or {})},
        folds=folds,
        accuracy=float(accuracies.mean()),
        macro_f1=float(f1s.mean()),
        accuracy_sd=float(accuracies.std(ddof=1)),
        macro_f1_sd=float(f1s.std(ddof=1)),
        confusion=confusion_matrix(labels, predictions, labels=order).tolist(),
        predictions=predictions,
        model=final,
    )


def permutation_pvalue(pipeline, x, y, splits, observed, permutations, seed):
    """The permutation p-value of the CV accuracy `observed` (see train); None without permutations."""
    if not permutations:
        return None
    from sklearn.base import clone  # lazy: heavy library, loaded on first use

    head = pipeline[-1]
    prepared = []
    for train_idx, test_idx in splits:
        # the feature steps fitted and applied one by one (not as a sub-pipeline, which asks each step for
        # scikit-learn's estimator tags; the embedding step is a plain transformer)
        x_train, x_test = x[train_idx], x[test_idx]
        for _name, step in pipeline.steps[:-1]:
            fitted = clone(step).fit(x_train)
            x_train, x_test = fitted.transform(x_train), fitted.transform(x_test)
        prepared.append((train_idx, test_idx, x_train, x_test))
    rng = np.random.RandomState(seed)
    at_least = 0
    for _ in range(permutations):
        shuffled = y[rng.permutation(len(y))]
        scores = []
        for train_idx, test_idx, x_train, x_test in prepared:
            model = clone(head).fit(x_train, shuffled[train_idx])
            scores.append(float(np.mean(model.predict(x_test) == shuffled[test_idx])))
        at_least += float(np.mean(scores)) >= observed
    return (at_least + 1.0) / (permutations + 1.0)


def dump_model(model) -> bytes:

    buffer = io.BytesIO()
    joblib.dump(model, buffer)
    return buffer.getvalue()


def load_model(blob):

    return joblib.load(io.BytesIO(bytes(blob)))
