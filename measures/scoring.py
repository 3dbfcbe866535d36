"""Measure runs: create (validated), start/cancel/resume, and execution in a worker.

A run scores every finished output of its study (or of chosen generation runs) that has text: word and sentence
counts, lexicon category counts, the subject's gender with its source, and optional classifier labels per sentence
or per document. Each output gets one OutputMeasure (unique per run and output), written in batches in one
transaction each; executing again only scores outputs without one, so a crashed run resumes where it stopped.
Runs on the job engine (stereoscope/jobs): any number of workers score chunks of outputs. After the last
chunk the contrasts are computed and stored.
"""

import gc
import json
import logging
import math
import time
from collections import Counter
from contextlib import contextmanager
from itertools import chain
from operator import attrgetter, itemgetter

from django.apps import apps
from django.db import connection, transaction
from django.db.models import TextField
from django.db.models.functions import Cast
from django.utils import timezone

from generation import selectors as generation
from generation.models import RunStatus
from generation.runs.runner import RunStats
from stereoscope import bulk, jobs
from stereoscope.services import record_activity
from stereoscope.stats.textproc import split_sentences

from . import contrasts
from . import gender as gender_mod
from .classifiers import ClassifierError, NliClassifier, label_shares, make_classifier
from .hallucination import score_letters
from .lexical import OR_CONVENTIONS, TextCounter
from .models import ClassifierKind, ClassifierUnit, MeasureRun, OutputMeasure, WordCounts
from .sentence_pack import pack, pack_many
from .services import LEXICONS, lexicons_for, matcher_for
from .success import DEFAULT_KEYWORDS, SuccessFilter, SuccessFilterError
from .tasks import execute_measure_run

log = logging.getLogger(__name__)
BATCH = 250  # outputs per chunk when a model scores them (slow: a chunk must finish well within a lease)
QUICK_BATCH = 1000  # outputs per chunk for lexicons and VADER only (fewer transactions and engine round trips)
_TEXT, _LABEL, _SCORE = attrgetter("text"), attrgetter("label"), attrgetter("score")


class MeasureRunError(ValueError):
    """Bad input for a measure run; the message says what to fix."""


def outputs_for(run):
    return generation.finished_outputs(run.study_id, run_ids=list(run.source_runs.values_list("pk", flat=True)))


def trained_info(trained):
    """What a measure run records about a trained classifier it used."""
    return {
        "kind": "trained",
        "model_id": str(trained),
        "trained_classifier": trained.pk,
        "revision": f"v{trained.version}",
        "labels": list(trained.labels),
        "features": trained.features,
        "k": trained.k,
        "seed": trained.seed,
        "cv_accuracy": trained.metrics.get("accuracy"),
        "cv_macro_f1": trained.metrics.get("macro_f1"),
        "score": "probability of the predicted label",
    }


def classifier_for(run):
    """The run's classifier plug-in (a trained classifier's stored model, or vader / transformers)."""
    if run.classifier == ClassifierKind.TRAINED:
        trained = run.trained_classifier
        return make_classifier(
            "trained", model_blob=trained.model_blob if trained else b"", info=trained_info(trained) if trained else {}
        )
    return make_classifier(run.classifier, path=run.classifier_path, model_id=run.classifier_model_id)


