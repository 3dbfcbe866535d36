"""Turning a judge's answer into per-story verdicts. Pure: no Django imports.

Two answer styles:
  - free text as in the seed ("Story 1: 1 ... Story 2: 0 ..."): each "Story N" heading opens a section; the verdict
    is the number right after the heading or after "score/verdict/rating/give". When a story is mentioned again
    (e.g. a summary after the analysis), the last mention wins. Two different numbers in one section: unparseable.
  - JSON keyed by story id: the LAST JSON object in the answer wins (models often think aloud first). Only the ids of
    this batch count; an id the batch does not have is ignored, so a fake JSON block quoted from a story cannot set
    the verdicts of other stories (their ids are random per round and not in any story).
A story without a verdict is "missing"; one whose value is not a number on the scale is "unparseable".
Categorical templates pass `labels`: a verdict is then one of the labels (any case), its value the label's index.
"""

import json
import re
from dataclasses import dataclass

OK, MISSING, UNPARSEABLE = "ok", "missing", "unparseable"


@dataclass
class Parsed:
    status: str
    value: int | None = None
    rationale: str = ""
    detail: str = ""


HEADING = re.compile(r"(?im)(?:^|[\s*#_>\-|(\[])story\s*(?:#|no\.?\s*)?(\d{1,3})\b\s*(?:\*\*|__)?")
VALUE_AFTER_HEADING = re.compile(
    r"(?i)^\s*(?:\*\*|__|\))?\s*(?:[:=\-–—→>|]+|\bis\b)?\s*(?:\*\*|__)?\s*(?:score\s*[:=]?\s*)?"
    r"(-?\d+(?:\.\d+)?)(?![\d.]*\s*(?:words?|%|characters?|/\s*\d\d))"
)
LABELLED_VALUE = re.compile(
    r"(?i)(?:score|verdict|rating|result|answer|presence|give[sn]?|assign(?:ed)?|gets?|→|=>)\s*"
    r"(?:of|is|a|an|:|=|-|\*\*|__)*\s*(-?\d+(?:\.\d+)?)\b(?![.\d]*\s*(?:words?|%))"
)


def _label_index(value, labels):
    """The index of `value` among `labels` (case and surrounding punctuation ignored), else None."""
    if not isinstance(value, str):
        return None
    text = value.strip().strip("*_\"'`.,;:!").strip().lower()
    lowered = [label.lower() for label in labels]
    return lowered.index(text) if text in lowered else None


def _as_int(value, scale, labels=None):
    """An integer on [scale_min, scale_max] from an int, an integral float, a digit string or (binary) a bool;
    with `labels`, the index of the label named."""
    if labels:
        return _label_index(value, labels)
    low, high = scale
    if isinstance(value, bool):
        if (low, high) != (0, 1):
            return None
        value = int(value)
    elif isinstance(value, float):
        if not value.is_integer():
            return None
        value = int(value)
    elif isinstance(value, str):
        text = value.strip().strip("*").strip()
        lowered = text.lower()
        if (low, high) == (0, 1) and lowered in ("yes", "true", "present", "fits"):
            return 1
        if (low, high) == (0, 1) and lowered in ("no", "false", "absent", "does not fit", "doesn't fit"):
            return 0
        if not re.fullmatch(r"-?\d+(?:\.0+)?", text):
            return None
        value = int(float(text))
    elif not isinstance(value, int):
        return None
    return value if low <= value <= high else None


def _label_pattern(labels):
    alternatives = "|".join(re.escape(label) for label in sorted(labels, key=len, reverse=True))
    return re.compile(
        r"(?i)^\s*(?:\*\*|__|\))?\s*(?:[:=\-–—→>|]+|\bis\b)?\s*(?:\*\*|__)?\s*(?:label\s*[:=]?\s*)?"
        rf"({alternatives})(?![\w-])"
    )


def _free_text_labels(text, n_stories, labels):
    """Free text with labels: "Story N: <label>"; the last mention of a story with a label wins."""
    pattern = _label_pattern(labels)
    found = {}
    headings = [m for m in HEADING.finditer(text) if 1 <= int(m.group(1)) <= n_stories]
    for i, m in enumerate(headings):
        end = headings[i + 1].start() if i + 1 < len(headings) else len(text)
        section = text[m.end() : end]
        hit = pattern.match(section)
        if hit:
            found[int(m.group(1))] = Parsed(OK, _label_index(hit.group(1), labels), _first_line(section[hit.end() :]))
    return {p: found.get(p, Parsed(MISSING, detail="no label for this story")) for p in range(1, n_stories + 1)}


