import pytest

from tests.generation.runs.conftest import make_toolkit  # noqa: F401


@pytest.fixture(autouse=True)
def fast_password_hasher(settings):
    """The fixtures create many users; PBKDF2 at full strength would dominate these tests."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def clear_report_cache():
    from django.core.cache import cache

    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def coded_study(roles, make_user, make_toolkit):  # noqa: F811
    """Study A with 20 stories from one prompt item, two coders (ann, bob) and two judges (model-x, model-y).

    Codebook: dimension Leadership (not codable) → code "M charisma" (linked to item 1) and "F protected";
    ann and bob finish all 20 stories. Return a namespace with everything plus helpers.
    """
    from annotation.models import Assignment, Code, Codebook, Coding
    from generation.models import GenerationRun, Output
    from judging.models import JudgeRound, JudgeTemplate, Verdict
    from stereoscope.models import Membership

    study = roles["a"]
    toolkit = make_toolkit(study, n_items=1)
    item = toolkit.items.get()
    run = GenerationRun.objects.create(study=study, name="Run", toolkit=toolkit)
    outputs = [
        Output.objects.create(
            study=study,
            run=run,
            item=item,
            model_name="model-w",
            trial=i + 1,
            text=f"Story {i + 1}: Alex led the team with charisma and calm.",
            status="done",
        )
        for i in range(20)
    ]
    coders = {name: make_user(name) for name in ("ann", "bob")}
    for user in coders.values():
        Membership.objects.create(study=study, user=user, role="coder")
    codebook = Codebook.objects.create(study=study, name="Fang codes")
    leadership = Code.objects.create(codebook=codebook, name="Leadership", codable=False, order=0)
    charisma = Code.objects.create(
        codebook=codebook, parent=leadership, name="M charisma in leadership", gender_tag="M", item=item, order=1
    )
    protected = Code.objects.create(
        codebook=codebook, parent=leadership, name="F protected & sheltered", gender_tag="F", order=2
    )
    # ann applies charisma on stories 0-11, bob on 0-9 and 14-15; protected: ann 0-3, bob 2-5
    patterns = {"ann": ({*range(12)}, {*range(4)}), "bob": ({*range(10), 14, 15}, {2, 3, 4, 5})}
    for name, (charisma_on, protected_on) in patterns.items():
        coder = coders[name]
        for i, out in enumerate(outputs):
            Assignment.objects.create(study=study, codebook=codebook, output=out, coder=coder, status="done")
            if i in charisma_on:
                Coding.objects.create(
                    output=out, code=charisma, coder=coder, codebook=codebook, start=0, end=30 if name == "ann" else 32
                )
            if i in protected_on:
                Coding.objects.create(output=out, code=protected, coder=coder, codebook=codebook)
    template = JudgeTemplate.objects.create(
        study=study, name="Binary", kind="structured_json", text="{target_stereotype}\n{stories}"
    )
    judge_round = JudgeRound.objects.create(
        study=study, name="Round 1", template=template, source_run=run, policy="panel"
    )
    judge_values = {"model-x": {*range(11)}, "model-y": {*range(9), 12, 13}}
    for judge, ones in judge_values.items():
        for i, out in enumerate(outputs):
            Verdict.objects.create(round=judge_round, output=out, judge_model=judge, value=int(i in ones), status="ok")

    class NS:
        pass

    ns = NS()
    ns.study, ns.outputs, ns.coders, ns.codebook, ns.item = study, outputs, coders, codebook, item
    ns.leadership, ns.charisma, ns.protected = leadership, charisma, protected
    ns.round, ns.users = judge_round, roles["users"]
    return ns
