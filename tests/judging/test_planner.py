"""The planner: no model ever judges its own outputs, for every policy and 2–12 generator models."""

import itertools

import pytest

from judging.planner import Judge, PlanError, batches, build_plan, guess_family, rotation

FAMILIES = ["openai", "anthropic", "google", "xai", "deepseek", "meta"]


def setup(n_models, trials=3, items=2):
    models = [f"model-{i}" for i in range(n_models)]
    outputs = {(m, item, t): m for m in models for item in range(items) for t in range(trials)}
    judges = [Judge(m, FAMILIES[i % len(FAMILIES)], (i,)) for i, m in enumerate(models)]
    families = {m: FAMILIES[i % len(FAMILIES)] for i, m in enumerate(models)}
    return models, outputs, judges, families


@pytest.mark.parametrize("n_models", range(2, 13))
@pytest.mark.parametrize("policy", ["rotation", "panel", "k_of_n"])
@pytest.mark.parametrize("seed", [0, 1, 7])
def test_no_output_is_judged_by_its_own_model(n_models, policy, seed):
    models, outputs, judges, _ = setup(n_models)
    k = 1 if n_models == 2 else 2
    plan = build_plan(outputs, judges, policy=policy, seed=seed, k=k)
    assert set(plan.by_output) == set(outputs)
    for key, assigned in plan.by_output.items():
        assert outputs[key] not in assigned
        assert len(assigned) == len(set(assigned))
        if policy == "rotation":
            assert len(assigned) == 1
        elif policy == "panel":
            assert sorted(assigned) == sorted(m for m in models if m != outputs[key])
        else:
            assert len(assigned) == k
    if policy == "rotation":
        ring = {g: js[0] for g, js in plan.by_generator.items()}
        assert sorted(ring.values()) == sorted(ring), "a rotation over the same models is a permutation"
        assert all(g != j for g, j in ring.items()), "... with no fixed point: a derangement"
        # every output of a model goes to the same judge, as in the seed
        for key, assigned in plan.by_output.items():
            assert assigned == [ring[outputs[key]]]


@pytest.mark.parametrize("n_models", range(2, 13))
def test_rotation_with_family_rule_keeps_families_apart(n_models):
    models, outputs, judges, families = setup(n_models)
    if len({families[m] for m in models}) < 2:
        pytest.skip("needs two families")  # n_models >= 2 always has two families here; guard only
    plan = build_plan(outputs, judges, policy="rotation", seed=3, forbid_same_family=True)
    for g, (j,) in plan.by_generator.items():
        assert g != j and families[g] != families[j]


def test_rotation_is_reproducible_from_the_seed_and_varies_with_it():
    _, outputs, judges, _ = setup(8)
    a = build_plan(outputs, judges, policy="rotation", seed=5).by_generator
    b = build_plan(outputs, judges, policy="rotation", seed=5).by_generator
    assert a == b
    assert any(build_plan(outputs, judges, policy="rotation", seed=s).by_generator != a for s in range(6, 12))


def test_one_model_only_raises_a_clear_error():
    outputs = {1: "gpt-4o", 2: "gpt-4o"}
    for policy in ["rotation", "panel", "k_of_n"]:
        with pytest.raises(PlanError, match="judge its own outputs"):
            build_plan(outputs, [Judge("gpt-4o")], policy=policy, k=1)


def test_two_endpoints_of_one_model_are_one_judge_and_never_judge_that_model():
    outputs = {1: "GPT-4o", 2: "claude-3"}
    judges = [Judge("gpt-4o", endpoint_ids=(1,)), Judge("GPT-4o ", endpoint_ids=(2,))]
    with pytest.raises(PlanError, match="judge its own outputs|other than gpt-4o"):
        build_plan({1: "gpt-4o"}, judges, policy="panel")
    plan = build_plan(outputs, judges + [Judge("claude-3", endpoint_ids=(3,))], policy="panel")
    assert plan.by_output == {1: ["claude-3"], 2: ["gpt-4o"]}


def test_family_rule_without_other_family_is_a_clear_error():
    outputs = {1: "gpt-4o", 2: "o3"}
    judges = [Judge("gpt-4o", "openai"), Judge("o3", "openai")]
    assert build_plan(outputs, judges, policy="rotation").by_generator == {"gpt-4o": ["o3"], "o3": ["gpt-4o"]}
    with pytest.raises(PlanError, match="provider family"):
        build_plan(outputs, judges, policy="rotation", forbid_same_family=True)


def test_k_of_n_errors_and_balance():
    _, outputs, judges, _ = setup(4, trials=10, items=3)
    with pytest.raises(PlanError, match="k = 4 but only 3"):
        build_plan(outputs, judges, policy="k_of_n", k=4)
    with pytest.raises(PlanError, match="needs k"):
        build_plan(outputs, judges, policy="k_of_n", k=None)
    plan = build_plan(outputs, judges, policy="k_of_n", k=2, seed=1)
    load = {}
    for assigned in plan.by_output.values():
        for j in assigned:
            load[j] = load.get(j, 0) + 1
    assert max(load.values()) - min(load.values()) <= 2


def test_rotation_with_outside_judges_spreads_generators():
    plan = rotation(["a", "b", "c", "d"], {m: Judge(m) for m in ["x", "y"]}, seed=0)
    assert sorted(plan.values()).count("x") == 2 and sorted(plan.values()).count("y") == 2


def test_manual_outputs_count_as_their_declared_model():
    # an output pasted from a chat interface carries model_name "Gemini 2.5 Pro": that model may not judge it
    plan = build_plan({"pasted": "Gemini 2.5 Pro"}, [Judge("gemini 2.5 pro"), Judge("gpt-4o")], policy="panel")
    assert plan.by_output == {"pasted": ["gpt-4o"]}


def test_guess_family():
    assert guess_family("gpt-4o") == "openai" and guess_family("o3") == "openai"
    assert guess_family("claude-sonnet-4") == "anthropic" and guess_family("gemini-2.5-pro") == "google"
    assert guess_family("x-ai/grok-3") == "xai" and guess_family("meta-llama/Llama-3-8B") == "meta"
    assert guess_family("my-own-model") == ""


def test_batches_are_shuffled_reproducibly_and_cover_everything():
    items = list(range(12))
    a = batches(items, 5, seed=3, key="g")
    assert [len(b) for b in a] == [5, 5, 2]
    assert sorted(itertools.chain(*a)) == items
    assert a == batches(items, 5, seed=3, key="g")
    assert any(batches(items, 5, seed=s, key="g") != a for s in range(4, 10))
    with pytest.raises(PlanError):
        batches(items, 0, seed=0)
