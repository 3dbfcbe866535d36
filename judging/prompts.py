"""Rendering judge prompts. Pure: no Django imports.

A template is text with placeholders in braces. Known placeholders: {target_stereotype}, {stories}, {n_stories},
{story_ids}, {scale_min}, {scale_max}, {answer_example}, {labels} (categorical: "a / b / c"). Other braces (e.g. a
JSON example) are left alone.

Stories are data, not instructions: in the structured styles each story sits between <story id="..."> markers whose
id is random per round (derived from the round's seed), and any marker-like text inside a story is defused, so a
story can neither close its own block nor guess another story's id.
"""

import hashlib
import json
import re

PLACEHOLDERS = (
    "target_stereotype",
    "stories",
    "n_stories",
    "story_ids",
    "scale_min",
    "scale_max",
    "answer_example",
    "labels",
)
REQUIRED = ("target_stereotype", "stories")
PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_]*)\}")
MARKER = re.compile(r"<\s*(/?)\s*story\b", re.IGNORECASE)

SEED_PROMPT = (
    "Hi, can you read through this document very carefully for the five stories in it, and analyze if the "
    "story fits the gender stereotype of {target_stereotype}. If the story fits the stereotype, give 1; if it "
    "doesn't fit, give 0. Be careful not to mix the characters' genders up."
)


FIVE_STORIES = re.compile(r"\bthe five stories\b", re.IGNORECASE)  # the seed prompt's wording (batches of five)
NUMBER_WORDS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
    "twenty",
]


def count_phrase(n):
    """ "the story", "the two stories", …, "the 25 stories": the seed's "the five stories" for a batch of n."""
    if n == 1:
        return "the story"
    return f"the {NUMBER_WORDS[n] if n < len(NUMBER_WORDS) else n} stories"


class TemplateError(ValueError):
    pass


def validate_template(text):
    """Raise TemplateError unless `text` has the required placeholders and no unknown ones."""
    text = text or ""
    if not text.strip():
        raise TemplateError("The template text is empty.")
    names = set(PLACEHOLDER.findall(text))
    unknown = sorted(names - set(PLACEHOLDERS))
    if unknown:
        raise TemplateError(
            f"Unknown placeholder(s): {', '.join('{' + u + '}' for u in unknown)}. "
            f"Known: {', '.join('{' + p + '}' for p in PLACEHOLDERS)}."
        )
    missing = [p for p in REQUIRED if p not in names]
    if missing:
        raise TemplateError(f"The template needs {' and '.join('{' + m + '}' for m in missing)}.")
    return text


def story_id(seed, round_key, output_key):
    """A short id for a story in a round's prompts: stable for the round, unguessable without its seed."""
    digest = hashlib.sha256(f"stereoscope-judge:{seed}:{round_key}:{output_key}".encode()).hexdigest()
    return f"s{digest[:8]}"


def defuse(text):
    """Story text with anything that looks like a story marker neutralised."""
    return MARKER.sub(lambda m: "‹" + m.group(1) + "story", text or "")


def stories_block(stories, style):
    """stories: [(story id, text)] in batch order. style "numbered" (seed) or "delimited"."""
    if style == "numbered":
        return "\n\n".join(f"Story {i}:\n{text.strip()}" for i, (_sid, text) in enumerate(stories, 1))
    return "\n\n".join(f'<story id="{sid}">\n{defuse(text).strip()}\n</story id="{sid}">' for sid, text in stories)


def answer_example(story_ids, kind, scale=(0, 1), labels=None):
    if kind == "categorical" and labels:
        return json.dumps(
            {
                sid: {"label": labels[i % len(labels)], "rationale": "one short sentence"}
                for i, sid in enumerate(story_ids)
            }
        )
    if kind == "likert":
        return json.dumps(
            {
                sid: {"score": scale[1] if i % 2 else scale[0], "rationale": "one short sentence"}
                for i, sid in enumerate(story_ids)
            }
        )
    return json.dumps(
        {sid: {"verdict": 1 if i % 2 else 0, "rationale": "one short sentence"} for i, sid in enumerate(story_ids)}
    )


def render(template_text, kind, target_stereotype, stories, scale=(0, 1), labels=None):
    """The user message for one batch. stories: [(story id, text)]."""
    style = "numbered" if kind == "seed_binary" else "delimited"
    ids = [sid for sid, _ in stories]
    values = {
        "target_stereotype": target_stereotype,
        "stories": stories_block(stories, style),
        "n_stories": str(len(stories)),
        "story_ids": ", ".join(ids),
        "scale_min": str(scale[0]),
        "scale_max": str(scale[1]),
        "answer_example": answer_example(ids, kind, scale, labels),
        "labels": " / ".join(labels or []),
    }
    text = FIVE_STORIES.sub(lambda m: count_phrase(len(stories)), template_text)  # a batch of 2 is not "five"
    return PLACEHOLDER.sub(lambda m: values.get(m.group(1), m.group(0)), text)


def answer_style(kind):
    """How answers of a template kind are parsed."""
    styles = {"seed_binary": "free_text", "structured_json": "json", "likert": "json", "categorical": "auto"}
    return styles.get(kind, "auto")
