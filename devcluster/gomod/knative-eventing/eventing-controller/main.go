// Knative Eventing's controller (cmd/controller) with the reconcilers knative/ needs, as the released constructors:
// channels and subscriptions (a Broker's Triggers become Subscriptions to its channel), ApiServerSource and
// PingSource. Left out: the health-probe server (hard-coded to :8080 on all interfaces, and no kubelet probes it
// here) and the reconcilers knative/ never uses (sugar, sequences, parallels, event types and policies, container
// and integration sources, job sinks, transforms, request-reply), which only cost informers on a 2-core machine.
package main

import (
	filtered "knative.dev/pkg/client/injection/kube/informers/factory/filtered"
	"knative.dev/pkg/injection/sharedmain"
	"knative.dev/pkg/signals"

	"knative.dev/eventing/pkg/auth"
	"knative.dev/eventing/pkg/eventingtls"
	"knative.dev/eventing/pkg/reconciler/apiserversource"
	"knative.dev/eventing/pkg/reconciler/channel"
	"knative.dev/eventing/pkg/reconciler/pingsource"
	"knative.dev/eventing/pkg/reconciler/subscription"
)

func main() {
	ctx := sharedmain.WithHealthProbesDisabled(signals.NewContext())
	ctx = filtered.WithSelectors(ctx, auth.OIDCLabelSelector, eventingtls.TrustBundleLabelSelector)
	sharedmain.MainWithContext(ctx, "controller",
		channel.NewController,
		subscription.NewController,
		apiserversource.NewController,
		pingsource.NewController,
	)
}
