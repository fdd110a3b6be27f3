"""Churn traces replayed with every strategy: the traces, one trace's replay, and the Spark job."""
