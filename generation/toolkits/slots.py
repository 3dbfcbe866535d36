"""`{slot}` placeholders in prompt texts: parse, validate and render. No Django imports.

A slot is `{name}` with name = a letter or underscore, then letters, digits or underscores.
`{{` and `}}` stand for literal braces. Any other brace is an error, so a typo such as `{name` or
`{first name}` never reaches a model silently.
"""

import re

SLOT_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


class SlotError(ValueError):
    """A prompt text or slot definition that cannot be rendered; the message says what to fix."""


def _tokens(text):
    """Yield ("text", str) and ("slot", name) tokens; raise SlotError on a stray brace."""
    i, n, buf = 0, len(text), []
    while i < n:
        ch = text[i]
        if ch == "{":
            if text.startswith("{{", i):
                buf.append("{")
                i += 2
                continue
            end = text.find("}", i + 1)
            name = text[i + 1 : end] if end != -1 else ""
            if end == -1 or not SLOT_NAME.fullmatch(name):
                shown = text[i : end + 1] if end != -1 else text[i : i + 20]
                raise SlotError(
                    f"Invalid placeholder {shown!r} at character {i + 1}: "
                    "a slot is written {name} with letters, digits "
                    "or underscores only; write {{ and }} for literal braces."
                )
            if buf:
                yield "text", "".join(buf)
                buf = []
            yield "slot", name
            i = end + 1
        elif ch == "}":
            if text.startswith("}}", i):
                buf.append("}")
                i += 2
                continue
            raise SlotError(f"Unmatched '}}' at character {i + 1}; write }}}} for a literal brace.")
        else:
            buf.append(ch)
            i += 1
    if buf:
        yield "text", "".join(buf)


def parse_slots(text):
    """The slot names used in `text`, in order of first use, without repeats."""
    seen = []
    for kind, value in _tokens(text or ""):
        if kind == "slot" and value not in seen:
            seen.append(value)
    return seen


def render(text, values):
    """Fill every `{slot}` in `text` from `values`; unknown slots raise SlotError naming the known ones."""
    out = []
    for kind, value in _tokens(text or ""):
        if kind == "text":
            out.append(value)
        elif value in values:
            out.append(str(values[value]))
        else:
            known = ", ".join(sorted(values)) or "none"
            raise SlotError(f"Unknown slot {{{value}}}; the slots defined here are: {known}.")
    return "".join(out)


def escape_braces(text):
    """Literal text → template text (for swapped or imported texts that must not gain slots)."""
    return text.replace("{", "{{").replace("}", "}}")


def normalize_slot_values(slots, where="slots"):
    """Validate a slots mapping {name: [values]} and return it with every value as a string."""
    if slots in (None, ""):
        return {}
    if not isinstance(slots, dict):
        raise SlotError(
            f'{where} must be an object mapping slot names to lists of values, e.g. {{"age": ["20", "40"]}}.'
        )
    clean = {}
    for name, values in slots.items():
        if not isinstance(name, str) or not SLOT_NAME.fullmatch(name):
            raise SlotError(
                f"{where}: {name!r} is not a valid slot name (letters, digits, underscores; not starting with a digit)."
            )
        if isinstance(values, (str, int, float)) and not isinstance(values, bool):
            values = [values]
        if not isinstance(values, list) or not values:
            raise SlotError(f"{where}: slot {name!r} needs a non-empty list of values.")
        clean_values = []
        for value in values:
            if isinstance(value, bool) or not isinstance(value, (str, int, float)):
                raise SlotError(f"{where}: slot {name!r} has a value {value!r} that is not text or a number.")
            value = str(value)
            if value in clean_values:
                raise SlotError(f"{where}: slot {name!r} lists the value {value!r} twice.")
            clean_values.append(value)
        clean[name] = clean_values
    return clean


def normalize_combinations(combinations, where="combinations"):
    """Validate listed combinations [{slot: value, ...}, ...]; None means 'use the Cartesian product'."""
    if combinations in (None, ""):
        return None
    if not isinstance(combinations, list) or not combinations:
        raise SlotError(
            f'{where} must be a non-empty list of objects such as {{"name": "Kelly", "gender": "female"}}, or empty.'
        )
    clean, keys = [], None
    for index, combo in enumerate(combinations, start=1):
        if not isinstance(combo, dict) or not combo:
            raise SlotError(f"{where}: entry {index} must be a non-empty object of slot values.")
        entry = normalize_slot_values({k: [v] for k, v in combo.items()}, where=f"{where} entry {index}")
        entry = {k: v[0] for k, v in entry.items()}
        if keys is None:
            keys = set(entry)
        elif set(entry) != keys:
            raise SlotError(
                f"{where}: entry {index} names slots {sorted(entry)} but entry 1 names {sorted(keys)}; "
                "every entry needs the same slots."
            )
        if entry in clean:
            raise SlotError(f"{where}: entry {index} repeats an earlier combination.")
        clean.append(entry)
    return clean
