#!/usr/bin/env bash
# Builds the real Kubernetes components Berth is tested and benchmarked against, from their
# published Go modules at the versions pinned in deploy/versions.env, and links them into
# _output/tools/. Built binaries are cached outside the work tree, keyed by name and version,
# so a second run (or a fresh clone on the same machine) only makes links.
#
#   deploy/build-tools.sh [etcd] [kube-apiserver] [kube-scheduler] [helm] [kwok]
#   (no arguments: etcd and kube-apiserver, what the local control plane needs)
#
# Environment: BERTH_CACHE_DIR (default ~/.cache/berth) holds the cache.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=versions.env
source "$repo/deploy/versions.env"
cache=${BERTH_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/berth}/bin
out=$repo/_output/tools
mkdir -p "$cache" "$out"

if ! command -v go >/dev/null 2>&1; then
  for candidate in /usr/local/go/bin /usr/lib/go/bin; do
    [[ -x $candidate/go ]] && export PATH=$candidate:$PATH && break
  done
fi
command -v go >/dev/null 2>&1 || {
  echo "build-tools: a Go toolchain is needed to build the pinned Kubernetes components" >&2
  exit 1
}
# Only the toolchain on the machine is used; never download another one.
export GOTOOLCHAIN=local GOFLAGS=-mod=mod CGO_ENABLED=0

version_of() {
  case $1 in
    etcd) echo "$ETCD_VERSION" ;;
    kube-apiserver | kube-scheduler) echo "$KUBERNETES_VERSION" ;;
    helm) echo "$HELM_VERSION" ;;
    kwok) echo "$KWOK_VERSION" ;;
    *) echo "build-tools: unknown tool '$1' (known: etcd kube-apiserver kube-scheduler helm kwok)" >&2; return 1 ;;
  esac
}

build_one() {
  local name=$1 version target module_dir pkg ldflags=""
  version=$(version_of "$name")
  target=$cache/$name-$version
  if [[ ! -x $target ]]; then
    case $name in
      etcd)
        module_dir=$repo/deploy/tools/etcd
        pkg=go.etcd.io/etcd/server/v3
        ;;
      kube-apiserver | kube-scheduler)
        module_dir=$repo/deploy/tools/kubernetes
        pkg=k8s.io/kubernetes/cmd/$name
        local minor=${KUBERNETES_VERSION#v1.}
        minor=${minor%%.*}
        ldflags="-X k8s.io/component-base/version.gitVersion=$KUBERNETES_VERSION"
        ldflags+=" -X k8s.io/component-base/version.gitMajor=1"
        ldflags+=" -X k8s.io/component-base/version.gitMinor=$minor"
        ldflags+=" -X k8s.io/component-base/version.gitTreeState=clean"
        ;;
      helm)
        module_dir=$repo/deploy/tools/helm
        pkg=helm.sh/helm/v3/cmd/helm
        ldflags="-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
        ;;
      kwok)
        module_dir=$repo/deploy/tools/kwok
        pkg=sigs.k8s.io/kwok/cmd/kwok
        ;;
    esac
    echo "build-tools: building $name $version (first time on this machine; cached afterwards)"
    local start=$SECONDS
    (cd "$module_dir" && go build -trimpath -ldflags "-s -w $ldflags" -o "$target.tmp" "$pkg")
    mv "$target.tmp" "$target"
    echo "build-tools: built $name in $((SECONDS - start))s"
  fi
  ln -sfn "$target" "$out/$name"
}

tools=("$@")
((${#tools[@]})) || tools=(etcd kube-apiserver)

# One build at a time per cache: parallel `make test` runs wait instead of racing.
exec 9>"$cache/.lock"
flock 9
for tool in "${tools[@]}"; do
  build_one "$tool"
done
