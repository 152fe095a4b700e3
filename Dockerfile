# syntax=docker/dockerfile:1
# The engine's one image: the handler (gunicorn, the default command) and the event source (`python -m eventsource`)
# run from it; manifests/ references it as ghcr.io/volcano-jobflow/jobflow-engine:0.1.0.
# Not built in this repository's CI: the development machine has no Docker engine. Build it with
#   docker build -t ghcr.io/volcano-jobflow/jobflow-engine:0.1.0 .
# Two stages, so the image holds the installed packages but not the sources or the build tools' caches.
FROM python:3.11-slim AS build
WORKDIR /src
COPY pyproject.toml ./
COPY jobflow_core ./jobflow_core
COPY handlers ./handlers
COPY eventsource ./eventsource
RUN pip wheel --no-cache-dir --wheel-dir /wheels .

FROM python:3.11-slim
# No .pyc writes (the root filesystem is read-only in manifests/), logs unbuffered, and a HOME on the /tmp
# volume for whatever wants one (gunicorn's control socket).
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HOME=/tmp PORT=8080
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    pip install --no-cache-dir --no-index --find-links=/wheels volcano-jobflow-serverless \
 && groupadd --gid 10001 jobflow \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /tmp --shell /usr/sbin/nologin jobflow
# Numeric, so the kubelet can verify runAsNonRoot without reading /etc/passwd.
USER 10001:10001
EXPOSE 8080
# The Procfile's web line; gunicorn binds 0.0.0.0:$PORT when no --bind is given.
CMD ["gunicorn", "--workers", "1", "--threads", "4", "--access-logfile", "-", "handlers:create_app()"]
