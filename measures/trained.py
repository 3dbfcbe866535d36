"""Training classifiers on a categorical variable's gold labels (from the agreement app, through its provider) and
keeping each trained model as a new version with its training data, folds, seed and cross-validation figures."""

from __future__ import annotations

from importlib.metadata import version

from django.conf import settings
from django.db import transaction
from django.db.models import Max

from annotation.selectors import study_variables, variable_values
from stereoscope.providers import provider
from stereoscope.services import record_activity

from . import training
from .classifiers import model_revision
from .models import TrainedClassifier


class TrainingRequestError(ValueError):
    """Bad input for training; the message says what to fix."""


def _library_versions():

    return {name: version(name) for name in ("scikit-learn", "numpy", "scipy")}


def embedding_revision(path):

    return model_revision(path)[0]


def gold_examples(study, variable):
    """[(unit, gold label, text)] for the variable (coders' majority, adjudication winning; ties and excluded units
    left out): the story's id and text, or for a span-level variable the unit ("<story>:s<n>") and its sentence."""
    gold = provider("agreement")
    if gold is None:
        raise TrainingRequestError("Gold labels come from the agreement app, which is not installed.")
    return gold.gold_examples(study, variable)


def embedding_model_path():
    """The local sentence-embedding model folder (setting EMBEDDING_MODEL_PATH), or ''."""

    return str(getattr(settings, "EMBEDDING_MODEL_PATH", "") or "")


def train_classifier(
    study, variable, *, name, k=5, seed=0, params=None, actor=None, features="auto"
) -> TrainedClassifier:
    """Cross-validate and fit on every gold label; store a new version. Nothing is saved when training fails.
    features: "tfidf", "embedding" (the configured local model) or "auto" (embedding when configured)."""

    name = (name or "").strip()
    if not name:
        raise TrainingRequestError("Give the classifier a name.")
    if variable is None or variable.pk not in {v.pk for v in study_variables(study)}:
        raise TrainingRequestError("Choose a categorical variable of this study.")
    try:
        k, seed = int(k), int(seed)
    except (TypeError, ValueError):
        raise TrainingRequestError("Folds and seed must be whole numbers.") from None
    if features not in ("auto", "tfidf", "embedding"):
        raise TrainingRequestError("Features are tfidf, embedding or auto.")
    path = embedding_model_path()
    if features == "embedding" and not path:
        raise TrainingRequestError("No sentence-embedding model is configured (EMBEDDING_MODEL_PATH).")
    use_embedding = features == "embedding" or (features == "auto" and bool(path))
    params = {**(params or {}), **({"embedding_path": path} if use_embedding else {})}
    examples = gold_examples(study, variable)
    order = [v.name for v in variable_values(variable) if not v.exclude_value]
    try:
        result = training.train(
            [t for _, _, t in examples],
            [label for _, label, _ in examples],
            k=k,
            seed=seed,
            params=params,
            label_order=order,
        )
    except training.TrainingError as exc:
        raise TrainingRequestError(str(exc)) from None
    with transaction.atomic():
        version = (TrainedClassifier.objects.filter(study=study, name=name).aggregate(v=Max("version"))["v"] or 0) + 1
        trained = TrainedClassifier.objects.create(
            study=study,
            name=name,
            version=version,
            variable=variable,
            labels=result.labels,
            features=f"embedding:{embedding_revision(path)}" if use_embedding else "tfidf",
            params=result.params,
            k=k,
            seed=seed,
            training_data=[[pk, label] for pk, label, _ in examples],
            folds=[{**f} for f in result.folds],
            metrics={
                "accuracy": result.accuracy,
                "accuracy_sd": result.accuracy_sd,
                "macro_f1": result.macro_f1,
                "macro_f1_sd": result.macro_f1_sd,
                "baseline_accuracy": result.baseline_accuracy,
                "baseline_macro_f1": result.baseline_macro_f1,
                "permutations": result.permutations,
                "permutation_p": result.permutation_p,
                "confusion": result.confusion,
                "n": len(examples),
                "oof_predictions": result.predictions,
            },
            model_blob=training.dump_model(result.model),
            library_versions=_library_versions(),
            created_by=actor if getattr(actor, "pk", None) else None,
        )
        record_activity(study, actor, "trained classifier", f"{trained} (accuracy {result.accuracy:.3f})")
    return trained
