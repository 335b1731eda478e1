//go:build tools

// Package tools pins kwok, which the end-to-end benchmark can run so that bound pods turn
// Running as on a real node. It holds no product code: Berth itself is C++.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
