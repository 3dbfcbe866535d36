"""Who judges whose outputs. Pure: no Django imports.

Identity is the model (a lower-cased model id), never the endpoint: two endpoints serving one model are one judge,
and an output pasted from a chat interface counts as its declared model. No policy ever lets a model judge its own
outputs; `forbid_same_family` also keeps judges away from their own provider family.

Policies:
  rotation  each generator model is judged by exactly one other model. When the judges are the generators this is a
            derangement (the seed's Gemini→GPT-4o, GPT-4o→Grok, ... ring); otherwise a seeded matching that spreads
            generators evenly over the judges.
  panel     every eligible judge judges every output.
  k_of_n    k eligible judges drawn per output (seeded, balanced across judges).
"""

import random
import re
from dataclasses import dataclass, field

POLICIES = ("rotation", "panel", "k_of_n")

FAMILY_PATTERNS = [
    ("openai", r"\bgpt|^o\d|chatgpt|davinci|openai"),
    ("anthropic", r"claude|anthropic"),
    ("google", r"gemini|gemma|palm|bard"),
    ("xai", r"grok"),
    ("deepseek", r"deepseek"),
    ("meta", r"llama|meta-"),
    ("mistral", r"mistral|mixtral|ministral"),
    ("alibaba", r"qwen"),
    ("microsoft", r"\bphi-?\d"),
    ("cohere", r"command|cohere"),
]


class PlanError(ValueError):
    """The policy cannot be satisfied; the message says why and what to change."""


def identity(model_id):
    return (model_id or "").strip().lower()


def guess_family(model_id):
    """The provider family of a model from its name (used when no family is declared)."""
    name = identity(model_id).rsplit("/", 1)[-1]
    for family, pattern in FAMILY_PATTERNS:
        if re.search(pattern, name):
            return family
    return ""


@dataclass(frozen=True)
class Judge:
    model: str  # identity
    family: str = ""
    endpoint_ids: tuple = ()


@dataclass
class Plan:
    policy: str
    seed: int
    # generator model -> judge models (rotation: exactly one)
    by_generator: dict = field(default_factory=dict)
    # output key -> judge models
    by_output: dict = field(default_factory=dict)

    def pairs(self):
        return [(out, judge) for out, judges in self.by_output.items() for judge in judges]


def merge_judges(judges):
    """Collapse endpoints that serve the same model into one Judge (endpoint ids kept, first family that is set)."""
    merged = {}
    for judge in judges:
        key = identity(judge.model)
        if key in merged:
            old = merged[key]
            merged[key] = Judge(key, old.family or judge.family, old.endpoint_ids + tuple(judge.endpoint_ids))
        else:
            merged[key] = Judge(key, judge.family, tuple(judge.endpoint_ids))
    return merged


def _family(model, families):
    return (families.get(model) or guess_family(model) or "").lower()


def eligible(generator, judges, families, forbid_same_family):
    """Judge models allowed to judge `generator`: never itself; with the family rule, never its family."""
    out = []
    gen_family = _family(generator, families)
    for model, judge in sorted(judges.items()):
        if model == generator:
            continue
        if forbid_same_family and gen_family and (judge.family or _family(model, families)).lower() == gen_family:
            continue
        out.append(model)
    return out


def _no_judge_error(generator, judges, forbid_same_family):
    if set(judges) == {generator}:
        return PlanError(
            f"Only one model ({generator}) is available: a model may not judge its own outputs. "
            "Add a judge that serves a different model."
        )
    if forbid_same_family:
        return PlanError(
            f"No judge outside the provider family of {generator}. Add a judge from another family "
            "or allow same-family judges."
        )
    return PlanError(f"No judge other than {generator} itself is available for its outputs.")


