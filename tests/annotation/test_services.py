import pytest

from annotation import services
from annotation.assigning import AssignmentPlanError, plan_assignments
from annotation.models import Assignment, Code, CodeOperation, Coding, GenderAttribution
from annotation.selectors import analysis_units, frequency_table, frequency_table_rows, progress_by_coder
from annotation.services import AnnotationError
from stereoscope.tables import table_text

STORY = "Zoë 👩‍🔬 led the lab; José\u0301 baked bread. Both were kind."


@pytest.fixture
def setup(roles, outputs_factory, small_codebook):
    study = roles["a"]
    cb, codes = small_codebook(study)
    outs = outputs_factory(study, [STORY, "Second story about Ana.", "Third."], model_names=["gpt", "gpt", "claude"])
    coder, researcher = roles["users"]["coder"], roles["users"]["researcher"]
    for out in outs:
        Assignment.objects.create(study=study, codebook=cb, output=out, coder=coder)
    return {
        "study": study,
        "cb": cb,
        "codes": codes,
        "outs": outs,
        "coder": coder,
        "researcher": researcher,
        "roles": roles,
    }


def code(setup, key, out=0, start=None, end=None, coder=None, **kw):
    return services.create_coding(
        study=setup["study"],
        codebook=setup["cb"],
        output=setup["outs"][out],
        code=setup["codes"][key],
        coder=coder or setup["coder"],
        start=start,
        end=end,
        **kw,
    )


def test_span_coding_quotes_code_points_and_converts_utf16(setup):
    start = STORY.index("José")
    c = code(setup, "care_m", start=start, end=start + 5)
    assert c.quote == "José\u0301"
    u16_start = len(STORY[:start].encode("utf-16-le")) // 2
    c2 = code(setup, "care_m", start=u16_start, end=u16_start + 5, offset_unit="utf16")
    assert (c2.start, c2.end, c2.quote) == (start, start + 5, "José\u0301")
    emoji = STORY.index("👩")
    c3 = code(setup, "lead_f", start=0, end=emoji + 1)
    assert c3.quote == "Zoë 👩"
    doc = code(setup, "lead_f")
    assert doc.is_document_level and code(setup, "lead_f").pk == doc.pk  # document codes are not duplicated


@pytest.mark.parametrize(
    "start,end,message",
    [
        (0, 10_000, "past the end"),
        (5, 5, "empty"),
        (-1, 3, "negative"),
        (3, None, "both"),
        ("x", 4, "whole number"),
    ],
)
def test_bad_offsets_rejected(setup, start, end, message):
    with pytest.raises(AnnotationError, match=message):
        code(setup, "lead_m", start=start, end=end)
    assert Coding.objects.count() == 0


def test_codes_from_elsewhere_and_foreign_assignments_rejected(setup, small_codebook, outputs_factory):
    roles = setup["roles"]
    other_cb, other_codes = small_codebook(roles["b"], name="Other")
    with pytest.raises(AnnotationError, match="not in the codebook"):
        services.create_coding(
            study=setup["study"],
            codebook=setup["cb"],
            output=setup["outs"][0],
            code=other_codes["lead_m"],
            coder=setup["coder"],
            start=0,
            end=2,
        )
    with pytest.raises(AnnotationError, match=r"No codebook \d+ in this study"):
        services.create_coding(
            study=setup["study"],
            codebook=other_cb,
            output=setup["outs"][0],
            code=other_codes["lead_m"],
            coder=setup["coder"],
            start=0,
            end=2,
        )
    foreign = outputs_factory(roles["b"], ["B story"])[0]
    with pytest.raises(AnnotationError, match=f"No story {foreign.pk} in this study"):
        services.create_coding(
            study=setup["study"],
            codebook=setup["cb"],
            output=foreign,
            code=setup["codes"]["lead_m"],
            coder=setup["coder"],
            start=0,
            end=2,
        )
    unassigned = outputs_factory(setup["study"], ["Not assigned"])[0]
    with pytest.raises(AnnotationError, match="not in your queue"):
        services.create_coding(
            study=setup["study"],
            codebook=setup["cb"],
            output=unassigned,
            code=setup["codes"]["lead_m"],
            coder=setup["coder"],
            start=0,
            end=2,
        )
    with pytest.raises(AnnotationError, match="dimension or group"):
        code(setup, "lead", start=0, end=2)
    # a coder cannot touch another coder's coding; a researcher can
    theirs = code(setup, "lead_m", start=0, end=3, coder=setup["researcher"])
    with pytest.raises(AnnotationError, match="own codings"):
        services.delete_coding(theirs, user=setup["coder"])
    mine = code(setup, "lead_m", start=0, end=3)
    services.reassign_coding(mine, setup["codes"]["care_f"], user=setup["coder"])
    assert Coding.objects.get(pk=mine.pk).code == setup["codes"]["care_f"]
    services.delete_coding(mine, user=setup["researcher"])
    assert not Coding.objects.filter(pk=mine.pk).exists()


