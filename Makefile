# The two commands a new machine needs: `make demo` (set up everything, run the seed JobFlow to Succeed) and
# `make test` (the whole suite, as CI runs it). Everything else here is a step of those two.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python

.PHONY: venv lock build image release cluster cluster-down cluster-status knative knative-serving test unit demo screenshots clean

# Everything from the lock (exact versions, hashes checked), then this tree itself, editable, without dependencies.
$(VENV)/.installed: pyproject.toml requirements/test.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet --require-hashes -r requirements/test.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $@

venv: $(VENV)/.installed

LOCK := $(VENV)/bin/uv pip compile pyproject.toml --universal --python-version 3.11 --generate-hashes --quiet \
	--custom-compile-command "make lock"

lock: venv  ## refresh requirements/*.txt from pyproject.toml: the command line's, the image's, the tests' (newest allowed)
	$(LOCK) --upgrade -o requirements/cli.txt
	$(LOCK) --upgrade --extra server --extra dashboard -o requirements/image.txt
	$(LOCK) --upgrade --extra test -o requirements/test.txt

build: venv  ## build (or find cached) etcd, kube-apiserver, Volcano and kwok binaries
	$(PY) -m devcluster build

image: venv  ## the engine's image from the Dockerfile, with podman (installed if missing; needs root), tagged as manifests/ deploy it
	$(PY) -m devcluster image

release: venv  ## every artifact of this version into dist/: wheel, sdist, image (OCI archive), chart, manifests, SBOM, checksums (docs/release.md)
	$(PY) -m release $(if $(NO_IMAGE),--no-image)

cluster: venv  ## start (or reuse) the local control plane; prints `export KUBECONFIG=...`
	$(PY) -m devcluster up

cluster-down: venv  ## stop exactly the processes `make cluster`, `make demo` (and a test cluster kept by JOBFLOW_KEEP_CLUSTER=1) started
	$(PY) -m demo stop
	$(PY) -m devcluster down

cluster-status: venv
	$(PY) -m devcluster status

knative: venv  ## Knative Eventing's real programs wired from knative/ to the handler on HANDLER_PORT (default 8080, the demo's)
	$(PY) -m devcluster knative --handler-port=$${HANDLER_PORT:-8080}

knative-serving: venv  ## as root: Knative Serving's real programs on a cluster with the pod node, the handler a Knative Service that scales to zero, fed by the real ApiServerSource adapter
	$(PY) -m devcluster knative-serving

demo: venv  ## set up everything, run the seed JobFlow to Succeed, watched live
	$(PY) -m demo

test: venv  ## every test: unit, property and real-cluster tiers
	$(PY) -m pytest

unit: venv  ## only the tests that need no cluster
	$(PY) -m pytest tests/unit

screenshots: venv  ## the pictures of docs/dashboard.md, made again in headless Chromium on the tests' clusters (the logs pane's on the pod node: root) (docs/dashboard.md)
	PYTHONPATH=tests $(PY) tests/cluster/screenshots.py

clean: cluster-down
	rm -rf $(VENV) .devcluster
