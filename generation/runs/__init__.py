"""Runs: model endpoints, provider connections and adapters, the one runner for LLM calls, limits, spending, batch
mode, generation runs, manual collection and output import, pages and API."""
