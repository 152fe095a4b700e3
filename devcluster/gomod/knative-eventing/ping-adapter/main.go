// Knative Eventing's multi-tenant PingSource adapter (cmd/mtping), as its release image runs it, except that the
// health-probe server, which upstream binds to :8080 on all interfaces with no way to move it, is not started:
// no kubelet probes it here. The schedules, the leader election and the sending are the released mtping package.
package main

import (
	filtered "knative.dev/pkg/client/injection/kube/informers/factory/filtered"
	"knative.dev/pkg/signals"

	"knative.dev/eventing/pkg/adapter/mtping"
	adapter "knative.dev/eventing/pkg/adapter/v2"
	"knative.dev/eventing/pkg/auth"
	"knative.dev/eventing/pkg/eventingtls"
)

const component = "pingsource-mt-adapter"

func main() {
	ctx := mtping.NewDelayingContext(signals.NewContext(), mtping.GetNoShutDownAfterValue())
	ctx = adapter.WithController(ctx, mtping.NewController)
	ctx = adapter.WithHAEnabled(ctx)
	ctx = adapter.WithHealthProbesDisabled(ctx)
	ctx = adapter.WithConfigWatcherEnabled(ctx)
	ctx = adapter.WithConfiguratorOptions(ctx, []adapter.ConfiguratorOption{
		adapter.WithLoggerConfigurator(adapter.NewLoggerConfiguratorFromConfigMap(component)),
		adapter.WithObservabilityConfigurator(adapter.NewObservabilityConfiguratorFromConfigMap()),
		adapter.WithCloudEventsStatusReporterConfigurator(adapter.NewCloudEventsReporterConfiguratorFromConfigMap()),
	})
	ctx = filtered.WithSelectors(ctx, auth.OIDCLabelSelector, eventingtls.TrustBundleLabelSelector)
	adapter.MainWithContext(ctx, component, mtping.NewEnvConfig, mtping.NewAdapter)
}
