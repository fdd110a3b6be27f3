# stickyd service image. Built and run elsewhere; on the development machines there is no Docker
# engine, so this file is linted (hadolint) and its entrypoint is tested outside Docker.

FROM python:3.11-slim AS build
ENV PIP_DISABLE_PIP_VERSION_CHECK=1 PIP_NO_CACHE_DIR=1
RUN python -m venv /opt/stickyd
ENV PATH=/opt/stickyd/bin:$PATH
WORKDIR /src
# dependencies first, in their own layer: they change far less often than the source
COPY pyproject.toml README.md ./
RUN mkdir -p models solvers service client \
    && touch models/__init__.py solvers/__init__.py service/__init__.py client/__init__.py \
    && pip install . \
    && pip uninstall --yes stickyd
COPY models ./models
COPY solvers ./solvers
COPY service ./service
COPY client ./client
RUN pip install --no-deps .

FROM python:3.11-slim AS service
ENV PATH=/opt/stickyd/bin:$PATH \
    PYTHONUNBUFFERED=1 \
    STICKYD_HOST=0.0.0.0 \
    STICKYD_PORT=8000
RUN useradd --create-home --uid 10001 stickyd
COPY --from=build /opt/stickyd /opt/stickyd
USER 10001
WORKDIR /home/stickyd
EXPOSE 8000
HEALTHCHECK --interval=10s --timeout=3s --start-period=30s --retries=3 \
    CMD ["python", "-c", "import os, urllib.request; urllib.request.urlopen(f\"http://127.0.0.1:{os.environ.get('STICKYD_PORT', '8000')}/v1/health\", timeout=2)"]
ENTRYPOINT ["stickyd"]
CMD ["serve", "--host", "0.0.0.0"]
