"""Manual endpoints: answers are pasted from chat interfaces or imported, never called."""

from .base import ChatProvider, ProviderError


class ManualProvider(ChatProvider):
    name = "manual"

    async def acomplete(self, messages, params):
        raise ProviderError(
            f"“{self.endpoint.name}” is a manual endpoint: paste or import its answers "
            "from the run's collection sheet.",
            retryable=False,
        )

    def complete(self, messages, params):
        raise ProviderError(
            f"“{self.endpoint.name}” is a manual endpoint: paste or import its answers "
            "from the run's collection sheet.",
            retryable=False,
        )