def create_run(
    study,
    *,
    name,
    lexicons=(),
    source_runs=(),
    classifier="",
    classifier_path="",
    classifier_model_id="",
    classifier_unit=ClassifierUnit.SENTENCE,
    gender_sources=None,
    name_genders=None,
    zero_policy="exclude",
    or_orientation="per_category",
    success_filter=False,
    success_keywords=None,
    nli_path="",
    nli_model_id="",
    context_slot="",
    actor=None,
    trained_classifier=None,
):
    name = (name or "").strip()
    if not name:
        raise MeasureRunError("Give the measure run a name.")
    lexicons = list(lexicons or [])
    allowed = set(lexicons_for(study).values_list("pk", flat=True))
    foreign = [str(lx.pk) for lx in lexicons if lx.pk not in allowed]
    if foreign:
        raise MeasureRunError(f"No lexicon {', '.join(foreign)} in this study.")
    source_runs = list(source_runs or [])
    bad = [str(r.pk) for r in source_runs if r.study_id != study.pk]
    if bad:
        raise MeasureRunError(f"No run {', '.join(bad)} in this study.")
    if classifier not in ClassifierKind.values:
        raise MeasureRunError(f"Unknown classifier {classifier!r}; choose vader, transformers, trained or none.")
    if not lexicons and not classifier and not nli_path:
        raise MeasureRunError("Choose at least one lexicon or a classifier (or an NLI model for hallucination).")
    if classifier_unit not in ClassifierUnit.values:
        raise MeasureRunError("The classifier scores each sentence or the whole document.")
    if classifier == ClassifierKind.TRAINED:
        if trained_classifier is None or trained_classifier.study_id != study.pk:
            raise MeasureRunError("Choose a classifier trained in this study.")
    elif trained_classifier is not None:
        raise MeasureRunError("A trained classifier is used with the classifier kind 'trained'.")
    if classifier == ClassifierKind.TRANSFORMERS:
        try:  # fail early with a clear message rather than in the worker
            make_classifier("transformers", path=classifier_path, model_id=classifier_model_id)
        except ClassifierError as exc:
            raise MeasureRunError(str(exc)) from exc
    sources = list(gender_sources or ["slots", "coders", "pronouns"])
    unknown = [s for s in sources if s not in ("slots", "coders", "pronouns")]
    if unknown or not sources:
        raise MeasureRunError("Gender sources are slots, coders and pronouns (in your order of preference).")
    names = dict(name_genders or {})
    if any(v not in ("F", "M") for v in names.values()):
        raise MeasureRunError("Each extra given name needs F or M.")
    if zero_policy not in ("exclude", "smooth"):
        raise MeasureRunError("The zero-count policy is exclude or smooth.")
    if or_orientation not in OR_CONVENTIONS:
        raise MeasureRunError(f"The odds-ratio orientation is {' or '.join(OR_CONVENTIONS)}.")
    keywords = list(DEFAULT_KEYWORDS if success_keywords is None else success_keywords)
    if success_filter:
        try:
            keywords = SuccessFilter(keywords).keywords
        except SuccessFilterError as exc:
            raise MeasureRunError(str(exc)) from None
    context_slot = (context_slot or "").strip()
    nli_info = {}
    if nli_path:
        if not context_slot:
            raise MeasureRunError("The hallucination measure needs the slot holding each letter's biography.")
        try:
            nli_info = NliClassifier(nli_path, model_id=nli_model_id).info
        except ClassifierError as exc:
            raise MeasureRunError(str(exc)) from None
    with transaction.atomic():
        run = MeasureRun.objects.create(
            study=study,
            name=name[:200],
            classifier=classifier,
            classifier_path=classifier_path,
            classifier_model_id=classifier_model_id,
            classifier_unit=classifier_unit,
            gender_sources=sources,
            name_genders=names,
            zero_policy=zero_policy,
            created_by=actor,
            or_orientation=or_orientation,
            success_filter=bool(success_filter),
            success_keywords=keywords if success_filter else [],
            nli_path=nli_path or "",
            nli_model_id=nli_model_id or "",
            context_slot=context_slot if nli_path else "",
            nli_info=nli_info,
            trained_classifier=trained_classifier,
        )
        run.lexicons.set(lexicons)
        run.source_runs.set(source_runs)
        for lx in lexicons:
            LEXICONS.lock(lx)
        record_activity(study, actor, "created measure run", run.name)
    return run


def _enqueue(run):

    execute_measure_run.delay(run.pk)


def start(run, actor=None):
    """Start (or start again: only outputs without a measure are scored)."""
    if run.status in (RunStatus.QUEUED, RunStatus.RUNNING) and jobs.is_live(run):
        raise MeasureRunError("The measure run is already running.")
    record_activity(run.study, actor, "started measure run", run.name)
    return jobs.start(MEASURE_JOB, run, actor)


def cancel(run, actor=None):
    jobs.cancel(MEASURE_JOB, run)
    record_activity(run.study, actor, "cancelled measure run", run.name)
    return run


def dense_range(ids):
    """(lowest, highest) of a set of ids when reading that range reads few rows beyond them (a chunk's ids nearly
    always are dense), else None. A range is two numbers in the query instead of a list of 1,000 that Django takes
    milliseconds to build; the rows inside the range but not asked for are the caller's to drop."""
    low, high = min(ids), max(ids)
    return None if high - low >= 4 * len(ids) else (low, high)


