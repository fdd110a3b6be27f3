"""Benchmarks of consumer solves after one event: the incremental path against the full flow."""
