"""Measure runs: create (validated), start/cancel/resume, and execution in a worker.

A run scores every finished output of its study (or of chosen generation runs) that has text: word and sentence
counts, lexicon category counts, the subject's gender with its source, and optional classifier labels per sentence
or per document. Each output gets one OutputMeasure (unique per run and output), written in batches in one
transaction each; executing again only scores outputs without one, so a crashed run resumes where it stopped.
A lease keeps one executor per run. After the last batch the contrasts are computed and stored.
"""
import json
import logging
import time
from datetime import timedelta

from django.apps import apps
from django.db import connection, transaction
from django.utils import timezone

from generation.models import GenerationRun, Output, OutputStatus, RunStatus
from stereoscope.leases import acquire_lease
from stereoscope.services import record_activity

from . import gender as gender_mod
from . import success
from .classifiers import ClassifierError, label_shares, make_classifier
from .lexical import prepare
from .models import ClassifierKind, ClassifierUnit, MeasureRun, OutputMeasure, SentenceMeasure
from .services import LEXICONS, lexicons_for, matcher_for
from .textproc import split_sentences

log = logging.getLogger(__name__)
LEASE_SECONDS = 120
BATCH = 250


class MeasureRunError(ValueError):
    """Bad input for a measure run; the message says what to fix."""


def outputs_for(run):
    qs = Output.objects.filter(study_id=run.study_id, status=OutputStatus.DONE).exclude(text="")
    source_ids = list(run.source_runs.values_list("pk", flat=True))
    if source_ids:
        qs = qs.filter(run_id__in=source_ids)
    return qs


def trained_info(trained):
    """What a measure run records about a trained classifier it used."""
    return {"kind": "trained", "model_id": str(trained), "trained_classifier": trained.pk,
            "revision": f"v{trained.version}",
            "labels": list(trained.labels), "features": trained.features, "k": trained.k, "seed": trained.seed,
            "cv_accuracy": trained.metrics.get("accuracy"), "cv_macro_f1": trained.metrics.get("macro_f1"),
            "score": "probability of the predicted label"}


def classifier_for(run):
    """The run's classifier plug-in (a trained classifier's stored model, or vader / transformers)."""
    if run.classifier == ClassifierKind.TRAINED:
        trained = run.trained_classifier
        return make_classifier("trained", model_blob=trained.model_blob if trained else b"",
                               info=trained_info(trained) if trained else {})
    return make_classifier(run.classifier, path=run.classifier_path, model_id=run.classifier_model_id)


