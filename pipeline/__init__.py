"""PySpark jobs: fleet-wide planning (`plan`, by load with `load_plan`), churn replay
(`churn/`), synthetic inputs (`generate`), and the Structured Streaming `assign` helper
(`kafka_assign`).

Only `spark`, `plan`, `load_plan`, `churn.replay` and `traffic` import pyspark; the rest is plain
Python on top of `models`, `solvers` and `client`.
"""
