"""`spark-submit` entry point for the pipeline jobs (Spark wants a script file, not a console script):

    spark-submit --master yarn --py-files dist/stickyd-0.1.0-py3-none-any.whl cli/submit.py \\
        pipeline plan hdfs:///fleet/snapshot.parquet --out /shared/plan-out --master submit
"""

from stickyd.cli.main import app

if __name__ == "__main__":
    app(prog_name="stickyd")
