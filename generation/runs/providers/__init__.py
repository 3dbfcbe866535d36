"""One interface for every LLM call: `get_provider(endpoint).complete(messages, params)`."""

from .base import ChatProvider, ChatResult, ProviderError, get_provider

__all__ = ["ChatProvider", "ChatResult", "ProviderError", "get_provider"]
