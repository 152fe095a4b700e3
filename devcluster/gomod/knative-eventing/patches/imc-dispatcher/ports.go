// Added to knative.dev/eventing/pkg/reconciler/inmemorychannel/dispatcher at build time (go build -overlay, see
// devcluster/components.py): the in-memory channel dispatcher's listening ports, which upstream fixes at 8080 and
// 8443 on all interfaces, read from the environment instead, so that the dispatcher, a process here and not a pod
// with its own IP, shares the machine with everything else that wants those ports.
package dispatcher

import (
	"os"
	"strconv"
)

func portFromEnv(name string, fallback int) int {
	if port, err := strconv.Atoi(os.Getenv(name)); err == nil && port > 0 {
		return port
	}
	return fallback
}
