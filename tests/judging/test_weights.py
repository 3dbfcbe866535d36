"""Detection statistics against published values (Fang 2025, Table 3) and reference libraries."""

import math

import pytest
from statsmodels.stats.proportion import proportion_confint

from judging.weights import (
    detection_by,
    detection_by_item,
    flags,
    judge_generator_matrix,
    mean_sd,
    overall_row,
    pairwise_agreement,
    table3,
    weights,
    wilson,
)

DIMENSIONS = ["Relationship", "Leadership", "Morality", "Family", "Sheltered & challenged", "Personality"]
# Fang 2025, Table 3 (seed 001, line 344): per model, the mean detection rate of each dimension...
TABLE3 = {
    "Gemini 2.5 Pro": [0.44, 0.55, 0.72, 0.66, 0.65, 0.71],
    "GPT 4o": [0.72, 0.75, 0.76, 0.47, 0.60, 0.80],
    "OpenAI o3": [0.48, 0.70, 0.76, 0.40, 0.60, 0.89],
    "Deepseek R1": [0.40, 0.85, 0.88, 0.67, 0.85, 0.73],
    "Grok 3": [0.68, 0.85, 1.00, 0.53, 0.65, 0.80],
}
# ... and its published Overall row (mean, SD).
OVERALL = {
    "Gemini 2.5 Pro": (0.62, 0.11),
    "GPT 4o": (0.68, 0.12),
    "OpenAI o3": (0.64, 0.18),
    "Deepseek R1": (0.73, 0.18),
    "Grok 3": (0.75, 0.17),
}


def test_overall_row_of_table3_reproduced_for_all_five_models():
    row = overall_row({m: dict(zip(DIMENSIONS, v, strict=True)) for m, v in TABLE3.items()})
    for model, (m, sd) in OVERALL.items():
        assert round(row[model][0], 2) == m, model
        assert round(row[model][1], 2) == sd, model


@pytest.mark.parametrize("k,n", [(0, 5), (1, 5), (3, 5), (5, 5), (14, 25), (0, 1), (37, 150)])
def test_wilson_matches_statsmodels(k, n):
    low, high = proportion_confint(k, n, alpha=0.05, method="wilson")
    ours = wilson(k, n)
    assert ours[0] == pytest.approx(low, abs=1e-9) and ours[1] == pytest.approx(high, abs=1e-9)


def test_wilson_empty():
    assert wilson(0, 0) == (None, None)


def rows_from(rates, dimension_of, trials=5, judge_for=None):
    """Rows for outputs whose verdicts give exactly `rates[(model, item)]` (multiples of 1/trials)."""
    rows, oid = [], 0
    for (model, item), rate in rates.items():
        ones = round(rate * trials)
        for t in range(trials):
            oid += 1
            rows.append(
                {
                    "output": oid,
                    "item": item,
                    "dimension": dimension_of[item],
                    "generator": model,
                    "judge": (judge_for or {}).get(model, "judge-x"),
                    "value": 1 if t < ones else 0,
                }
            )
    return rows


def test_table3_layout_computed_by_hand():
    dimension_of = {1: "A", 2: "A", 3: "B"}
    rates = {("m1", 1): 0.2, ("m1", 2): 0.6, ("m1", 3): 1.0, ("m2", 1): 0.4, ("m2", 2): 0.4, ("m2", 3): 0.0}
    t = table3(rows_from(rates, dimension_of), dimensions=["A", "B"], models=["m1", "m2"])
    assert t["cells"][("A", "m1")][0] == pytest.approx(0.4) and t["cells"][("A", "m1")][1] == pytest.approx(
        math.sqrt(0.08)
    )
    assert t["cells"][("A", "m2")] == (pytest.approx(0.4), pytest.approx(0.0))
    assert t["cells"][("B", "m1")] == (pytest.approx(1.0), None)
    # all models: item rates over both models' outputs: item1 .3, item2 .5 -> mean .4, sd sqrt(.02); item3 .5
    assert t["all"]["A"] == (pytest.approx(0.4), pytest.approx(math.sqrt(0.02)))
    assert t["all"]["B"] == (pytest.approx(0.5), None)
    # overall: mean and SD of each model's dimension means
    assert t["overall"]["m1"] == (pytest.approx(0.7), pytest.approx(math.sqrt(0.18)))
    assert t["overall"]["m2"] == (pytest.approx(0.2), pytest.approx(math.sqrt(0.08)))
    assert t["overall_all"] == (pytest.approx(0.45), pytest.approx(math.sqrt(0.005)))


