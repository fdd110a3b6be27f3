"""Benchmarks of Streams solves whose moves weigh restore costs (`stickiness: restore_cost`)."""
