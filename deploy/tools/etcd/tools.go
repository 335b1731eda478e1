//go:build tools

// Package tools pins the etcd server binary that the local control plane runs.
// It holds no product code: Berth itself is C++.
package tools

import _ "go.etcd.io/etcd/server/v3"
