# syntax=docker/dockerfile:1
# The engine's one image: the handler (gunicorn, the default command), the event source (`python -m eventsource`),
# the admission webhook and the read-only dashboard (`python -m dashboard`, manifests/dashboard/) run from it;
# manifests/ and knative/ reference it as
# ghcr.io/volcano-jobflow/jobflow-engine:0.1.0. Build it with either of
#   docker build -t ghcr.io/volcano-jobflow/jobflow-engine:0.1.0 .
#   make image        (podman, no registry needed: a local Debian base instead of python:3.11-slim)
# Both, and the figures: docs/install.md#the-image. `RUN --mount` below needs BuildKit (Docker 23+ has it on).
# Two stages, so the image holds the installed packages but not the sources or the build tools' caches.
# BASE is only a build argument: `make image` passes a locally built base; everyone else gets python:3.11-slim.
ARG BASE=python:3.11-slim

FROM ${BASE} AS build
WORKDIR /src
# The dependencies exactly as locked (requirements/image.txt: versions and hashes, `make lock`), then this package.
COPY requirements/image.txt ./requirements/image.txt
RUN pip wheel --no-cache-dir --require-hashes --wheel-dir /wheels -r requirements/image.txt
COPY pyproject.toml LICENSE NOTICE ./
# Every package the four programs import: the core, the client layer below all of them (apiclient) and what the
# command line and the dashboard both show (display).
COPY jobflow_core ./jobflow_core
COPY apiclient ./apiclient
COPY display ./display
COPY handlers ./handlers
COPY eventsource ./eventsource
COPY kubectl_jobflow ./kubectl_jobflow
COPY dashboard ./dashboard
RUN pip wheel --no-cache-dir --no-deps --wheel-dir /wheels/package .

FROM ${BASE}
# What the image is (docker inspect, podman image inspect): `make image` passes the version from pyproject.toml and
# the commit it was built from; a plain `docker build` gets this version and no revision.
ARG VERSION=0.1.0
ARG REVISION=unknown
ARG SOURCE=https://github.com/volcano-jobflow/jobflow-engine
LABEL org.opencontainers.image.title="volcano-jobflow-serverless" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.source="${SOURCE}" \
      org.opencontainers.image.licenses="Apache-2.0"
# No .pyc writes (the root filesystem is read-only in manifests/), logs unbuffered, and a HOME on the /tmp
# volume for whatever wants one (gunicorn's control socket, the metrics directory of gunicorn_config).
ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 HOME=/tmp PORT=8080
# The wheels are bind-mounted from the build stage, so they never land in a layer. (buildah 1.28, Debian 12's,
# reuses a cached layer here even when the build stage changed: `make image` builds with --no-cache.) The packages'
# own test suites (gevent's, greenlet's, zope.interface's: 7 MB) are never imported, so they are left out.
RUN --mount=type=bind,from=build,source=/wheels,target=/wheels \
    --mount=type=bind,from=build,source=/src/requirements,target=/requirements \
    pip install --no-cache-dir --no-index --find-links=/wheels --require-hashes -r /requirements/image.txt \
 && pip install --no-cache-dir --no-index --no-deps /wheels/package/*.whl \
 && find "$(python -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')" -depth -type d -name tests \
         -path '*-packages/*/tests' -exec rm -rf {} + \
 && groupadd --gid 10001 jobflow \
 && useradd --uid 10001 --gid 10001 --no-create-home --home-dir /tmp --shell /usr/sbin/nologin jobflow
# Numeric, so the kubelet can verify runAsNonRoot without reading /etc/passwd.
USER 10001:10001
EXPOSE 8080
# The Procfile's web line: the same gunicorn config (multiprocess /metrics), bound to 0.0.0.0:$PORT (gunicorn's
# default when PORT is set and no --bind is given).
CMD ["gunicorn", "-c", "python:handlers.gunicorn_config", "--workers", "1", "--threads", "4", \
     "--access-logfile", "-", "handlers:create_app()"]
