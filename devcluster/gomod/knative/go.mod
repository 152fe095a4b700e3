// Not built: this module only pins the Knative releases whose CRD YAMLs (shipped inside the module zips) the tests
// install into the local control plane (devcluster/knative.py). serving v0.50.0 = knative-v1.23.0,
// eventing v0.49.2 = knative-v1.22.2 (no eventing 1.23 is published yet).
module local.test/knative

go 1.24

require (
	knative.dev/eventing v0.49.2
	knative.dev/serving v0.50.0
)
