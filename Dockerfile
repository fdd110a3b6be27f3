# stickyd images. Built and run elsewhere; on the development machines there is no Docker
# engine, so this file is linted (hadolint) and its commands are tested outside Docker.
#
#   docker build -t stickyd .                                   # the service (the default, last stage)
#   docker build --target pipeline -t stickyd-pipeline .        # + Java 17 and pyspark for `stickyd pipeline`
#
# The service listens on all interfaces, so it requires bearer tokens (STICKYD_AUTH=required).
# Create the first one inside the running container (same database settings as its `serve`):
#   docker exec CONTAINER stickyd tokens create --tenant NAME      # prints the token alone

FROM python:3.11-slim AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
RUN python -m venv /opt/stickyd
ENV PATH=/opt/stickyd/bin:$PATH
WORKDIR /src
# dependencies first, in their own layer: they change far less often than the source; the `kafka`
# extra too, so that the service can watch a cluster (STICKYD_WATCH_BOOTSTRAP_SERVERS)
COPY pyproject.toml README.md ./
RUN python -c "import tomllib; p = tomllib.load(open('pyproject.toml', 'rb'))['project']; \
print(*p['dependencies'], *p['optional-dependencies']['kafka'], sep='\n')" > /tmp/requirements.txt \
    && pip install -r /tmp/requirements.txt
# the packages, each a folder of the repository, installed under the one import name `stickyd`
COPY stickyd ./stickyd
COPY models ./models
COPY solvers ./solvers
COPY service ./service
COPY client ./client
COPY pipeline ./pipeline
COPY cli ./cli
RUN pip install --no-deps .

# the pipeline's extra Python dependencies (pyspark, pyarrow, pandas, matplotlib), only in its image;
# their version ranges are pyproject.toml's `pipeline` extra, so hadolint's pin rule cannot see them
FROM build AS pipeline-build
# hadolint ignore=DL3013
RUN pip install ".[pipeline]"

FROM python:3.11-slim AS pipeline
# Spark needs a Java runtime; Debian's package follows the base image's security updates,
# so it is deliberately not pinned to one build
# hadolint ignore=DL3008
RUN apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless procps \
    && rm -rf /var/lib/apt/lists/*
ENV PATH=/opt/stickyd/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    PYSPARK_PYTHON=/opt/stickyd/bin/python \
    PYSPARK_DRIVER_PYTHON=/opt/stickyd/bin/python
RUN useradd --create-home --uid 10001 stickyd
COPY --from=pipeline-build /opt/stickyd /opt/stickyd
USER 10001
WORKDIR /data
ENTRYPOINT ["stickyd", "pipeline"]
CMD ["plan", "/data/fleet.jsonl", "--out", "/data/plan-out", "--service", "http://stickyd:8000"]

FROM python:3.11-slim AS service
ENV PATH=/opt/stickyd/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    STICKYD_HOST=0.0.0.0 \
    STICKYD_PORT=8000 \
    STICKYD_AUTH=required
RUN useradd --create-home --uid 10001 stickyd
COPY --from=build /opt/stickyd /opt/stickyd
USER 10001
WORKDIR /home/stickyd
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen(f\"http://127.0.0.1:{os.environ.get('STICKYD_PORT', '8000')}/v1/health\", timeout=2)"]
ENTRYPOINT ["stickyd"]
CMD ["serve", "--host", "0.0.0.0"]