def create_run(study, *, name, lexicons=(), source_runs=(), classifier="", classifier_path="", classifier_model_id="",
               classifier_unit=ClassifierUnit.SENTENCE, gender_sources=None, name_genders=None, zero_policy="exclude",
               actor=None, trained_classifier=None, success_filter=None, or_orientation="category"):
    name = (name or "").strip()
    if not name:
        raise MeasureRunError("Give the measure run a name.")
    lexicons = list(lexicons or [])
    allowed = set(lexicons_for(study).values_list("pk", flat=True))
    foreign = [str(lx) for lx in lexicons if lx.pk not in allowed]
    if foreign:
        raise MeasureRunError(f"Lexicons of another study: {', '.join(foreign)}.")
    source_runs = list(source_runs or [])
    bad = [r.name for r in source_runs if r.study_id != study.pk]
    if bad:
        raise MeasureRunError(f"Generation runs of another study: {', '.join(bad)}.")
    if classifier not in ClassifierKind.values:
        raise MeasureRunError(f"Unknown classifier {classifier!r}; choose vader, transformers, trained or none.")
    if not lexicons and not classifier:
        raise MeasureRunError("Choose at least one lexicon or a classifier.")
    if classifier_unit not in ClassifierUnit.values:
        raise MeasureRunError("The classifier scores each sentence or the whole document.")
    try:
        success_filter = success.clean_settings(success_filter)
    except success.FilterError as exc:
        raise MeasureRunError(str(exc)) from None
    if or_orientation not in ("category", "male"):
        raise MeasureRunError("The odds-ratio orientation is category or male.")
    if classifier == ClassifierKind.TRAINED:
        if trained_classifier is None or trained_classifier.study_id != study.pk:
            raise MeasureRunError("Choose a classifier trained in this study.")
    elif trained_classifier is not None:
        raise MeasureRunError("A trained classifier is used with the classifier kind 'trained'.")
    if classifier == ClassifierKind.TRANSFORMERS:
        try:  # fail early with a clear message rather than in the worker
            make_classifier("transformers", path=classifier_path, model_id=classifier_model_id)
        except ClassifierError as exc:
            raise MeasureRunError(str(exc))
    sources = list(gender_sources or ["slots", "coders", "pronouns"])
    unknown = [s for s in sources if s not in ("slots", "coders", "pronouns")]
    if unknown or not sources:
        raise MeasureRunError("Gender sources are slots, coders and pronouns (in your order of preference).")
    names = dict(name_genders or {})
    if any(v not in ("F", "M") for v in names.values()):
        raise MeasureRunError("Each extra given name needs F or M.")
    if zero_policy not in ("exclude", "smooth"):
        raise MeasureRunError("The zero-count policy is exclude or smooth.")
    with transaction.atomic():
        run = MeasureRun.objects.create(study=study, name=name[:200], classifier=classifier, classifier_path=classifier_path,
                                        classifier_model_id=classifier_model_id, classifier_unit=classifier_unit,
                                        trained_classifier=trained_classifier, success_filter=success_filter,
                                        or_orientation=or_orientation,
                                        gender_sources=sources, name_genders=names, zero_policy=zero_policy, created_by=actor)
        run.lexicons.set(lexicons)
        run.source_runs.set(source_runs)
        for lx in lexicons:
            LEXICONS.lock(lx)
        record_activity(study, actor, "created measure run", run.name)
    return run


def _enqueue(run):
    from .tasks import execute_measure_run

    execute_measure_run.delay(run.pk)


def _queue(run, actor, verb):
    if run.status in (RunStatus.QUEUED, RunStatus.RUNNING) and run.lease_token:
        raise MeasureRunError("The measure run is already running.")
    MeasureRun.objects.filter(pk=run.pk).update(status=RunStatus.QUEUED, cancel_requested=False, message="",
                                                finished_at=None, lease_token="", lease_expires_at=None)
    record_activity(run.study, actor, verb, run.name)


def run_foreground(run, actor=None, progress_callback=None):
    """Score in this process (`recipe run`); returns the number scored, or None if a worker holds the run."""
    _queue(run, actor, "ran measure run in the foreground")
    return execute(run.pk, progress_callback)


def start(run, actor=None):
    _queue(run, actor, "started measure run")
    _enqueue(run)
    run.refresh_from_db()
    return run


def cancel(run, actor=None):
    if run.status in (RunStatus.COMPLETED, RunStatus.CANCELLED):
        raise MeasureRunError(f"The measure run is already {run.status}.")
    updates = {"cancel_requested": True}
    if run.status in (RunStatus.DRAFT, RunStatus.QUEUED) or not run.lease_token:
        updates.update(status=RunStatus.CANCELLED, finished_at=timezone.now(), message="Cancelled.")
    MeasureRun.objects.filter(pk=run.pk).update(**updates)
    record_activity(run.study, actor, "cancelled measure run", run.name)
    run.refresh_from_db()
    return run


def _acquire_lease(run_id):
    return acquire_lease(MeasureRun.objects, run_id, LEASE_SECONDS)


def attributions_for(output_ids):
    """{output id: [gender answers]} from annotation.GenderAttribution (empty if the annotation app lacks it)."""
    try:
        model = apps.get_model("annotation", "GenderAttribution")
    except LookupError:
        return {}
    found = {}
    for output_id, answer in model.objects.filter(output_id__in=output_ids).values_list("output_id", "gender"):
        found.setdefault(output_id, []).append(answer)
    return found


