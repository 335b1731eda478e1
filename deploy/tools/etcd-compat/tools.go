//go:build tools

// Package tools pins the etcd server that the compatibility cluster runs: the release bundled
// with KUBERNETES_COMPAT_VERSION (ETCD_COMPAT_VERSION in deploy/versions.env). It holds no
// product code: Berth itself is C++.
package tools

import _ "go.etcd.io/etcd/server/v3"
