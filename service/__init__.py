"""Adapters around the solvers: the command line and the HTTP service."""