def by_output_ids(queryset, output_ids):
    """(`queryset` narrowed to `output_ids`, the set of them), by their range when dense (dense_range). The rows of
    ids inside the range but not asked for are the caller's to drop (`output_id in` the set)."""
    ids = set(output_ids)
    if not ids:
        return queryset.none(), ids
    span = dense_range(ids)
    if span is None:  # sparse: the range would read many rows of other outputs
        return queryset.filter(output_id__in=ids), ids
    return queryset.filter(output_id__gte=span[0], output_id__lte=span[1]), ids


def attributions_for(output_ids):
    """{output id: [gender answers]} from annotation.GenderAttribution (empty if the annotation app lacks it)."""
    try:
        model = apps.get_model("annotation", "GenderAttribution")
    except LookupError:
        return {}
    found = {}
    rows, ids = by_output_ids(model.objects.order_by("output_id", "pk"), output_ids)
    for output_id, answer in rows.values_list("output_id", "gender"):
        if output_id in ids:
            found.setdefault(output_id, []).append(answer)
    return found


@contextmanager
def gc_paused():
    """No cyclic garbage collection inside: a batch allocates hundreds of thousands of small acyclic objects
    (sentences, predictions, rows; freed by reference counting), and each collection they trigger walks the whole
    heap (about a quarter of the CPU outside VADER in benchmarks/text_measures.py). Restored on exit."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


class Unit:
    """One output to score, as the scorer reads it (lighter than a model instance; the job engine tags it)."""

    __slots__ = ("pk", "text", "slot_values", "item_id", "language", "_job_chunk")

    def __init__(self, pk, text, slot_values, item_id, language):
        self.pk, self.text, self.slot_values, self.item_id = pk, text or "", slot_values or {}, item_id
        self.language = (language if item_id else "") or "en"
        self._job_chunk = None


def load_outputs(ids):
    """Units for these output ids, in id order (read by their range when dense, see dense_range); the slot values
    read as text and decoded by one json.loads."""
    ids = set(ids)
    if not ids:
        return []
    span = dense_range(ids)
    outputs = generation.outputs_by_id(ids) if span is None else generation.outputs_in_id_range(*span)
    rows = [
        row
        for row in outputs.order_by("pk")
        .annotate(slots_json=Cast("slot_values", TextField()))
        .values_list("pk", "text", "slots_json", "item_id", "item__toolkit__language")
        if row[0] in ids
    ]
    slots = contrasts.json_columns([row[2] for row in rows])  # the slot values decoded at once, not row by row
    return [Unit(pk, text, s, item_id, lang) for (pk, text, _, item_id, lang), s in zip(rows, slots, strict=True)]


class Measure:
    """What the scorer found for one output: the OutputMeasure columns, its sentence rows and its tokens."""

    __slots__ = (
        "unit",
        "language",
        "word_count",
        "sentence_count",
        "gender",
        "gender_source",
        "gender_detail",
        "category_counts",
        "label_shares",
        "doc_label",
        "doc_score",
        "mean_score",
        "hallucination_share",
        "success_reason",
        "sentences",
        "predictions",
        "tokens",
    )

    def __init__(self, unit, language, gender, gender_source, gender_detail, success_reason=""):
        self.unit, self.language = unit, language
        self.gender, self.gender_source, self.gender_detail = gender, gender_source, gender_detail
        self.success_reason = success_reason
        self.word_count = self.sentence_count = 0
        self.category_counts, self.label_shares = {}, {}
        self.doc_label, self.doc_score, self.mean_score, self.hallucination_share = "", None, None, None
        self.sentences, self.predictions, self.tokens = (), (), ()

    @property
    def output_id(self):
        return self.unit.pk


class Scorer:
    """Scores outputs for one run: the lexicons' matchers per language, the classifier, the gender rules."""

    def __init__(self, run):
        self.run = run
        self.lexicons = [(lx, list(lx.categories.all()), list(lx.exclusions.all())) for lx in run.lexicons.all()]
        self._matchers = {}
        self._counters = {}
        self.classifier = None
        if run.classifier:
            self.classifier = classifier_for(run)
        self.sources = run.gender_sources or ["slots", "coders", "pronouns"]
        self.success = SuccessFilter(run.success_keywords or DEFAULT_KEYWORDS) if run.success_filter else None
        self.nli = NliClassifier(run.nli_path, model_id=run.nli_model_id) if run.nli_path else None

    def matchers(self, language):
        if language not in self._matchers:
            self._matchers[language] = [matcher_for(lx, language, cats, exs) for lx, cats, exs in self.lexicons]
        return self._matchers[language]

    def counter(self, language):
        """The language's TextCounter: word count and every lexicon's category counts in one pass."""
        if language not in self._counters:
            self._counters[language] = TextCounter(self.matchers(language))
        return self._counters[language]

    def score(self, outputs, attributions):
        """[Measure] for a batch of units (not saved)."""
        with gc_paused():
            return self._score(outputs, attributions)

    def _counted(self, outputs, attributions):
        """[Measure] of the outputs with their subject's gender, words and category counts (each language's texts
        counted at once); an output failed by the success filter gets only its gender."""
        measures, by_language = [], {}
        run = self.run
        resolve, names, sources = gender_mod.resolve, run.name_genders, self.sources
        for out in outputs:
            language, text = out.language, out.text
            g, source, detail = resolve(out.slot_values, attributions.get(out.pk, ()), text, names, language, sources)
            failed = self.success.check(text).reason if self.success else ""
            m = Measure(out, language, g, source, detail, failed)
            measures.append(m)
            if not failed:  # the success filter comes before any measure: only the subject's gender is recorded
                by_language.setdefault(language, []).append(m)
        for language, counted in by_language.items():
            found, _ = self.counter(language).count_many([m.unit.text for m in counted])
            for m, (n_words, counts, tokens) in zip(counted, found, strict=True):
                m.word_count, m.category_counts, m.tokens = n_words, counts, tokens
        return measures

    def _score(self, outputs, attributions):
        to_classify = []
        run = self.run
        by_sentence = self.classifier is not None and run.classifier_unit == ClassifierUnit.SENTENCE
        measures = self._counted(outputs, attributions)
        for m in measures:
            if m.success_reason:
                continue
            sentences = split_sentences(m.unit.text)
            m.sentence_count = len(sentences)
            if self.classifier:
                if by_sentence:
                    if sentences:
                        to_classify.append((m, sentences))
                else:
                    to_classify.append((m, None))
        if self.nli:
            slot = run.context_slot
            with_context = [
                m for m in measures if not m.success_reason and str(m.unit.slot_values.get(slot) or "").strip()
            ]
            pairs = [(str(m.unit.slot_values[slot]), m.unit.text) for m in with_context]
            for m, result in zip(with_context, score_letters(pairs, self.nli), strict=True):
                m.hallucination_share = result.share
        if self.classifier and to_classify:
            texts = []
            for m, sentences in to_classify:
                if sentences is None:
                    texts.append(m.unit.text)
                else:
                    texts.extend(map(_TEXT, sentences))
            predictions = self.classifier.predict(texts)
            if len(predictions) != len(texts):
                raise MeasureRunError(f"The classifier gave {len(predictions)} predictions for {len(texts)} texts.")
            labels = self.classifier.info.get("labels", [])
            i = 0
            for m, sentences in to_classify:
                if sentences is None:
                    p = predictions[i]
                    i += 1
                    m.doc_label, m.doc_score = p.label[:100], p.score
                    m.mean_score = p.score
                    continue
                n = len(sentences)
                mine = predictions[i : i + n]
                i += n
                m.label_shares = label_shares(list(map(_LABEL, mine)), labels)
                m.mean_score = sum(map(_SCORE, mine)) / n
                m.sentences, m.predictions = sentences, mine
        return measures


