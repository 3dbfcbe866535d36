"""Answer extraction from model text (no Django imports).

A chain of extractors runs in order; the first that finds exactly one option wins. Each extractor says "ok",
"inconclusive" (a tie between options) or "not_present" (nothing found). Refusal and apology phrases
(R.U.Psycho's rule-based validator, after Röttger et al. 2024) make an answer "refused": under policy "fallback"
only when no extractor found an option, under "strict" always. Anything not "ok" is a missing value; the raw text
is kept by the caller.

Options are the ones the model SAW, in the presented order: [{"code": "2", "label": "disagree slightly",
"value": 2}, ...]; `code` is what the prompt printed before the label, `value` the original scale point the
option maps back to. For an item with its own answer options (spec.OptionSpec) `value` is the option's weight.
"""
import re
from dataclasses import dataclass

from stereoscope.untrusted import loads_json

EXTRACTORS = ("number", "json", "label", "llm")
RULE_EXTRACTORS = ("number", "json", "label")
JUDGE_STEP = "llm"  # last in a chain: a judge model reads the answers the rules leave inconclusive or not present
JUDGED = ("inconclusive", "not_present")
DEFAULT_CHAIN = ["json", "number", "label"]
REFUSAL_POLICIES = ("fallback", "strict")
STATUSES = ("ok", "refused", "inconclusive", "not_present")

REFUSAL_PATTERNS = [
    r"\bI(?:'m| am) (?:sorry|afraid)\b", r"\bI apologi[sz]e\b", r"\bmy apologies\b", r"\bas an? (?:AI|artificial intelligence)\b",
    r"\bas an? (?:large )?language model\b", r"\bI (?:cannot|can't|can not|won't|will not|am unable to|'m unable to) "
    r"(?:provide|answer|give|express|share|rate|comply|help|assist|participate|choose|select|pick|take)",
    r"\bI (?:do not|don't) have (?:personal )?(?:opinions|beliefs|views|feelings|preferences)\b",
    r"\bI (?:must|have to) (?:decline|refrain)\b", r"\b(?:it is|it's) not appropriate\b", r"\bI'?m not comfortable\b",
    r"\bI am not comfortable\b", r"\bI (?:prefer|would prefer) not to\b",
]
_REFUSAL = re.compile("|".join(REFUSAL_PATTERNS), re.IGNORECASE)


@dataclass
class Extraction:
    status: str  # ok | refused | inconclusive | not_present
    code: str | None = None  # the option code as presented
    value: float | None = None  # the original scale value it maps back to
    method: str = ""
    detail: str = ""

    def as_dict(self):
        return {"status": self.status, "code": self.code, "value": self.value, "method": self.method, "detail": self.detail}


def clean_text(text):
    """Strip markdown emphasis, code fences and surrounding quotes; collapse whitespace."""
    text = (text or "").replace("\r\n", "\n")
    text = re.sub(r"```(?:json)?", " ", text)
    text = re.sub(r"[*_`#>]+", " ", text)
    return re.sub(r"[ \t]+", " ", text).strip().strip("\"'“”‘’ ")


def is_refusal(text):
    return bool(_REFUSAL.search(text or ""))


def _codes(options):
    return {str(o["code"]): o for o in options}


def _number_pattern(code):
    return re.compile(rf"(?<![\d.,-]){re.escape(str(code))}(?![\d])(?!\.\d)")


def extract_number(text, options):
    """The option code as a standalone number. A code at the very start of the answer wins (Jung: "start your
    answer with a single digit"); otherwise the only option code mentioned; several different codes tie."""
    codes = _codes(options)
    body = re.sub(r"^(?:answer|response|my answer|rating|score)\s*[:=-]?\s*", "", clean_text(text), flags=re.IGNORECASE)
    lead = re.match(r"^\(?\s*(-?\d+)(?![\d.,]\d)", body)
    if lead and lead.group(1) in codes:
        return Extraction("ok", lead.group(1), codes[lead.group(1)]["value"], "number", "leading number")
    found = [c for c in codes if _number_pattern(c).search(body)]
    if len(found) == 1:
        return Extraction("ok", found[0], codes[found[0]]["value"], "number", "only option number in the text")
    if len(found) > 1:
        return Extraction("inconclusive", method="number", detail=f"several option numbers: {', '.join(found)}")
    return Extraction("not_present", method="number")


def _find_json(text):
    for match in re.finditer(r"\{[^{}]*\}", text or "", re.DOTALL):
        try:
            data = loads_json(match.group(0))
        except ValueError:
            continue
        if isinstance(data, dict):
            return data
    return None


