"""Local Hugging Face transformers models already on disk (never downloaded: HF_HUB_OFFLINE is forced)."""

import asyncio
import os
import threading
import time

from .base import ChatProvider, ChatResult, ProviderError, elapsed_ms, require_local_extra, validate_params

_models = {}
_load_lock = threading.Lock()
_generate_lock = threading.Lock()  # one generation at a time per process: CPU-bound and not thread-safe


def load(model_path):
    os.environ["HF_HUB_OFFLINE"] = "1"
    with _load_lock:
        if model_path not in _models:
            require_local_extra()
            from transformers import AutoModelForCausalLM, AutoTokenizer  # lazy: heavy library, loaded on first use

            if not os.path.exists(model_path):
                raise ProviderError(
                    f"No local model at {model_path!r}; the transformers backend only uses models on disk."
                )
            try:
                tokenizer = AutoTokenizer.from_pretrained(model_path, local_files_only=True)
                model = AutoModelForCausalLM.from_pretrained(model_path, local_files_only=True)
            except Exception as exc:
                raise ProviderError(f"Could not load the local model at {model_path!r}: {exc}") from exc
            model.eval()
            _models[model_path] = (tokenizer, model)
        return _models[model_path]


def render_prompt(tokenizer, messages):
    if getattr(tokenizer, "chat_template", None):
        return tokenizer.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    lines = [f"{m['role']}: {m['content']}" for m in messages]
    return "\n".join(lines) + "\nassistant:"


class TransformersProvider(ChatProvider):
    name = "transformers"

    def complete(self, messages, params):
        require_local_extra()  # a clear message instead of ModuleNotFoundError on a server without the 'local' extra
        import torch  # lazy: heavy library, loaded on first use

        params = validate_params(dict(params))
        started = time.perf_counter()
        tokenizer, model = load(self.endpoint.model_id)
        prompt = render_prompt(tokenizer, messages)
        inputs = tokenizer(prompt, return_tensors="pt")
        max_new = params.get("max_tokens", 64)
        temperature = float(params.get("temperature", 1.0))
        kwargs = {"max_new_tokens": max_new, "do_sample": temperature > 0}
        if temperature > 0:
            kwargs.update(temperature=temperature, top_p=float(params.get("top_p", 1.0)))
            if "top_k" in params:
                kwargs["top_k"] = params["top_k"]
        pad = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else tokenizer.eos_token_id
        with _generate_lock, torch.no_grad():
            if "seed" in params:
                torch.manual_seed(params["seed"])
            try:
                out = model.generate(**inputs, pad_token_id=pad, **kwargs)
            except Exception as exc:
                raise ProviderError(f"Local generation failed: {exc}") from exc
        new_tokens = out[0][inputs["input_ids"].shape[1] :]
        text = tokenizer.decode(new_tokens, skip_special_tokens=True)
        n_in, n_out = int(inputs["input_ids"].shape[1]), int(new_tokens.shape[0])
        eos = tokenizer.eos_token_id
        finish = "stop" if (eos is not None and n_out and int(new_tokens[-1]) == eos) or n_out < max_new else "length"
        if not text.strip():
            raise ProviderError("The local model produced an empty completion.", retryable=True)
        return ChatResult(
            text=text,
            finish_reason=finish,
            input_tokens=n_in,
            output_tokens=n_out,
            raw={"model": self.endpoint.model_id, "prompt": prompt},
            latency_ms=elapsed_ms(started),
            http_status=None,
        )

    async def acomplete(self, messages, params):
        return await asyncio.to_thread(self.complete, messages, params)
