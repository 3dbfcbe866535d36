"""Estimates for a judge round whose source run has not run yet: the round's own planner over the outputs the run
will write (model × item × slot values × trial), each story counted at its endpoint's max_tokens (an upper bound)."""

import math
from collections import Counter
from decimal import Decimal

from generation.runs import services as generation_runs
from generation.runs.limits import estimate_tokens
from generation.runs.providers.base import merged_params
from generation.runs.runner import cost_of
from generation.toolkits.expansion import expand_units
from judging import planner
from judging.rounds import TOKENS_PER_VERDICT, judge_endpoints, judge_list, target_of


def judge_round_before_generation(rnd, run):
    units = list(expand_units(run.toolkit))
    endpoints = list(run.endpoints.order_by("name"))
    story_tokens = {
        e.model_identity: int(
            merged_params(e, run.param_overrides).get("max_tokens") or generation_runs.DEFAULT_OUTPUT_TOKENS
        )
        for e in endpoints
    }
    outputs, meta = {}, {}
    for e in endpoints:
        for u in units:
            if not target_of(u.item):
                continue  # judged only with a target stereotype, as in the round
            for trial in range(1, run.trials + 1):
                key = f"{e.name}|{u.item.number}|{u.variant_key}|{trial}"
                outputs[key], meta[key] = e.model_identity, (u.item.number, u.variant_key)
    judges = list(rnd.judges.order_by("pk"))
    families = {e.model_identity: e.model_family.lower() for e in endpoints if e.model_family}
    plan = planner.build_plan(
        outputs,
        judge_list(judges),
        policy=rnd.policy,
        seed=rnd.seed,
        k=rnd.k,
        forbid_same_family=rnd.forbid_same_family,
        families=families,
    )
    groups = Counter((judge, outputs[key], *meta[key]) for key, judge in plan.pairs())
    template_tokens = estimate_tokens(rnd.template.text)
    per_judge = {}
    for (judge, generator, _item, _variant), n in groups.items():
        row = per_judge.setdefault(judge, {"calls": 0, "verdicts": 0, "input_tokens": 0, "output_tokens": 0})
        calls = math.ceil(n / rnd.batch_size)
        row["calls"] += calls
        row["verdicts"] += n
        row["input_tokens"] += calls * template_tokens + n * story_tokens[generator]
        row["output_tokens"] += n * TOKENS_PER_VERDICT
    total_cost, priced = Decimal("0"), True
    for judge, endpoint in judge_endpoints(judges).items():
        row = per_judge.get(judge)
        if row is None:
            continue
        cost = cost_of(endpoint, row["input_tokens"], row["output_tokens"])
        priced, total_cost = priced and cost is not None, total_cost + (cost or 0)
    rows = per_judge.values()
    return {
        "kind": "judge round",
        "name": rnd.name,
        "calls": sum(r["calls"] for r in rows),
        "verdicts": sum(r["verdicts"] for r in rows),
        "input_tokens": sum(r["input_tokens"] for r in rows),
        "output_tokens": sum(r["output_tokens"] for r in rows),
        "cost_usd": str(total_cost) if priced else None,
        "problems": [],
        "note": "before generation: stories counted at their max_tokens",
    }
