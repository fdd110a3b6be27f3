"""`spark-submit` entry point for the pipeline jobs (Spark wants a script file, not a console script):

    spark-submit --master yarn --py-files dist/stickyd-0.1.0.zip cli/submit.py \\
        pipeline plan hdfs:///fleet/snapshot.parquet --out /shared/plan-out --master submit

(the wheel copied to a .zip name: PySpark puts only .zip, .egg and .jar files of --py-files on the
executors' path; docs/pipeline.md, "On a cluster")
"""

from stickyd.cli.main import app

if __name__ == "__main__":
    app(prog_name="stickyd")
