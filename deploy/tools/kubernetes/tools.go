//go:build tools

// Package tools pins the Kubernetes binaries that Berth's tests and benchmarks run against:
// kube-apiserver and kube-controller-manager for the local control plane, kube-scheduler as the
// reference scheduler.
// It holds no product code: Berth itself is C++.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
)