def test_blind_and_consensus_visibility(setup):
    mine = code(setup, "lead_m", start=0, end=3)
    theirs = code(setup, "lead_f", start=0, end=3, coder=setup["researcher"])
    visible = set(services.visible_codings(setup["cb"], setup["outs"][0], setup["coder"]))
    assert visible == {mine}
    Assignment.objects.filter(coder=setup["coder"]).update(mode="consensus")
    assert set(services.visible_codings(setup["cb"], setup["outs"][0], setup["coder"])) == {mine, theirs}


def test_merge_moves_every_coding_and_undo_restores_exactly(setup):
    c = setup["codes"]
    a1 = code(setup, "lead_m", start=0, end=3)
    a2 = code(setup, "lead_m", out=1, start=0, end=6)
    b1 = code(setup, "lead_f", start=4, end=6)
    other = code(setup, "care_f", start=0, end=3)
    target, op = services.merge_codes(
        setup["cb"], [c["lead_m"], c["lead_f"]], new_name="Charisma", new_parent=c["care"], actor=setup["researcher"]
    )
    assert set(Coding.objects.filter(code=target)) == {a1, a2, b1}
    assert Coding.objects.count() == 4
    src = Code.objects.get(pk=c["lead_m"].pk)
    assert not src.active and src.merged_into == target and src.shortcut == ""
    assert target.parent == c["care"] and target.dimension() == c["care"]
    table = frequency_table(setup["cb"], level="dimension")
    assert {r["name"]: r["total"] for r in table["rows"]} == {"Care": 4}
    services.undo_operation(op, actor=setup["researcher"])
    assert Coding.objects.get(pk=a1.pk).code_id == c["lead_m"].pk
    assert Coding.objects.get(pk=b1.pk).code_id == c["lead_f"].pk
    assert Coding.objects.get(pk=other.pk).code_id == c["care_f"].pk
    assert not Code.objects.filter(pk=target.pk).exists()
    src.refresh_from_db()
    assert src.active and src.merged_into is None and src.shortcut == "1"
    assert CodeOperation.objects.get(pk=op.pk).undone_at is not None
    with pytest.raises(AnnotationError, match="already undone"):
        services.undo_operation(op)


def test_merge_into_existing_code_and_history_order(setup):
    c = setup["codes"]
    code(setup, "lead_m", start=0, end=3)
    target, merge = services.merge_codes(setup["cb"], [c["lead_m"]], target=c["lead_f"])
    move = services.move_codes(setup["cb"], [c["lead_f"]], new_parent=c["care"])
    with pytest.raises(AnnotationError, match="later move"):
        services.undo_operation(merge)
    services.undo_operation(move)
    assert Code.objects.get(pk=c["lead_f"].pk).parent == c["lead"]
    services.undo_operation(merge)
    assert Coding.objects.get().code_id == c["lead_m"].pk
    with pytest.raises(AnnotationError, match="itself"):
        services.merge_codes(setup["cb"], [c["lead_m"]], target=c["lead_m"])
    with pytest.raises(AnnotationError, match="dimension or group"):
        services.merge_codes(setup["cb"], [c["lead_m"]], target=c["care"])
    with pytest.raises(AnnotationError, match="inside itself"):
        services.move_codes(setup["cb"], [c["lead"]], new_parent=c["lead"])


