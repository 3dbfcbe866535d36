"""Toolkits: prompt items, slots, dimensions, counterfactual twins, expansion, versions, import/export, pages and API.

Imports nothing from generation.runs (tests/generation/runs/test_layout.py)."""
