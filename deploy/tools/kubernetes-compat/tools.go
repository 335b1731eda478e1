//go:build tools

// Package tools pins the kube-apiserver and kube-controller-manager of the oldest Kubernetes minor
// Berth supports (KUBERNETES_COMPAT_VERSION in deploy/versions.env), for the compatibility pass of
// the integration tests. It holds no product code: Berth itself is C++.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
)
