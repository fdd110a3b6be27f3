"""PySpark jobs: fleet-wide planning (`plan`), churn replay (`replay`), synthetic inputs
(`generate`), and the Structured Streaming `assign` helper (`kafka_assign`).

Only `stickyd.pipeline.spark`, `stickyd.pipeline.plan`, `stickyd.pipeline.replay` and `stickyd.pipeline.traffic` import
pyspark; the rest is plain Python on top of `models`, `solvers` and `client`.
"""
