"""Benchmarks of the path between the KIP-848 plug-in and the service (the compact encoding)."""
