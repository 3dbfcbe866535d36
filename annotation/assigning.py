"""Assignment strategies: which coder codes which output. Pure; seeded, so a plan can be reproduced.

Every strategy tops each output up to k coders (coders already on an output count), never gives one coder the
same output twice, and keeps the load even: a coder with fewer outputs is picked first.
- all: every coder gets every output (k = number of coders).
- random_balanced: outputs in random order, each to the k least-loaded coders (random tie-break).
- stratified: the same within each model × item stratum, balancing each coder's share per stratum first,
  so every coder sees every model and item about equally often.

A sample of N stories (`sample_outputs`) is drawn before assigning, stratified by model × prompt (item):
- allocation is proportional with the largest remainder (Hamilton's method): stratum s of size n_s out of M
  stories gets floor(N · n_s / M) stories; the stories left over go one each to the strata with the largest
  remainders N · n_s / M − floor(…), ties to the larger stratum, then to the first stratum in (model, item) order;
- within a stratum the stories (in the order given: callers order them by a stable key, not by database id) are
  shuffled with a generator seeded by the seed and the stratum, and the first ones are taken.
The same seed and the same stories give the same sample, in any study.
"""

import random
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping
from fractions import Fraction
from math import floor
from typing import Any

STRATEGIES = {
    "all": "All coders code every output",
    "random_balanced": "Random, balanced load",
    "stratified": "Stratified by model × item",
}


STRATIFY = {"model_item": "model × prompt"}


class AssignmentPlanError(ValueError):
    pass


def stratum_key(model, item):
    """A sortable key of a model × item stratum (imported stories have no item: they sort last)."""
    return (str(model), item is None, item if item is not None else 0)


def allocate(sizes, n):
    """{stratum: size}, N → {stratum: stories to take}: proportional, largest remainder (see the module doc)."""
    total = sum(sizes.values())
    if n < 1:
        raise AssignmentPlanError("The sample size must be at least 1 (leave it empty to assign every story).")
    if n > total:
        raise AssignmentPlanError(
            f"A sample of {n} stories needs at least {n} finished stories; the chosen runs have {total}."
        )
    quotas = {key: Fraction(n * size, total) for key, size in sizes.items()}
    taken = {key: floor(q) for key, q in quotas.items()}
    left = n - sum(taken.values())
    order = sorted(sizes, key=lambda key: (-(quotas[key] - taken[key]), -sizes[key], key))
    for key in order[:left]:
        taken[key] += 1
    return taken


def sample_outputs(
    outputs: Iterable[tuple[Any, ...]], n: int, *, seed: int = 0
) -> tuple[list[tuple[Any, ...]], list[tuple[Any, Any, int, int]]]:
    """outputs: [(output_id, model, item)] in a stable order → (the sampled rows in that order, per stratum
    [(model, item, available, sampled)] in stratum order)."""
    outputs = list(outputs)
    strata = defaultdict(list)
    for row in outputs:
        strata[stratum_key(row[1], row[2])].append(row)
    taken = allocate({key: len(rows) for key, rows in strata.items()}, n)
    chosen = set()
    summary = []
    for key in sorted(strata):
        rows = strata[key]
        ids = [row[0] for row in rows]
        random.Random(f"{seed}|{key[0]}|{'' if key[1] else key[2]}").shuffle(ids)
        chosen.update(ids[: taken[key]])
        summary.append((rows[0][1], rows[0][2], len(rows), taken[key]))
    return [row for row in outputs if row[0] in chosen], summary


def plan_assignments(
    outputs: Iterable[tuple[Any, ...]],
    coders: Iterable[int],
    *,
    k: int,
    strategy: str,
    seed: int = 0,
    existing: Mapping[int, Collection[int]] | None = None,
) -> list[tuple[int, int]]:
    """outputs: [(output_id, model, item)]; coders: [coder_id]; existing: {output_id: {coder_id}}.

    Returns [(output_id, coder_id)] to add, in queue order.
    """
    coders = list(dict.fromkeys(coders))
    if not coders:
        raise AssignmentPlanError("Choose at least one coder.")
    if strategy not in STRATEGIES:
        raise AssignmentPlanError(f"Unknown strategy '{strategy}'; choose one of {', '.join(STRATEGIES)}.")
    if strategy == "all":
        k = len(coders)
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise AssignmentPlanError("The overlap k must be a whole number of at least 1.")
    if k > len(coders):
        raise AssignmentPlanError(f"An overlap of {k} needs at least {k} coders; {len(coders)} chosen.")
    existing = {oid: set(cs) for oid, cs in (existing or {}).items()}
    rng = random.Random(seed)
    load = {c: 0 for c in coders}
    for cs in existing.values():
        for c in cs:
            if c in load:
                load[c] += 1
    outputs = list(outputs)
    plan = []

    def pick(output_id, stratum_load=None):
        have = existing.setdefault(output_id, set())
        need = k - len(have & set(coders))
        if need <= 0:
            return
        candidates = [c for c in coders if c not in have]
        tie = {c: rng.random() for c in candidates}
        if stratum_load is None:
            candidates.sort(key=lambda c: (load[c], tie[c]))
        else:
            candidates.sort(key=lambda c: (stratum_load[c], load[c], tie[c]))
        for c in candidates[:need]:
            have.add(c)
            load[c] += 1
            if stratum_load is not None:
                stratum_load[c] += 1
            plan.append((output_id, c))

    if strategy == "all":
        for output_id, _, _ in outputs:
            pick(output_id)
    elif strategy == "random_balanced":
        order = outputs[:]
        rng.shuffle(order)
        for output_id, _, _ in order:
            pick(output_id)
    else:
        strata = defaultdict(list)
        for output_id, model, item in outputs:
            strata[(str(model), str(item))].append(output_id)
        for key in sorted(strata):
            ids = strata[key][:]
            rng.shuffle(ids)
            stratum_load = {c: 0 for c in coders}
            for output_id in ids:
                pick(output_id, stratum_load)
    return plan