def test_detection_by_item_panel_means_and_agreement():
    rows = [
        {"output": 1, "item": 1, "dimension": "A", "generator": "g", "judge": "j1", "value": 1},
        {"output": 1, "item": 1, "dimension": "A", "generator": "g", "judge": "j2", "value": 1},
        {"output": 2, "item": 1, "dimension": "A", "generator": "g", "judge": "j1", "value": 1},
        {"output": 2, "item": 1, "dimension": "A", "generator": "g", "judge": "j2", "value": 0},
    ]
    s = detection_by_item(rows)[1]
    assert s["n"] == 2 and s["detected"] == 1.5 and s["rate"] == 0.75 and s["judges_per_output"] == 2
    observed, corrected, pairs = pairwise_agreement([{"judges": {"a": 1, "b": 1}}, {"judges": {"a": 1, "b": 0}}])
    assert (observed, pairs) == (0.5, 2)
    # p = 3/4 ones -> chance agreement .625; (.5 - .625) / .375 < 0 -> clipped at 0
    assert corrected == 0.0
    by_judge = detection_by(rows, "judge")
    assert by_judge[(1, "j1")]["rate"] == 1.0 and by_judge[(1, "j2")]["rate"] == 0.5
    assert judge_generator_matrix(rows)[("j2", "g")] == {"n": 2, "rate": 0.5}


def test_shrinkage_weights_by_hand():
    stats = {
        1: {"item": 1, "dimension": "A", "n": 25, "rate": 0.8, "judges_per_output": 1, "agreement_corrected": None},
        2: {"item": 2, "dimension": "A", "n": 25, "rate": 0.2, "judges_per_output": 1, "agreement_corrected": None},
        3: {"item": 3, "dimension": "A", "n": 5, "rate": 0.6, "judges_per_output": 1, "agreement_corrected": None},
        4: {"item": 4, "dimension": "B", "n": 25, "rate": 0.5, "judges_per_output": 1, "agreement_corrected": None},
    }
    w = weights(stats, method="shrunk")
    m = (0.8 + 0.2 + 0.6) / 3
    var = ((0.8 - m) ** 2 + (0.2 - m) ** 2 + (0.6 - m) ** 2) / 2
    sampling = (0.8 * 0.2 / 25 + 0.2 * 0.8 / 25 + 0.6 * 0.4 / 5) / 3
    kappa = m * (1 - m) / (var - sampling) - 1
    assert w[1]["kappa"] == pytest.approx(kappa)
    lam1, lam3 = 25 / (25 + kappa), 5 / (5 + kappa)
    assert w[1]["shrunk_rate"] == pytest.approx(lam1 * 0.8 + (1 - lam1) * m)
    assert w[3]["shrunk_rate"] == pytest.approx(lam3 * 0.6 + (1 - lam3) * m)
    assert w[3]["reliability"] < w[1]["reliability"], "fewer trials earn less reliability"
    assert sum(w[i]["weight"] for i in (1, 2, 3)) == pytest.approx(1.0)
    assert w[4]["weight"] == 1.0 and w[4]["kappa"] is None  # a one-prompt dimension is not shrunk
    raw = weights(stats, method="raw")
    assert raw[1]["weight"] == pytest.approx(0.8 / 1.6)
    with pytest.raises(ValueError):
        weights(stats, method="bogus")