MEASURE_COLUMNS = (
    "run_id",
    "output_id",
    "language",
    "word_count",
    "sentence_count",
    "gender",
    "gender_source",
    "gender_detail",
    "category_counts",
    "label_shares",
    "doc_label",
    "doc_score",
    "mean_score",
    "hallucination_share",
    "success_reason",
    "created_at",
    "sentences_packed",
)


class NumbersJson:
    """json.dumps(counts) for {text key: int or float} dicts whose keys and value types come in a few orders (every
    measure of a run has its language's categories, its classifier's labels): one %-template per key order and value
    types, filled with the numbers (%d for an int, %r for a finite float: what json.dumps writes); anything else (a
    boolean, NaN, infinity, a key not text) by json.dumps."""

    def __init__(self):
        self._templates = {}

    def __call__(self, counts):
        values = tuple(counts.values())
        types = tuple(map(type, values))
        layout = (tuple(counts), types)
        template = self._templates.get(layout)
        if template is None:
            keys = layout[0]
            if set(map(type, keys)) - {str} or set(types) - {int, float}:
                return json.dumps(counts)
            parts = (
                json.dumps(key).replace("%", "%%") + (": %d" if t is int else ": %r")
                for key, t in zip(keys, types, strict=True)
            )
            template = self._templates[layout] = "{" + ", ".join(parts) + "}"
        if float in types:
            try:
                if not all(map(math.isfinite, values)):
                    return json.dumps(counts)
            except OverflowError:  # an int too large for a float
                return json.dumps(counts)
        return template % values


