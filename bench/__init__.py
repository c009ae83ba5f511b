"""Benchmarks and evals: each script reproduces a figure docs/performance.md publishes."""