class Scorer:
    """Scores outputs for one run: the lexicons' matchers per language, the classifier, the gender rules."""

    def __init__(self, run):
        self.run = run
        self.lexicons = [(lx, list(lx.categories.all()), list(lx.exclusions.all())) for lx in run.lexicons.all()]
        self._matchers = {}
        self.classifier = None
        if run.classifier:
            self.classifier = classifier_for(run)
        self.sources = run.gender_sources or ["slots", "coders", "pronouns"]

    def matchers(self, language):
        if language not in self._matchers:
            self._matchers[language] = [matcher_for(lx, language, cats, exs) for lx, cats, exs in self.lexicons]
        return self._matchers[language]

    def score(self, outputs, attributions):
        """(OutputMeasure objects, {output id: [SentenceMeasure kwargs]}) for a batch of outputs (not saved)."""
        measures, sentence_rows, to_classify = [], {}, []
        for out in outputs:
            language = (out.item.toolkit.language if out.item_id else "") or "en"
            text = out.text
            counts = {}
            prepared = prepare(text)
            for matcher in self.matchers(language):
                counts.update(matcher.count(text, prepared))
            sentences = split_sentences(text)
            g, source, detail = gender_mod.resolve(out.slot_values, attributions.get(out.pk, ()), text,
                                                   self.run.name_genders, language, self.sources)
            m = OutputMeasure(run=self.run, output=out, language=language, word_count=sum(prepared[1].values()),
                              sentence_count=len(sentences), gender=g, gender_source=source, gender_detail=detail,
                              category_counts=counts)
            measures.append(m)
            if self.classifier:
                if self.run.classifier_unit == ClassifierUnit.SENTENCE:
                    to_classify.extend((m, s) for s in sentences)
                else:
                    to_classify.append((m, None))
        if self.classifier and to_classify:
            texts = [s.text if s is not None else m.output.text for m, s in to_classify]
            predictions = self.classifier.predict(texts)
            per_output = {}
            for (m, s), p in zip(to_classify, predictions):
                if s is None:
                    m.doc_label, m.doc_score = p.label[:100], p.score
                    m.mean_score = p.score
                else:
                    per_output.setdefault(id(m), (m, []))[1].append((s, p))
            labels = self.classifier.info.get("labels", [])
            for m, rows in per_output.values():
                m.label_shares = label_shares([p.label for _, p in rows], labels)
                m.mean_score = sum(p.score for _, p in rows) / len(rows)
                sentence_rows[id(m)] = [{"index": s.index, "start": s.start, "end": s.end, "label": p.label,
                                          "score": p.score, "scores": p.scores} for s, p in rows]
        return measures, sentence_rows


SENTENCE_COLUMNS = ("output_measure_id", "index", "start", "end", "label", "score", "scores")


def insert_sentences(rows):
    """Insert SentenceMeasure rows with one executemany (hundreds of thousands per run; the ORM's per-object
    work would dominate). Existing (output measure, index) rows are left alone."""
    if not rows:
        return
    qn = connection.ops.quote_name
    sql = (f"INSERT INTO {qn(SentenceMeasure._meta.db_table)} ({', '.join(qn(c) for c in SENTENCE_COLUMNS)}) "
           f"VALUES ({', '.join(['%s'] * len(SENTENCE_COLUMNS))}) ON CONFLICT DO NOTHING")
    params = [(om_id, r["index"], r["start"], r["end"], r["label"][:100], r["score"], json.dumps(r["scores"]))
              for om_id, r in rows]
    with connection.cursor() as cursor:
        cursor.executemany(sql, params)