class DetailJson:
    """json.dumps(detail) for small dicts of text keys and text, int, boolean or None values that repeat (the
    subject gender's detail: which slot, which name), each distinct one written once; anything else by json.dumps."""

    SCALARS = frozenset({str, int, bool, type(None)})  # not floats: -0.0 == 0.0 would share a text
    LIMIT = 10_000

    def __init__(self):
        self._seen = {}

    def __call__(self, detail):
        values = tuple(detail.values())
        types = tuple(map(type, values))
        key = (tuple(detail), values, types)
        try:
            found = self._seen.get(key)
        except TypeError:  # an unhashable value
            return json.dumps(detail)
        if found is None:
            found = json.dumps(detail)
            if set(types) <= self.SCALARS and not set(map(type, key[0])) - {str} and len(self._seen) < self.LIMIT:
                self._seen[key] = found
        return found


def insert_measures(run_id, measures):
    """Insert the OutputMeasure rows (multi-row INSERTs; an output that already has one is left alone). Returns
    {output id: output measure id} of the rows inserted here, so nothing else of a measure is written twice."""
    if not measures:
        return {}
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    details, numbers = DetailJson(), NumbersJson()
    rows = [
        (
            run_id,
            m.unit.pk,
            m.language,
            m.word_count,
            m.sentence_count,
            m.gender,
            m.gender_source,
            details(m.gender_detail),
            numbers(m.category_counts),
            numbers(m.label_shares),
            m.doc_label,
            m.doc_score,
            m.mean_score,
            m.hallucination_share,
            m.success_reason,
            now,
            packed,
        )
        for m, packed in zip(measures, packed_chunk(measures), strict=True)
    ]
    inserted = bulk.insert_values(
        OutputMeasure, MEASURE_COLUMNS, rows, ignore_conflicts=True, returning=("output_id", "id")
    )
    return dict(inserted)


def packed_sentences(measure):
    """The measure's sentence rows (offsets, the classifier's label, score and scores) as one packed value."""
    sentences, predictions = measure.sentences, measure.predictions
    if not sentences:
        return b""
    return pack(
        map(itemgetter(0), sentences),  # index
        map(itemgetter(1), sentences),  # start
        map(itemgetter(2), sentences),  # end
        list(map(attrgetter("label"), predictions)),
        map(attrgetter("score"), predictions),
        map(attrgetter("scores"), predictions),
    )


def packed_chunk(measures):
    """[packed_sentences(m) for m in measures]: the same bytes, packed for the whole chunk at once (pack_many)."""
    sizes = [len(m.sentences) if len(m.sentences) == len(m.predictions) else 0 for m in measures]
    sentences = list(chain.from_iterable(m.sentences for m, n in zip(measures, sizes, strict=True) if n))
    predictions = list(chain.from_iterable(m.predictions for m, n in zip(measures, sizes, strict=True) if n))
    packed = pack_many(
        sizes,
        map(itemgetter(0), sentences),  # index
        map(itemgetter(1), sentences),  # start
        map(itemgetter(2), sentences),  # end
        map(_LABEL, predictions),
        map(_SCORE, predictions),
        map(attrgetter("scores"), predictions),
    )
    return [p if n or not m.sentences else packed_sentences(m) for m, n, p in zip(measures, sizes, packed, strict=True)]


def insert_word_counts(run_id, measures, saved, counter_for):
    """One WordCounts row per subject gender for the measures inserted here (gender known, success filter passed):
    the words of their tokens, counted once per distinct token."""
    by_gender = {}
    for m in measures:
        if m.unit.pk in saved and m.gender in ("F", "M") and not m.success_reason:
            ids, tokens = by_gender.setdefault(m.gender, ([], {}))
            ids.append(m.unit.pk)
            tokens.setdefault(m.language, []).append(m.tokens)
    rows = []
    for gender, (ids, by_language) in by_gender.items():
        words = Counter()
        for language, sequences in by_language.items():
            counter = counter_for(language)
            words_of = counter.words_of
            for token, k in counter.token_counts(sequences):
                for word in words_of(token):
                    words[word] += k
        rows.append(WordCounts(run_id=run_id, gender=gender, output_ids=ids, counts=dict(words)))
    WordCounts.objects.bulk_create(rows)