def test_agreeing_judges_earn_more_reliability():
    base = {"item": 1, "dimension": "A", "n": 10, "rate": 0.8, "judges_per_output": 3}
    other = {"item": 2, "dimension": "A", "n": 10, "rate": 0.3, "judges_per_output": 3, "agreement_corrected": 0.5}
    agree = weights({1: dict(base, agreement_corrected=1.0), 2: other}, method="shrunk")[1]
    chance = weights({1: dict(base, agreement_corrected=0.0), 2: other}, method="shrunk")[1]
    assert agree["n_eff"] == 30 and chance["n_eff"] == 10
    assert agree["reliability"] > chance["reliability"]


def test_flags():
    stats = {
        1: {"rate": 0.1, "n": 25, "agreement_corrected": None},
        2: {"rate": 0.9, "n": 3, "agreement_corrected": 0.1},
        3: {"rate": 0.6, "n": 25, "agreement_corrected": None},
    }
    judge_rates = {(3, "a"): {"n": 5, "rate": 1.0}, (3, "b"): {"n": 5, "rate": 0.2}}
    f = flags(stats, judge_rates)
    assert f[1] == ["weak: detection 0.10 below 0.30"]
    assert any("agreement" in r for r in f[2]) and any("few outputs" in r for r in f[2])
    assert f[3] == ["unstable judges: their rates range 0.20–1.00"]


def test_mean_sd():
    assert mean_sd([]) == (None, None) and mean_sd([1]) == (1, None)
    assert mean_sd([0, 1]) == (0.5, pytest.approx(math.sqrt(0.5)))


def _verdicts(item, dimension, per_model):
    """Rows for one prompt: per_model {model: [0/1 per story]}, one judge per story."""
    rows = []
    for model, values in per_model.items():
        for trial, value in enumerate(values):
            rows.append(
                {
                    "output": f"{item}-{model}-{trial}",
                    "item": item,
                    "dimension": dimension,
                    "generator": model,
                    "judge": f"judge-of-{model}",
                    "value": value,
                }
            )
    return rows


def test_consistency_weights_by_hand():
    # Dimension R, three prompts, three models, four stories each.
    # Prompt 1: every model 4/4 -> per-model rates 1, 1, 1 -> pairwise |differences| 0, 0, 0 -> consistency 1.
    # Prompt 2: rates 1, .5, 0 -> differences .5, 1, .5 -> mean 2/3 -> consistency 1/3.
    # Prompt 3: never detected: rates 0, 0, 0 -> consistency 1 (every model agrees it does not show).
    rows = (
        _verdicts(1, "R", {"a": [1, 1, 1, 1], "b": [1, 1, 1, 1], "c": [1, 1, 1, 1]})
        + _verdicts(2, "R", {"a": [1, 1, 1, 1], "b": [1, 1, 0, 0], "c": [0, 0, 0, 0]})
        + _verdicts(3, "R", {"a": [0, 0, 0, 0], "b": [0, 0, 0, 0], "c": [0, 0, 0, 0]})
    )
    w = weights(detection_by_item(rows), method="consistency")  # the named alternative
    assert w[1]["method"] == "consistency"
    assert w[1]["consistency"] == pytest.approx(1.0)
    assert w[2]["consistency"] == pytest.approx(1 / 3)
    assert w[3]["consistency"] == pytest.approx(1.0)
    total = 1 + 1 / 3 + 1
    assert w[1]["weight"] == pytest.approx(1 / total)
    assert w[2]["weight"] == pytest.approx((1 / 3) / total)
    assert w[3]["weight"] == pytest.approx(1 / total)
    # A never-detecting prompt keeps its weight, so the weighted score of the dimension stays between the raw rates
    # (raw mean (1 + .5 + 0) / 3 = .5; weighted (1 * 1 + 1/3 * .5 + 1 * 0) / total = 0.5).
    weighted = sum(w[i]["weight"] * w[i]["rate"] for i in w)
    assert weighted == pytest.approx((1 + (1 / 3) * 0.5) / total)
    assert weighted <= max(s["rate"] for s in w.values())