def parse_free_text(text, n_stories, scale=(0, 1), labels=None):
    """Seed style: {position (1-based): Parsed} for positions 1..n_stories."""
    text = text or ""
    if labels:
        return _free_text_labels(text, n_stories, labels)
    found = {}
    headings = [m for m in HEADING.finditer(text) if 1 <= int(m.group(1)) <= n_stories]
    for i, m in enumerate(headings):
        position = int(m.group(1))
        end = headings[i + 1].start() if i + 1 < len(headings) else len(text)
        section = text[m.end() : end]
        first = VALUE_AFTER_HEADING.match(section)
        candidates = [first.group(1)] if first else [v.group(1) for v in LABELLED_VALUE.finditer(section)]
        if not candidates:
            continue  # a mention without a verdict (e.g. "Story 2 is about ..."); a later mention may give one
        values = {_as_int(c, scale) for c in candidates}
        rationale = _first_line(section[first.end() :] if first else section)
        if len(values) == 1 and None not in values:
            found[position] = Parsed(OK, values.pop(), rationale)
        elif None in values and len(values) == 1:
            found[position] = Parsed(
                UNPARSEABLE, None, rationale, f"value {candidates[-1]} is not on the scale {scale[0]}–{scale[1]}"
            )
        else:
            found[position] = Parsed(UNPARSEABLE, None, rationale, f"conflicting values {', '.join(candidates)}")
    return {p: found.get(p, Parsed(MISSING, detail="no verdict for this story")) for p in range(1, n_stories + 1)}


def _first_line(text):
    text = re.sub(r"^[\s:*_\-–—.)]+", "", text or "")
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line[:500]


def json_objects(text):
    """Every top-level JSON object or array in `text`, in order (fenced code blocks included)."""
    decoder = json.JSONDecoder()
    found, i = [], 0
    text = text or ""
    while i < len(text):
        if text[i] in "{[":
            try:
                obj, end = decoder.raw_decode(text, i)
            except ValueError:
                i += 1
                continue
            if isinstance(obj, (dict, list)):
                found.append(obj)
            i = end
        else:
            i += 1
    return found


def _entries(obj):
    """{story id: raw entry} from the shapes judges use: {"id": 1}, {"id": {"verdict": 1, ...}},
    {"verdicts": {...}} or [{"story_id": "id", "verdict": 1}, ...]."""
    if isinstance(obj, dict):
        for wrapper in ("verdicts", "scores", "results", "stories", "ratings", "answers"):
            if wrapper in obj and isinstance(obj[wrapper], (dict, list)):
                return _entries(obj[wrapper])
        return {str(k).strip(): v for k, v in obj.items()}
    if isinstance(obj, list):
        out = {}
        for entry in obj:
            if isinstance(entry, dict):
                key = next((entry[k] for k in ("story_id", "id", "story") if k in entry), None)
                if key is not None:
                    out[str(key).strip()] = entry
        return out
    return {}


VALUE_KEYS = ("verdict", "value", "score", "rating", "presence", "label", "answer", "result")


def _entry_value(entry):
    if isinstance(entry, dict):
        value = next((entry[k] for k in VALUE_KEYS if k in entry), None)
        rationale = next(
            (str(entry[k]) for k in ("rationale", "reason", "explanation", "justification") if k in entry), ""
        )
        return value, rationale
    return entry, ""


def parse_json_answer(text, story_ids, scale=(0, 1), labels=None):
    """{story id: Parsed}. The last JSON block that names at least one of `story_ids` wins."""
    wanted = [str(s) for s in story_ids]
    blocks = [_entries(obj) for obj in json_objects(text)]
    usable = [b for b in blocks if any(s in b for s in wanted)]
    if not usable:
        detail = "no JSON object with these story ids" if blocks else "no JSON object in the answer"
        status = UNPARSEABLE if (text or "").strip() else MISSING
        return {s: Parsed(status, detail=detail) for s in wanted}
    block = usable[-1]
    out = {}
    for s in wanted:
        if s not in block:
            out[s] = Parsed(MISSING, detail="the answer has no verdict for this id")
            continue
        raw, rationale = _entry_value(block[s])
        value = _as_int(raw, scale, labels)
        if value is None:
            wanted_values = " / ".join(labels) if labels else f"on the scale {scale[0]}–{scale[1]}"
            out[s] = Parsed(UNPARSEABLE, None, rationale[:500], f"value {raw!r} is not {wanted_values}")
        else:
            out[s] = Parsed(OK, value, rationale[:500])
    return out


def parse_answer(text, story_ids, style, scale=(0, 1), labels=None):
    """{story id: Parsed} for an answer in `style` ("free_text", "json" or "auto": JSON if it names the ids,
    else free text by position). story_ids are in batch order (position 1 first)."""
    if style in ("json", "auto"):
        parsed = parse_json_answer(text, story_ids, scale, labels)
        if style == "json" or any(p.status == OK for p in parsed.values()):
            return parsed
    by_position = parse_free_text(text, len(story_ids), scale, labels)
    return {sid: by_position[i + 1] for i, sid in enumerate(story_ids)}
