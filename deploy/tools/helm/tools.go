//go:build tools

// Package tools pins the helm binary that renders and lints charts/berth in the packaging
// tests. It holds no product code: Berth itself is C++.
package tools

import _ "helm.sh/helm/v3/cmd/helm"