def test_consistency_with_one_model_gives_equal_weights():
    rows = _verdicts(1, "R", {"a": [1, 1]}) + _verdicts(2, "R", {"a": [0, 1]})
    w = weights(detection_by_item(rows), method="consistency")
    assert w[1]["consistency"] is None and w[1]["weight"] == pytest.approx(0.5) == w[2]["weight"]


def _fang_table():
    """Hand-made verdict table: one dimension, four prompts, three models × five stories (15 per prompt)."""
    return (
        _verdicts(1, "R", {m: [0] * 5 for m in "abc"})  # never detected: 0/15
        + _verdicts(2, "R", {m: [1] * 5 for m in "abc"})  # detected in every story of every model: 15/15
        + _verdicts(3, "R", {m: [1, 1, 1, 0, 0] for m in "abc"})  # .6 on every model
        + _verdicts(4, "R", {"a": [1] * 5, "b": [1, 0, 0, 0, 0], "c": [1, 1, 1, 0, 0]})  # 1, .2, .6
        + _verdicts(5, "S", {"a": [1, 0, 0, 0, 0], "b": [0] * 5, "c": [0] * 5})  # another dimension
    )


def test_seed_weights_by_hand_are_the_default():
    # ē = mean of the per-model rates, d = mean pairwise |e_a - e_b|, w ∝ ē(1 - d), normalised within the dimension
    # to sum to its number of prompts (4 in R).
    # 1: ē 0, d 0 -> 0.  2: ē 1, d 0 -> 1.  3: ē .6, d 0 -> .6.  4: ē .6, d (.8 + .4 + .4) / 3 -> .6 × (1 - 1.6/3).
    w = weights(detection_by_item(_fang_table()))
    assert w[1]["method"] == "efficiency"
    basis = {1: 0.0, 2: 1.0, 3: 0.6, 4: 0.6 * (1 - 1.6 / 3)}
    total = sum(basis.values())
    for i, b in basis.items():
        assert w[i]["weight"] == pytest.approx(4 * b / total), i
    assert w[1]["weight"] == 0.0, "a never-detected prompt weighs 0"
    assert w[2]["weight"] == max(s["weight"] for s in w.values()), "detected 15/15 on every model: top weight"
    assert w[4]["mean_model_rate"] == pytest.approx(0.6) and w[4]["mean_pairwise_difference"] == pytest.approx(1.6 / 3)
    assert w[1]["mean_model_rate"] == 0 and w[2]["mean_pairwise_difference"] == 0
    assert sum(w[i]["weight"] for i in (1, 2, 3, 4)) == pytest.approx(4)
    # Prompt 5 is alone in S: its weight is the number of prompts in S.
    assert w[5]["weight"] == pytest.approx(1.0)
    # The old "consistency" reading gave the never-detected prompt the same weight as the 15/15 one.
    old = weights(detection_by_item(_fang_table()), method="consistency")
    assert old[1]["weight"] == pytest.approx(old[2]["weight"])


def test_seed_weights_of_a_dimension_nobody_detects_are_zero():
    rows = _verdicts(1, "R", {m: [0] * 5 for m in "ab"}) + _verdicts(2, "R", {m: [0] * 5 for m in "ab"})
    w = weights(detection_by_item(rows))
    assert w[1]["weight"] == 0.0 and w[2]["weight"] == 0.0


def test_seed_weights_with_one_model_use_the_rate():
    rows = _verdicts(1, "R", {"a": [1, 1, 0, 0]}) + _verdicts(2, "R", {"a": [1, 1, 1, 1]})
    w = weights(detection_by_item(rows))
    assert w[1]["mean_pairwise_difference"] is None
    assert w[1]["weight"] == pytest.approx(2 * 0.5 / 1.5) and w[2]["weight"] == pytest.approx(2 * 1 / 1.5)
