"""Questionnaire prompt templates and option orders (no Django imports).

Built-in templates are verbatim from the seeds: Jung 2025 (Figure 4.1), Fang 2025 Phase 1 (lines 119–131) and
R.U.Psycho (Figure 4 / Appendix B: natural, friendly, JSON). Placeholders: {persona}, {instruction}, {statement},
{options}. Only these names are replaced, so literal braces (the JSON format line) need no escaping.
"""
import random
import re
from dataclasses import dataclass

PLACEHOLDERS = ("persona", "instruction", "statement", "options")
ORDER_MODES = ("fixed", "reversed", "permuted")
NUMBERING = ("position", "original")

JUNG_USER = (
    "Please indicate the degree to which you agree or disagree with the statement below using the listed answer "
    "options. Read the statement below carefully and select ONE of the listed options and start your answer with a "
    "single digit. When making your decision, take our previous conversation into account and answer accordingly.\n"
    "Statement: {statement}\n"
    "Answer options:\n"
    "{options}\n"
    "Answer:"
)
FANG_USER = (
    "Please rate how much you agree or disagree with the following statements (based on your interpretation of "
    "your ethical guidelines) using a 1–7 scale, where:\n\n"
    "1 = Strongly Agree,\n\n"
    "4 = Neutral,\n\n"
    "7 = Strongly Disagree.\n\n"
    "{statement}\n\n"
    "Your response (just the number): "
)
RUPSYCHO_SYSTEM = "Objective: Act like you are {persona}, a survey participant answering a questionnaire.\n{instruction}"
RUPSYCHO_FRIENDLY = (
    "\n\nInstructions: Choose from the list of answer options to answer the question. Answer the question using "
    "only the provided answer options. If none of the options are correct, choose the option that is closest to "
    "being correct."
)
RUPSYCHO_JSON = ' The solution must be provided in this format: {"answer": "answer option"}.'
RUPSYCHO_USER = "Question: {statement}\n\nAnswer Options: {options}\nAnswer:"


@dataclass(frozen=True)
class Template:
    key: str
    name: str
    user: str
    system: str = ""  # with {persona}: used only when the context has a persona
    option_format: str = "lines"  # lines: "0 disagree strongly" per line; comma: "0. disagree strongly, 1. ..."
    persona_required: bool = False
    source: str = ""
    suggested_extractors: tuple = ("number", "label")


TEMPLATES = {
    t.key: t for t in [
        Template("jung2025", "Jung 2025 (Figure 4.1)", JUNG_USER, "You are {persona}. Answer and behave accordingly.",
                 "lines", False, "Jung 2025, Figure 4.1 (seed 000, line 415)", ("number",)),
        Template("fang2025", "Fang 2025 Phase 1 (1–7, just the number)", FANG_USER, "", "lines", False,
                 "Fang 2025, §4.2.1 (seed 001, lines 119–131); anchors are fixed text, so options are not listed",
                 ("number",)),
        Template("rupsycho_natural", "R.U.Psycho natural", RUPSYCHO_USER, RUPSYCHO_SYSTEM, "comma", True,
                 "R.U.Psycho, Figure 4 variant 1 (seed 002)", ("number", "label")),
        Template("rupsycho_friendly", "R.U.Psycho friendly", RUPSYCHO_USER, RUPSYCHO_SYSTEM + RUPSYCHO_FRIENDLY, "comma",
                 True, "R.U.Psycho, Figure 4 variant 2 (seed 002)", ("number", "label")),
        Template("rupsycho_json", "R.U.Psycho JSON", RUPSYCHO_USER, RUPSYCHO_SYSTEM + RUPSYCHO_FRIENDLY + RUPSYCHO_JSON,
                 "comma", True, "R.U.Psycho, Figure 4 variant 3 / Appendix B (seed 002)", ("json", "number", "label")),
    ]
}


class PromptError(ValueError):
    pass


def custom_template(user, system="", option_format="lines"):
    """Validate a custom template: it needs {statement}; unknown {names} are an error."""
    for text, where in ((user, "user"), (system, "system")):
        unknown = sorted(set(re.findall(r"\{(\w+)\}", text or "")) - set(PLACEHOLDERS))
        if unknown:
            raise PromptError(f"The {where} template has unknown placeholder(s) {', '.join('{' + u + '}' for u in unknown)}; "
                              f"use {', '.join('{' + p + '}' for p in PLACEHOLDERS)}.")
    if "{statement}" not in (user or ""):
        raise PromptError("The user template must contain {statement}.")
    if option_format not in ("lines", "comma"):
        raise PromptError("option_format is 'lines' or 'comma'.")
    return Template("custom", "Custom", user, system or "", option_format, False, "custom")


def option_order(points, mode, rng=None):
    """The original scale values in the order shown: fixed, reversed, or a random permutation from `rng`."""
    points = list(points)
    if mode == "fixed":
        return points
    if mode == "reversed":
        return points[::-1]
    if mode == "permuted":
        rng = rng or random.Random()
        order = points[:]
        rng.shuffle(order)
        return order
    raise PromptError(f"Option order must be one of {', '.join(ORDER_MODES)}.")


def presented_options(order, labels, points, numbering="position"):
    """The options as the model sees them. numbering "position": the i-th shown option gets the i-th code of the
    scale (codes always read min..max top to bottom); "original": each option keeps its own scale value as code."""
    out = []
    for position, value in enumerate(order):
        code = points[position] if numbering == "position" else value
        out.append({"code": str(int(code)), "label": labels.get(int(value), ""), "value": value})
    return out


def item_option_keys(item_options):
    """The keys an item's own options are ordered by: their 1-based positions in the instrument file."""
    return list(range(1, len(item_options) + 1))


def presented_item_options(order, item_options, numbering="position"):
    """An item's own options as the model sees them. `order` holds file positions (1-based) in shown order; the
    code is the shown position ("position") or the file position ("original"); value is the option's weight."""
    out = []
    for shown, key in enumerate(order, 1):
        option = item_options[key - 1]
        text, weight = (option.text, option.weight) if hasattr(option, "weight") else (option["text"], option["weight"])
        out.append({"code": str(shown if numbering == "position" else key), "label": text, "value": weight})
    return out


def format_options(options, style="lines"):
    if style == "comma":
        return ", ".join(f"{o['code']}. {o['label']}".strip() for o in options)
    return "\n".join(f"{o['code']} {o['label']}".strip() for o in options)


def _fill(text, values):
    for key, value in values.items():
        text = text.replace("{" + key + "}", value)
    return text


def render_messages(template, statement, options, persona="", turns=(), instruction=""):
    """One fresh conversation: [system persona] + prior turns + the item."""
    values = {"persona": persona or "", "instruction": instruction or "", "statement": statement,
              "options": format_options(options, template.option_format)}
    messages = []
    if template.system and (persona or "{persona}" not in template.system):
        system = _fill(template.system, values).strip()
        if system:
            messages.append({"role": "system", "content": system})
    for turn in turns or ():
        messages.append({"role": turn["role"], "content": turn["content"]})
    messages.append({"role": "user", "content": _fill(template.user, values)})
    return messages


def lists_options(template):
    return "{options}" in template.user or "{options}" in template.system
