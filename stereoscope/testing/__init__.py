"""Helpers for tests and benchmarks (imported by neither the product nor its apps)."""
