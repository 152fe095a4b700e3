// Knative Eventing's ApiServerSource receive adapter, as its release image runs it, with one difference: the
// health-probe server is off. Upstream's main binds :8080 on all interfaces for /health and /readiness with no
// way to move it, which collides with anything else on the machine that wants 8080 (the demo's handler does).
// Nothing here probes the adapter (no kubelet), so the probes are simply not started. Everything else, from
// reading K_SOURCE_CONFIG to sending the CloudEvents, is the released adapter package.
package main

import (
	filtered "knative.dev/pkg/client/injection/kube/informers/factory/filtered"
	"knative.dev/pkg/signals"

	"knative.dev/eventing/pkg/adapter/apiserver"
	adapter "knative.dev/eventing/pkg/adapter/v2"
	"knative.dev/eventing/pkg/auth"
	"knative.dev/eventing/pkg/eventingtls"
)

func main() {
	ctx := signals.NewContext()
	ctx = adapter.WithInjectorEnabled(ctx)
	ctx = adapter.WithHealthProbesDisabled(ctx)
	// The informers the injection framework starts only need these labelled secrets and config maps.
	ctx = filtered.WithSelectors(ctx, auth.OIDCLabelSelector, eventingtls.TrustBundleLabelSelector)
	adapter.MainWithContext(ctx, "apiserversource", apiserver.NewEnvConfig, apiserver.NewAdapter)
}
