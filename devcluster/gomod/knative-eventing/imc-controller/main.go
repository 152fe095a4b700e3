// Knative Eventing's in-memory channel controller (cmd/in_memory/channel_controller): the released InMemoryChannel
// reconciler. Left out: the health-probe server (upstream binds :8080 on all interfaces) and the admission webhooks
// with their certificate controller, which the API server could only call through a Service routed to a pod.
package main

import (
	"knative.dev/pkg/injection/sharedmain"
	"knative.dev/pkg/signals"

	inmemorychannel "knative.dev/eventing/pkg/reconciler/inmemorychannel/controller"
)

func main() {
	ctx := sharedmain.WithHealthProbesDisabled(signals.NewContext())
	sharedmain.MainWithContext(ctx, "inmemorychannel-controller", inmemorychannel.NewController)
}
