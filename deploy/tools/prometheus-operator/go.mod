// Pins the prometheus-operator release whose ServiceMonitor CRD `deploy/build-tools.sh
// servicemonitor-crd` copies out of the module (go.sum verifies it). Nothing is built from it.
module berth.local/tools/prometheus-operator

go 1.24.0

require github.com/prometheus-operator/prometheus-operator v0.85.0