def execute(run_id, progress_callback=None):
    """Score every output of the run still without a measure. Returns the number scored, or None if leased elsewhere."""
    token = _acquire_lease(run_id)
    if token is None:
        log.info("measure run %s is held by another worker", run_id)
        return None
    run = MeasureRun.objects.select_related("study").get(pk=run_id)
    if run.cancel_requested or run.status == RunStatus.CANCELLED:
        MeasureRun.objects.filter(pk=run_id, lease_token=token).update(lease_token="", lease_expires_at=None)
        return None
    MeasureRun.objects.filter(pk=run_id).update(status=RunStatus.RUNNING, started_at=run.started_at or timezone.now(),
                                                finished_at=None, message="")
    try:
        scorer = Scorer(run)
        if scorer.classifier:
            MeasureRun.objects.filter(pk=run_id).update(classifier_info=scorer.classifier.info)
        done_ids = set(run.output_measures.values_list("output_id", flat=True))
        todo = [pk for pk in outputs_for(run).order_by("pk").values_list("pk", flat=True) if pk not in done_ids]
        if run.success_filter:
            todo = _filtered(run, todo)
        total, scored, began = len(todo) + len(done_ids), 0, time.monotonic()
        for i in range(0, len(todo), BATCH):
            if MeasureRun.objects.filter(pk=run_id, cancel_requested=True).exists():
                MeasureRun.objects.filter(pk=run_id).update(status=RunStatus.CANCELLED, finished_at=timezone.now(),
                                                            message="Cancelled; start again to score the rest.",
                                                            lease_token="", lease_expires_at=None)
                return scored
            ids = todo[i:i + BATCH]
            outputs = list(Output.objects.filter(pk__in=ids).select_related("item__toolkit").order_by("pk"))
            measures, sentence_rows = scorer.score(outputs, attributions_for(ids))
            with transaction.atomic():
                OutputMeasure.objects.bulk_create(measures, ignore_conflicts=True)
                saved = {om.output_id: om.pk for om in OutputMeasure.objects.filter(run_id=run_id, output_id__in=ids)}
                insert_sentences([(saved[m.output_id], row) for m in measures for row in sentence_rows.get(id(m), ())
                                  if m.output_id in saved])
            scored += len(ids)
            elapsed = time.monotonic() - began
            rate = scored / elapsed if elapsed else 0
            progress = {"done": len(done_ids) + scored, "total": total, "rate": round(rate, 1),
                        "eta_s": round((len(todo) - scored) / rate) if rate else None, "heartbeat": timezone.now().isoformat()}
            MeasureRun.objects.filter(pk=run_id, lease_token=token).update(
                progress=progress, lease_expires_at=timezone.now() + timedelta(seconds=LEASE_SECONDS))
            if progress_callback:
                progress_callback(progress)
        from .contrasts import store_contrasts

        store_contrasts(MeasureRun.objects.get(pk=run_id))
    except Exception as exc:
        log.exception("measure run %s stopped", run_id)
        MeasureRun.objects.filter(pk=run_id).update(status=RunStatus.FAILED, message=f"Stopped: {exc}",
                                                    lease_token="", lease_expires_at=None, finished_at=timezone.now())
        raise
    n = run.output_measures.count()
    MeasureRun.objects.filter(pk=run_id).update(
        status=RunStatus.COMPLETED, finished_at=timezone.now(), lease_token="", lease_expires_at=None,
        progress={"done": n, "total": n, "rate": None, "eta_s": None, "heartbeat": timezone.now().isoformat()},
        message="" if n else "No finished outputs with text to score.")
    return scored


def _filtered(run, ids):
    """The outputs that pass the run's success filter; the counts (and failed ids) are kept on the run."""
    texts = Output.objects.filter(pk__in=ids).order_by("pk").values_list("pk", "text")
    passed, report = success.apply(texts.iterator(chunk_size=2000), run.success_filter)
    MeasureRun.objects.filter(pk=run.pk).update(filter_report=report)
    return passed


def progress_of(run):
    p = run.progress or {}
    total = p.get("total") or 0
    done = p.get("done") or 0
    return {"done": done, "total": total, "percent": round(100 * done / total) if total else (100 if run.status == "completed" else 0),
            "rate": p.get("rate"), "eta_s": p.get("eta_s")}


def generation_runs_for(study):
    return GenerationRun.objects.filter(study=study).order_by("-created_at")