def test_split_and_undo(setup):
    c = setup["codes"]
    keep = code(setup, "care_f", start=0, end=3)
    move = code(setup, "care_f", out=1, start=0, end=6)
    new, op = services.split_code(c["care_f"], [move.pk], new_name="F nurturing")
    assert Coding.objects.get(pk=move.pk).code == new and Coding.objects.get(pk=keep.pk).code == c["care_f"]
    assert new.parent == c["care"]
    with pytest.raises(AnnotationError, match="do not carry"):
        services.split_code(c["care_f"], [move.pk], new_name="again")
    services.undo_operation(op)
    assert Coding.objects.get(pk=move.pk).code == c["care_f"] and not Code.objects.filter(pk=new.pk).exists()


def test_rename_and_create_undo(setup):
    c = setup["codes"]
    services.update_code(c["lead_m"], name="M charm", color="#123456")
    op = CodeOperation.objects.filter(kind="rename").first()
    services.undo_operation(op)
    c["lead_m"].refresh_from_db()
    assert (c["lead_m"].name, c["lead_m"].color) == ("M charisma", "#e03131")
    with pytest.raises(AnnotationError, match="already used"):
        services.update_code(c["lead_m"], shortcut="2")
    code_new, coding = services.create_code_from_selection(
        study=setup["study"],
        codebook=setup["cb"],
        output=setup["outs"][0],
        coder=setup["coder"],
        start=0,
        end=3,
        name="F scientist",
        parent=c["lead"],
    )
    assert code_new.kind == "inductive" and coding.code == code_new


def test_locked_codebook_refuses_edits(setup):
    services.CODEBOOKS.lock_by_hand(setup["cb"])
    with pytest.raises(AnnotationError, match="locked"):
        services.create_code(setup["cb"], name="new")
    v2 = services.CODEBOOKS.new_version(setup["cb"])
    assert v2.version == 2 and v2.parent == setup["cb"] and v2.codes.count() == 6 and not v2.locked


def test_frequency_table_breakdowns(setup):
    code(setup, "lead_m", start=0, end=3)
    code(setup, "lead_m", out=1, start=0, end=3)
    code(setup, "lead_f", out=2, start=0, end=3)
    code(setup, "care_f", out=2)
    table = frequency_table(setup["cb"], by="model")
    rows = {r["name"]: r for r in table["rows"]}
    assert table["columns"] == ["claude", "gpt"]
    assert rows["M charisma"]["cells"] == {"gpt": 2} and rows["M charisma"]["stories"] == 2
    assert rows["M communion"]["total"] == 0 and table["total"] == 4
    by_gender = frequency_table(setup["cb"], level="dimension", by="gender_tag")
    dims = {r["name"]: r["cells"] for r in by_gender["rows"]}
    assert dims == {"Leadership": {"M": 2, "F": 1}, "Care": {"F": 1}}
    csv_text = table_text(*frequency_table_rows(table))
    assert csv_text.splitlines()[0] == "code,dimension,gender_tag,codings,stories,claude,gpt"
    assert "Leadership/M charisma,Leadership,M,2,2,0,2" in csv_text
    units = analysis_units(setup["cb"], "dimension")
    assert units[setup["codes"]["lead_m"].pk][1] == "Leadership"
    assert progress_by_coder(setup["cb"])[0]["codings"] == 4
    with pytest.raises(ValueError):
        frequency_table(setup["cb"], by="nonsense")


