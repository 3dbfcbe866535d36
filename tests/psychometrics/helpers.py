import random
import re

from psychometrics.builtin import builtin_specs
from psychometrics.models import Instrument, PersonaSet
from stereoscope.builtin import load_builtins

ASI_LABELS = [
    "disagree strongly",
    "disagree somewhat",
    "disagree slightly",
    "agree slightly",
    "agree somewhat",
    "agree strongly",
]
REFUSAL = "I'm sorry, but as an AI I can't share personal opinions on this."


def load_library():
    load_builtins(builtin_specs(), log=lambda *_: None)
    asi = Instrument.objects.get(builtin_key="asi")
    return asi, PersonaSet.objects.get(builtin_key="rupsycho-personas")


def script_asi(fake_provider, asi, per_item=20, seed=7, refusal_every=9):
    """Queue answers per item: mostly an option code (sometimes with its label), every `refusal_every`-th a refusal."""
    rng = random.Random(seed)
    n = 0
    for item in asi.items.all():
        answers = []
        for _ in range(per_item):
            n += 1
            if n % refusal_every == 0:
                answers.append({"text": REFUSAL})
            else:
                code = rng.randint(0, 5)
                answers.append({"text": f"{code}" if rng.random() < 0.7 else f"{code} - that is my answer."})
        fake_provider.script(answers, match=f"Statement: {item.text}\n")


def expected_value(messages, raw_text):
    """Independent mapping: read the presented options from the prompt text itself, then the label's scale point."""
    user = messages[-1]["content"]
    block = user.split("Answer options:\n", 1)[1].split("\nAnswer:", 1)[0]
    shown = dict(line.split(" ", 1) for line in block.splitlines())
    if raw_text.startswith("I'm sorry"):
        return None
    code = re.match(r"\d", raw_text).group(0)
    return ASI_LABELS.index(shown[code])
