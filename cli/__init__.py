"""The `stickyd` command line: solve, serve, demo and the pipeline jobs."""