def test_assignment_strategies():
    outputs = [(i, f"m{i % 3}", i % 5) for i in range(60)]
    coders = [1, 2, 3, 4]
    for strategy in ("random_balanced", "stratified"):
        plan = plan_assignments(outputs, coders, k=2, strategy=strategy, seed=7)
        assert len(plan) == 120 and len(set(plan)) == 120
        per_output = {}
        for o, c in plan:
            per_output.setdefault(o, set()).add(c)
        assert all(len(v) == 2 for v in per_output.values())
        loads = [sum(1 for _, c in plan if c == coder) for coder in coders]
        assert max(loads) - min(loads) <= 1
        assert plan == plan_assignments(outputs, coders, k=2, strategy=strategy, seed=7)
    strat = plan_assignments(outputs, coders, k=1, strategy="stratified", seed=1)
    models_per_coder = {c: {f"m{o % 3}" for o, cc in strat if cc == c} for c in coders}
    assert all(len(v) == 3 for v in models_per_coder.values())
    assert len(plan_assignments(outputs, coders, k=1, strategy="all")) == 240
    topped = plan_assignments(outputs[:1], coders, k=2, strategy="random_balanced", existing={0: {1}})
    assert len(topped) == 1 and topped[0][1] != 1
    for bad in [dict(k=5, strategy="random_balanced"), dict(k=0, strategy="random_balanced"), dict(k=1, strategy="x")]:
        with pytest.raises(AssignmentPlanError):
            plan_assignments(outputs, coders, **bad)


def test_create_and_reassign_assignments(roles, outputs_factory, small_codebook, make_user):
    from stereoscope.models import Membership

    study = roles["a"]
    cb, _ = small_codebook(study)
    outputs_factory(study, [f"story {i}" for i in range(10)])
    coder2 = make_user("coder2")
    Membership.objects.create(study=study, user=coder2, role="coder")
    coders = [roles["users"]["coder"], coder2]
    created = services.create_assignments(study, cb, outputs=services.outputs_of(study), coders=coders, k=2)
    assert len(created) == 20
    assert services.create_assignments(study, cb, outputs=services.outputs_of(study), coders=coders, k=2) == []
    with pytest.raises(AnnotationError, match="not a coder"):
        services.create_assignments(
            study, cb, outputs=services.outputs_of(study), coders=[roles["users"]["outsider"]], k=1
        )
    a = Assignment.objects.filter(coder=coder2).first()
    with pytest.raises(AnnotationError, match="already has"):
        services.reassign_assignment(a, coder=roles["users"]["coder"])
    with pytest.raises(AnnotationError, match="another coder"):
        services.set_assignment_status(a, user=roles["users"]["coder"], done=True)
    services.set_assignment_status(a, user=coder2, done=True)
    assert Assignment.objects.get(pk=a.pk).status == "done"
    nxt = services.next_assignment(cb, coder2)
    assert nxt is not None and nxt.pk != a.pk


def test_gender_attribution_and_memos(setup):
    out = setup["outs"][0]
    services.set_gender_attribution(out, coder=setup["coder"], gender="F", character="Zoë")
    services.set_gender_attribution(out, coder=setup["coder"], gender="nonbinary")
    assert GenderAttribution.objects.get().gender == "nonbinary"
    with pytest.raises(AnnotationError, match="Gender must be"):
        services.set_gender_attribution(out, coder=setup["coder"], gender="X")
    c = code(setup, "lead_m", start=0, end=3)
    memo = services.add_memo(setup["study"], author=setup["coder"], text="because", coding=c)
    assert memo.coding == c
    with pytest.raises(AnnotationError, match="exactly one"):
        services.add_memo(setup["study"], author=setup["coder"], text="x", coding=c, output=out)
    with pytest.raises(AnnotationError, match="some text"):
        services.add_memo(setup["study"], author=setup["coder"], text="  ", output=out)
    with pytest.raises(AnnotationError, match="own memos"):
        services.update_memo(memo, user=setup["researcher"], text="hijack")
