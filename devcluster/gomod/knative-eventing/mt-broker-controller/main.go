// Knative Eventing's multi-tenant channel-based Broker controller (cmd/mtchannel_broker): the released Broker and
// Trigger reconcilers, without the health-probe server that upstream binds to :8080 on all interfaces.
package main

import (
	filtered "knative.dev/pkg/client/injection/kube/informers/factory/filtered"
	"knative.dev/pkg/injection/sharedmain"
	"knative.dev/pkg/signals"

	"knative.dev/eventing/pkg/auth"
	"knative.dev/eventing/pkg/reconciler/broker"
	mttrigger "knative.dev/eventing/pkg/reconciler/broker/trigger"
)

func main() {
	ctx := sharedmain.WithHealthProbesDisabled(signals.NewContext())
	ctx = filtered.WithSelectors(ctx, auth.OIDCLabelSelector)
	sharedmain.MainWithContext(ctx, "mt-broker-controller", broker.NewController, mttrigger.NewController)
}
