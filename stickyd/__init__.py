"""stickyd: provably balanced, minimally moving assignments for Kafka consumer groups and Streams.

The packages, each a folder at the repository's root (pyproject.toml maps them under this name):

- `stickyd.models`: the wire contract as data, by problem (consumer, Streams, groups);
- `stickyd.solvers`: the algorithms, by problem, and the time policy they all follow;
- `stickyd.service`: the HTTP service (its edge, its solver processes, admission, group state);
- `stickyd.client`: what runs inside Kafka clients and Spark drivers;
- `stickyd.pipeline`: the PySpark jobs;
- `stickyd.cli`: the `stickyd` command line.
"""

__version__ = "0.1.0"
