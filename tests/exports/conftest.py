import pytest

from tests.generation.runs.conftest import approved_connection


@pytest.fixture
def export_root(tmp_path, settings):
    settings.EXPORT_ROOT = tmp_path / "exports"
    return settings.EXPORT_ROOT


@pytest.fixture
def gen_study(roles):
    """Study A with a toolkit (2 dimensions, 3 items), two endpoints, a run and 6 done outputs."""
    from generation.models import Dimension, GenerationRun, ModelEndpoint, Output, PromptItem, Toolkit

    study = roles["a"]
    toolkit = Toolkit.objects.create(study=study, name="Fang toolkit", version=2)
    leadership = Dimension.objects.create(toolkit=toolkit, name="Leadership", order=1)
    family = Dimension.objects.create(toolkit=toolkit, name="Family", order=2)
    items = [
        PromptItem.objects.create(
            toolkit=toolkit,
            number=1,
            text="Write about a leader.",
            dimension=leadership,
            target_stereotype="charisma in leadership",
            gender_mapping="M = charismatic",
        ),
        PromptItem.objects.create(
            toolkit=toolkit,
            number=2,
            text="Write about a parent.",
            dimension=family,
            target_stereotype="caregiving",
            gender_mapping="F = caregiver",
        ),
        PromptItem.objects.create(toolkit=toolkit, number=3, text="Write about a hero.", dimension=leadership),
    ]
    gpt = ModelEndpoint.objects.create(
        study=study,
        name="gpt",
        provider="openai",
        model_id="gpt-4o",
        connection=approved_connection("openai", "", "OPENAI_API_KEY"),
        default_params={"temperature": 0.7, "seed": 3},
    )
    claude = ModelEndpoint.objects.create(
        study=study,
        name="claude",
        provider="anthropic",
        model_id="claude-x",
        connection=approved_connection("anthropic", "", "ANTHROPIC_API_KEY"),
        default_params={"temperature": 1.0, "max_tokens": 800},
    )
    run = GenerationRun.objects.create(
        study=study, name="Phase 3", toolkit=toolkit, trials=1, param_overrides={"temperature": 0.5}, status="completed"
    )
    run.endpoints.set([gpt, claude])
    outputs = []
    for endpoint in (gpt, claude):
        for item in items:
            outputs.append(
                Output.objects.create(
                    study=study,
                    run=run,
                    item=item,
                    endpoint=endpoint,
                    model_name=endpoint.model_id,
                    trial=1,
                    prompt_text=item.text,
                    status="done",
                    text=f"Story {item.number} by {endpoint.model_id}.\nShe led the team; he cared for the kids.",
                    provenance={
                        "source": "generated",
                        "provider": endpoint.provider,
                        "model": endpoint.model_id,
                        "params": {"temperature": 0.5},
                    },
                )
            )
    return {
        "study": study,
        "toolkit": toolkit,
        "items": items,
        "endpoints": [gpt, claude],
        "run": run,
        "outputs": outputs,
        "roles": roles,
    }


@pytest.fixture
def coded_study(gen_study, make_user):
    """gen_study plus a codebook (dimension > group > codes), 2 coders with span and document codings, memos on a
    coding, a code and a story, gender attributions, and a judge round with verdicts."""
    from annotation.models import Assignment, Code, Codebook, Coding, GenderAttribution, Memo
    from judging.models import JudgeRound, JudgeTemplate, Verdict
    from stereoscope.models import Membership

    study, outputs = gen_study["study"], gen_study["outputs"]
    coder1 = gen_study["roles"]["users"]["coder"]
    coder2 = make_user("second_coder")
    Membership.objects.create(study=study, user=coder2, role="coder")
    book = Codebook.objects.create(study=study, name="Fang codes", version=1)
    leadership = Code.objects.create(codebook=book, name="Leadership", codable=False, order=1)
    group = Code.objects.create(codebook=book, parent=leadership, name="Charisma", codable=False, order=1)
    charisma = Code.objects.create(
        codebook=book,
        parent=group,
        name="M charisma in leadership",
        gender_tag="M",
        order=1,
        color="#ff0000",
        stereotype="men lead by charisma",
    )
    caring = Code.objects.create(
        codebook=book,
        parent=leadership,
        name="F caring leader",
        gender_tag="F",
        order=2,
        kind="inductive",
        description="She leads by caring.",
    )
    family = Code.objects.create(codebook=book, name="Family", codable=False, order=2)
    carer = Code.objects.create(codebook=book, parent=family, name="F carer", gender_tag="F", order=1)
    loose = Code.objects.create(codebook=book, name="Hero <b>bold</b>", order=3)
    text = outputs[0].text  # "Story 1 by gpt-4o.\nShe led the team; he cared for the kids."
    start = text.index("She led")
    c1 = Coding.objects.create(
        output=outputs[0],
        code=charisma,
        coder=coder1,
        codebook=book,
        start=start,
        end=start + 16,
        quote=text[start : start + 16],
    )
    Coding.objects.create(output=outputs[0], code=carer, coder=coder1, codebook=book)  # document level
    h = text.index("he cared")
    Coding.objects.create(
        output=outputs[0], code=carer, coder=coder2, codebook=book, start=h, end=h + 8, quote=text[h : h + 8]
    )
    Coding.objects.create(output=outputs[1], code=caring, coder=coder2, codebook=book)
    Coding.objects.create(
        output=outputs[3], code=loose, coder=coder1, codebook=book, start=0, end=5, quote=outputs[3].text[0:5]
    )
    Assignment.objects.create(study=study, codebook=book, output=outputs[2], coder=coder1, status="done")
    Memo.objects.create(study=study, author=coder1, coding=c1, text="Charisma, clearly.\nSecond line & <tag>")
    Memo.objects.create(study=study, author=coder2, code=caring, text="Watch for care framing.")
    Memo.objects.create(
        study=study, author=gen_study["roles"]["users"]["researcher"], output=outputs[1], text="Odd ending."
    )
    GenderAttribution.objects.create(output=outputs[0], coder=coder1, gender="F")
    GenderAttribution.objects.create(output=outputs[0], coder=coder2, gender="F")
    GenderAttribution.objects.create(output=outputs[1], coder=coder2, gender="M")
    template = JudgeTemplate.objects.create(
        study=study, name="Seed judge", kind="seed_binary", text="{target_stereotype} {stories}"
    )
    gpt, claude = gen_study["endpoints"]
    rnd = JudgeRound.objects.create(
        study=study,
        name="Round 1",
        template=template,
        source_run=gen_study["run"],
        policy="rotation",
        status="completed",
        plan={"pairs": [["gpt-4o", "claude-x"]]},
    )
    rnd.judges.set([gpt, claude])
    for output in outputs:
        judge = claude if output.endpoint_id == gpt.pk else gpt
        Verdict.objects.create(
            round=rnd,
            output=output,
            judge_endpoint=judge,
            judge_model=judge.model_identity,
            value=1 if output.item.number != 3 else 0,
            status="ok",
        )
    return {
        **gen_study,
        "codebook": book,
        "codes": {
            "leadership": leadership,
            "group": group,
            "charisma": charisma,
            "caring": caring,
            "family": family,
            "carer": carer,
            "loose": loose,
        },
        "coders": [coder1, coder2],
        "round": rnd,
    }