def extract_json(text, options, field="answer"):
    """A JSON object's field (R.U.Psycho's {"answer": "answer option"}); its value is matched as a number, then a label."""
    data = _find_json(text)
    if data is None or field not in data:
        return Extraction("not_present", method="json", detail="no JSON object with the field" if data is None else f"no field {field!r}")
    value = data[field]
    if isinstance(value, bool) or value is None:
        return Extraction("not_present", method="json", detail=f"field {field!r} is {value!r}")
    if isinstance(value, (int, float)):
        value = str(int(value)) if float(value).is_integer() else str(value)
    for extractor in (extract_number, extract_label):
        got = extractor(str(value), options)
        if got.status != "not_present":
            got.method = "json"
            got.detail = f"{field}={value!r}; {got.detail}".strip("; ")
            return got
    return Extraction("not_present", method="json", detail=f"{field}={value!r} matches no option")


def extract_label(text, options):
    """R.U.Psycho's rule-based judge: per option, count occurrences of its number and of its label (whole words);
    the highest total wins, a tie is inconclusive, no overlap is not present."""
    body = clean_text(text).lower()
    scores = {}
    for option in options:
        label = (option.get("label") or "").strip().lower()
        count = len(_number_pattern(option["code"]).findall(body))
        if label:
            count += len(re.findall(rf"(?<![\w-]){re.escape(label)}(?![\w-])", body))
        if count:
            scores[str(option["code"])] = count
    if not scores:
        return Extraction("not_present", method="label")
    best = max(scores.values())
    top = [c for c, s in scores.items() if s == best]
    if len(top) > 1:
        return Extraction("inconclusive", method="label", detail=f"tie between options {', '.join(top)}")
    codes = _codes(options)
    return Extraction("ok", top[0], codes[top[0]]["value"], "label", f"overlap score {best}")


def extract(text, options, chain=None, refusal_policy="fallback", json_field="answer"):
    """Run the chain; see the module docstring."""
    chain = list(chain or DEFAULT_CHAIN)
    refused = is_refusal(text)
    if refused and refusal_policy == "strict":
        return Extraction("refused", method="validator", detail="refusal or apology phrase")
    if not clean_text(text):
        return Extraction("not_present", method="", detail="empty answer")
    results = []
    for name in chain:
        if name == "number":
            got = extract_number(text, options)
        elif name == "json":
            got = extract_json(text, options, json_field)
        elif name == "label":
            got = extract_label(text, options)
        elif name == JUDGE_STEP:
            continue  # the run asks the judge endpoint afterwards (psychometrics.runs.judge_open_answers)
        else:
            raise ValueError(f"Unknown extractor {name!r}; choose from {', '.join(EXTRACTORS)}.")
        if got.status == "ok":
            if refused:
                got.detail = (got.detail + "; refusal phrase present").strip("; ")
            return got
        results.append(got)
    if refused:
        return Extraction("refused", method="validator", detail="refusal or apology phrase and no option found")
    tie = next((r for r in results if r.status == "inconclusive"), None)
    return tie or Extraction("not_present", method=",".join(c for c in chain if c != JUDGE_STEP))


def validate_chain(chain):
    if not isinstance(chain, (list, tuple)) or not chain:
        raise ValueError(f"The extractor chain is a non-empty list drawn from {', '.join(EXTRACTORS)}.")
    bad = [c for c in chain if c not in EXTRACTORS]
    if bad:
        raise ValueError(f"Unknown extractor(s) {', '.join(map(str, bad))}; choose from {', '.join(EXTRACTORS)}.")
    if JUDGE_STEP in chain and (chain[-1] != JUDGE_STEP or chain.count(JUDGE_STEP) > 1):
        raise ValueError("The model judge (llm) is the last step of the chain, once.")
    return list(chain)


JUDGE_INSTRUCTION = (
    "You judge a survey answer. A participant was shown a statement and a list of answer options and replied in "
    "free text. Decide which ONE option the reply chose. Reply with the option's number only, or NONE if the reply "
    "chose no option or several.")


def judge_messages(statement, options, answer):
    """The judge model's prompt for one open answer (the options as the participant saw them)."""
    listed = "\n".join(f"{o['code']} {o.get('label') or ''}".strip() for o in options)
    return [{"role": "user", "content": f"{JUDGE_INSTRUCTION}\n\nStatement: {statement}\nAnswer options:\n{listed}\n"
                                        f"Reply: {answer}\n\nOption number:"}]


def read_judgement(text, options):
    """The judge's reply mapped to an option: a leading or lone option number, else not present."""
    if re.match(r"^\s*none\b", clean_text(text), re.IGNORECASE):
        return Extraction("not_present", method=JUDGE_STEP, detail="judge: no option")
    got = extract_number(text, options)
    got.method = JUDGE_STEP
    got.detail = f"judge: {got.detail or got.status}"
    return got
