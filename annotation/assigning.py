"""Assignment strategies: which coder codes which output. Pure; seeded, so a plan can be reproduced.

Every strategy tops each output up to k coders (coders already on an output count), never gives one coder the
same output twice, and keeps the load even: a coder with fewer outputs is picked first.
- all: every coder gets every output (k = number of coders).
- random_balanced: outputs in random order, each to the k least-loaded coders (random tie-break).
- stratified: the same within each model × item stratum, balancing each coder's share per stratum first,
  so every coder sees every model and item about equally often.
"""

import random
from collections import defaultdict

STRATEGIES = {
    "all": "All coders code every output",
    "random_balanced": "Random, balanced load",
    "stratified": "Stratified by model × item",
}


class AssignmentPlanError(ValueError):
    pass


def plan_assignments(outputs, coders, *, k, strategy, seed=0, existing=None):
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
