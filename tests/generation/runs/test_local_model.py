"""The transformers backend with a tiny GPT-2 built on disk here (no download, HF_HUB_OFFLINE=1)."""

from importlib.util import find_spec

import pytest

from generation.runs.providers import ProviderError, get_provider
from generation.runs.runner import CallUnit, execute_units

# find_spec, not importorskip: importing torch while collecting would cost every xdist worker two seconds.
pytestmark = [
    pytest.mark.django_db,
    pytest.mark.local_model,
    pytest.mark.skipif(
        find_spec("torch") is None or find_spec("transformers") is None,
        reason="needs torch and transformers: the 'local' extra (pip install -e .[local])",
    ),
]
WORDS = [
    "the",
    "nurse",
    "engineer",
    "she",
    "he",
    "was",
    "kind",
    "brave",
    "story",
    "a",
    "wrote",
    "user",
    "assistant",
    ":",
]


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    path = tmp_path_factory.mktemp("tiny-gpt2")
    vocab = {w: i for i, w in enumerate(["[UNK]", "[EOS]"] + WORDS)}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", eos_token="[EOS]", pad_token="[EOS]")
    fast.save_pretrained(path)
    import torch

    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(vocab), n_positions=128, n_embd=16, n_layer=2, n_head=2, bos_token_id=1, eos_token_id=1
    )
    GPT2LMHeadModel(config).save_pretrained(path)
    return str(path)


def test_local_model_generates_with_seed_reproducibly(study, make_endpoint, tiny_model, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    endpoint = make_endpoint(study, "transformers", model_id=tiny_model)
    messages = [{"role": "user", "content": "a story the nurse"}]
    params = {"max_tokens": 8, "temperature": 1.0, "seed": 3}
    first = get_provider(endpoint).complete(messages, params)
    second = get_provider(endpoint).complete(messages, params)
    assert first.text == second.text and first.text.strip()
    assert all(word in WORDS + ["[UNK]"] for word in first.text.split())
    assert first.output_tokens <= 8 and first.input_tokens > 0 and first.finish_reason in ("stop", "length")
    stats = execute_units(
        study,
        [
            CallUnit(unit_ref=f"local:{i}", endpoint=endpoint, messages=messages, params=params, purpose="test")
            for i in range(3)
        ],
        type("S", (), {"on_success": lambda s, u, r: None, "on_failure": lambda s, u, e: None})(),
    )
    assert stats.succeeded == 3


def test_missing_local_model_is_a_clear_error(study, make_endpoint, tmp_path):
    endpoint = make_endpoint(study, "transformers", model_id=str(tmp_path / "nowhere"))
    with pytest.raises(ProviderError, match="No local model"):
        get_provider(endpoint).complete([{"role": "user", "content": "hi"}], {})
