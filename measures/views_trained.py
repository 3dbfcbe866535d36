"""Trained classifiers: the list with cross-validation figures, and training a new version on gold labels."""

from django.contrib import messages
from django.shortcuts import redirect, render

from annotation.selectors import study_variables
from stereoscope.models import Role
from stereoscope.permissions import study_role_required

from . import trained
from .models import TrainedClassifier


@study_role_required(Role.RESEARCHER)
def classifiers(request, study_id):

    study = request.study
    variables = study_variables(study)
    error, status = "", 200
    if request.method == "POST":
        post = request.POST
        variable = next((v for v in variables if str(v.pk) == post.get("variable", "")), None)
        try:
            model = trained.train_classifier(
                study,
                variable,
                name=post.get("name", ""),
                k=post.get("k") or 5,
                seed=post.get("seed") or 0,
                features=post.get("features") or "auto",
                actor=request.user,
            )
        except trained.TrainingRequestError as exc:
            error, status = str(exc), 400
        else:
            messages.success(
                request,
                f"Trained {model}: accuracy {model.metrics['accuracy']:.3f}, "
                f"macro-F1 {model.metrics['macro_f1']:.3f} ({model.k}-fold CV).",
            )
            return redirect("measures-classifiers", study.pk)
    models = list(TrainedClassifier.objects.filter(study=study).select_related("variable"))
    for model in models:
        model.confusion_rows = list(zip(model.labels, model.metrics.get("confusion", []), strict=False))
    return render(
        request,
        "measures/classifiers.html",
        {
            "study": study,
            "classifiers": models,
            "variables": variables,
            "error": error,
            "embedding": bool(trained.embedding_model_path()),
            "form": request.POST if error else {},
        },
        status=status,
    )