def rotation(generators, judges, families=None, *, seed=0, forbid_same_family=False):
    """generator model -> one judge model. Raises PlanError when impossible (e.g. one model only)."""
    families = {identity(k): v for k, v in (families or {}).items()}
    generators = sorted({identity(g) for g in generators})
    if not generators:
        return {}
    options = {g: eligible(g, judges, families, forbid_same_family) for g in generators}
    for g in generators:
        if not options[g]:
            raise _no_judge_error(g, judges, forbid_same_family)
    rng = random.Random(f"rotation:{seed}")
    judge_models = sorted(judges)
    capacity = -(-len(generators) // len(judge_models))  # ceil: spread generators evenly over judges
    if set(judge_models) == set(generators) and not forbid_same_family:
        # A single cycle over a seeded order: a derangement like the seed's ring.
        order = list(generators)
        rng.shuffle(order)
        return {order[i]: order[(i + 1) % len(order)] for i in range(len(order))}
    order = sorted(generators, key=lambda g: (len(options[g]), rng.random()))
    shuffled = {g: rng.sample(options[g], len(options[g])) for g in generators}
    for cap in range(capacity, len(generators) + 1):
        load = {j: 0 for j in judge_models}
        chosen = {}
        if _assign(order, 0, shuffled, load, cap, chosen):
            return chosen
    raise PlanError("No rotation satisfies the constraints; add judges or allow same-family judges.")


def _assign(order, i, options, load, cap, chosen):
    if i == len(order):
        return True
    g = order[i]
    for j in sorted(options[g], key=lambda m: load[m]):
        if load[j] < cap:
            load[j] += 1
            chosen[g] = j
            if _assign(order, i + 1, options, load, cap, chosen):
                return True
            load[j] -= 1
            del chosen[g]
    return False


def build_plan(outputs, judges, *, policy, seed=0, k=None, forbid_same_family=False, families=None):
    """outputs: {output key: generator model}. judges: iterable of Judge. Returns a Plan; raises PlanError."""
    if policy not in POLICIES:
        raise PlanError(f"Unknown policy {policy!r}; choose one of {', '.join(POLICIES)}.")
    judges = merge_judges(judges)
    if not judges:
        raise PlanError("Choose at least one judge.")
    families = {identity(m): f for m, f in (families or {}).items()}
    for model, judge in judges.items():
        if judge.family:
            families.setdefault(model, judge.family)
    outputs = {key: identity(model) for key, model in outputs.items()}
    generators = sorted(set(outputs.values()))
    plan = Plan(policy=policy, seed=seed)
    if policy == "rotation":
        if len(set(generators) | set(judges)) < 2:
            only = (generators or sorted(judges))[0]
            raise PlanError(
                f"Rotation needs at least two different models; only {only} is there, and a model may "
                "not judge its own outputs."
            )
        ring = rotation(generators, judges, families, seed=seed, forbid_same_family=forbid_same_family)
        plan.by_generator = {g: [ring[g]] for g in generators}
        plan.by_output = {key: [ring[g]] for key, g in outputs.items()}
    elif policy == "panel":
        for g in generators:
            options = eligible(g, judges, families, forbid_same_family)
            if not options:
                raise _no_judge_error(g, judges, forbid_same_family)
            plan.by_generator[g] = options
        plan.by_output = {key: list(plan.by_generator[g]) for key, g in outputs.items()}
    else:
        if not isinstance(k, int) or isinstance(k, bool) or k < 1:
            raise PlanError("k-of-n needs k, a whole number of judges per output (1 or more).")
        rng = random.Random(f"k_of_n:{seed}")
        load = {j: 0 for j in judges}
        for g in generators:
            options = eligible(g, judges, families, forbid_same_family)
            if not options:
                raise _no_judge_error(g, judges, forbid_same_family)
            if len(options) < k:
                raise PlanError(
                    f"k = {k} but only {len(options)} judge(s) may judge {g} "
                    f"({', '.join(options)}); lower k or add judges."
                )
            plan.by_generator[g] = options
        keys = sorted(outputs, key=str)
        rng.shuffle(keys)
        for key in keys:
            g = outputs[key]
            options = plan.by_generator[g]
            # least-loaded first, ties broken at random: even spread, reproducible from the seed
            picked = sorted(options, key=lambda m: (load[m], rng.random()))[:k]
            for m in picked:
                load[m] += 1
            plan.by_output[key] = sorted(picked)
    check_plan(plan, outputs)
    return plan


def check_plan(plan, outputs):
    """The invariant every policy keeps: nobody judges their own model."""
    for key, judges in plan.by_output.items():
        if outputs[key] in judges:
            raise AssertionError(f"planner bug: {outputs[key]} assigned to judge its own output {key}")


def batches(items, batch_size, seed, key=""):
    """Split `items` (already grouped: one judge × generator model × prompt item) into batches of `batch_size`
    and shuffle the order inside each batch with a seeded generator. Returns a list of lists."""
    if batch_size < 1:
        raise PlanError("Batch size must be at least 1.")
    items = list(items)
    rng = random.Random(f"batch:{seed}:{key}")
    rng.shuffle(items)
    return [items[i : i + batch_size] for i in range(0, len(items), batch_size)]