class MeasureRunJob(jobs.JobKind):
    """A measure run for the job engine: a unit is one finished output without a measure yet; a chunk is scored
    and saved in one transaction. The contrasts are computed once, when the last chunk is done."""

    name = "measures.run"
    model = MeasureRun
    task_name = "measures.execute_run"
    label = "measure run"
    units_label = "outputs"
    error = MeasureRunError
    chunk_size = BATCH

    def enqueue(self, job):
        _enqueue(job)

    def units_per_chunk(self, run):
        quick = run.classifier in ("", ClassifierKind.VADER) and not run.nli_path
        return QUICK_BATCH if quick else BATCH

    def get(self, job_id):
        return MeasureRun.objects.select_related("study").get(pk=job_id)

    def pending_keys(self, run):
        done_ids = set(run.output_measures.values_list("output_id", flat=True))
        return [pk for pk in outputs_for(run).order_by("pk").values_list("pk", flat=True) if pk not in done_ids]

    def load_units(self, run, keys):
        measured, asked = by_output_ids(run.output_measures.all(), keys)
        done_ids = asked.intersection(measured.values_list("output_id", flat=True))
        return load_outputs([k for k in keys if k not in done_ids])

    def run(self, run, source, cancel_check, progress):
        scorer = Scorer(run)
        if scorer.classifier:
            MeasureRun.objects.filter(pk=run.pk).update(classifier_info=scorer.classifier.info)
        stats, began = RunStats(), time.monotonic()
        # The whole loop without automatic cyclic GC: a chunk's rows are hundreds of thousands of small objects, and
        # each collection they would trigger walks the live caches (VADER's, the tokens') again. After each chunk
        # only the youngest generation, what the chunk allocated and still holds, is collected: a chunk's cyclic
        # garbage does not pile up over a long run.
        with gc_paused():
            while not cancel_check():
                outputs = source.take()
                if not outputs:
                    break
                stats.total += len(outputs)
                ids = [o.pk for o in outputs]
                measures = scorer.score(outputs, attributions_for(ids))
                with transaction.atomic():
                    saved = insert_measures(run.pk, measures)
                    insert_word_counts(run.pk, measures, saved, scorer.counter)
                del measures
                for out in outputs:
                    source.finished(out)
                stats.succeeded += len(outputs)
                stats.elapsed_s = time.monotonic() - began
                progress(stats, 0)
                gc.collect(0)
        stats.cancelled = cancel_check()
        return stats

    def progress_extra(self, run_id):
        done = OutputMeasure.objects.filter(run_id=run_id).count()
        return {"done": done, "total": done + jobs.remaining_units(self, run_id)}

    def outcome(self, run):

        with gc_paused():
            contrasts.store_contrasts(MeasureRun.objects.get(pk=run.pk))  # through the module: benchmarks time it
        n = run.output_measures.count()
        MeasureRun.objects.filter(pk=run.pk).update(
            progress={"done": n, "total": n, "rate": None, "eta_s": None, "heartbeat": timezone.now().isoformat()}
        )
        return RunStatus.COMPLETED, "" if n else "No finished outputs with text to score."


MEASURE_JOB = jobs.register(MeasureRunJob())


def execute(run_id, progress_callback=None):
    """Score the run's outputs still without a measure, in this process (with any other workers on it).
    Returns the number this worker scored (0 when nothing was left)."""
    callback = None
    if progress_callback:

        def callback(stats, in_flight, total):
            progress_callback(progress_of(MeasureRun.objects.get(pk=run_id)))

    stats = jobs.execute(MEASURE_JOB, run_id, callback)
    return stats.succeeded if stats is not None else 0


def run_foreground(run, actor=None, progress_callback=None):
    """Queue the run and score it in this process (the CLI's --sync). Returns the number scored."""
    with transaction.atomic():
        jobs.queue(MEASURE_JOB, run, actor)
    return execute(run.pk, progress_callback)


def progress_of(run):
    p = run.progress or {}
    total = p.get("total") or 0
    done = p.get("done") or 0
    return {
        "done": done,
        "total": total,
        "percent": round(100 * done / total) if total else (100 if run.status == "completed" else 0),
        "rate": p.get("rate"),
        "eta_s": p.get("eta_s"),
    }


def generation_runs_for(study):
    return generation.study_runs(study)
