#!/usr/bin/env bash
# Builds the real Kubernetes components Berth is tested and benchmarked against, from their
# published Go modules at the versions pinned in deploy/versions.env, and links them into
# _output/tools/. Built binaries are cached outside the work tree, keyed by name and version,
# so a second run (or a fresh clone on the same machine) only makes links.
#
#   deploy/build-tools.sh [etcd] [kube-apiserver] [kube-controller-manager] [kube-scheduler]
#                         [helm] [kwok] [servicemonitor-crd]
#   (no arguments: etcd, kube-apiserver and kube-controller-manager, what the local control
#   plane needs)
#   deploy/build-tools.sh --compat [etcd] [kube-apiserver] [kube-controller-manager]
#   (the oldest supported minor, KUBERNETES_COMPAT_VERSION, and the etcd it bundles,
#   ETCD_COMPAT_VERSION, from deploy/tools/{kubernetes,etcd}-compat, linked into
#   _output/tools/compat/ for `BERTH_COMPAT=1 deploy/local-cluster.sh up`)
#
# servicemonitor-crd is not a binary: it is prometheus-operator's ServiceMonitor
# CustomResourceDefinition, copied out of that release's Go module (checked against
# deploy/tools/prometheus-operator/go.sum) to _output/tools/servicemonitor-crd.yaml, so the
# chart's ServiceMonitor can be validated by a real apiserver without a cluster add-on.
#
# Environment: BERTH_CACHE_DIR (default ~/.cache/berth) holds the cache.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=versions.env
source "$repo/deploy/versions.env"
cache=${BERTH_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/berth}/bin
out=$repo/_output/tools

# The compat line swaps in the older control plane; everything else about a build is the same.
# The cache is keyed by name and version, so both lines share it without clashing.
compat=false module_suffix="" compat_suffix=""
if [[ ${1:-} == --compat ]]; then
  compat=true
  shift
  out=$out/compat
  module_suffix=-compat compat_suffix=_COMPAT
  KUBERNETES_VERSION=$KUBERNETES_COMPAT_VERSION
  KUBERNETES_STAGING_VERSION=$KUBERNETES_COMPAT_STAGING_VERSION
  ETCD_VERSION=$ETCD_COMPAT_VERSION
fi
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
  if $compat && [[ $1 != etcd && $1 != kube-apiserver && $1 != kube-controller-manager ]]; then
    echo "build-tools: --compat builds only etcd, kube-apiserver and kube-controller-manager," \
      "not '$1'" >&2
    return 1
  fi
  case $1 in
    etcd) echo "$ETCD_VERSION" ;;
    kube-apiserver | kube-controller-manager | kube-scheduler) echo "$KUBERNETES_VERSION" ;;
    helm) echo "$HELM_VERSION" ;;
    kwok) echo "$KWOK_VERSION" ;;
    servicemonitor-crd) echo "$PROMETHEUS_OPERATOR_VERSION" ;;
    *) echo "build-tools: unknown tool '$1' (known: etcd kube-apiserver kube-controller-manager kube-scheduler helm kwok servicemonitor-crd)" >&2; return 1 ;;
  esac
}

# versions.env and the module's go.mod must name the same release, or the cache key would
# lie about what was built.
check_pin() {
  local module_dir=$1 module=$2 version=$3
  if ! grep -Eq "^(require )?[[:space:]]*$module $version\b" "$module_dir/go.mod"; then
    echo "build-tools: $module_dir/go.mod does not require $module $version (deploy/versions.env);" \
      "update both together" >&2
    return 1
  fi
}

# The Kubernetes module's staging repositories (k8s.io/api, k8s.io/apiserver, ...) are pinned by
# replace directives; they must all be the staging release of the same Kubernetes version.
check_staging_pins() {
  local module_dir=$1 version=$2 stale
  stale=$(grep -E '^[[:space:]]*k8s\.io/[^ ]+ => k8s\.io/[^ ]+ v' "$module_dir/go.mod" |
    grep -Ev " => k8s\.io/[^ ]+ $version\$" || true)
  if [[ -n $stale ]]; then
    echo "build-tools: $module_dir/go.mod replaces staging modules with versions other than" \
      "$version (KUBERNETES${compat_suffix}_STAGING_VERSION in deploy/versions.env):" >&2
    echo "$stale" >&2
    return 1
  fi
}

fetch_servicemonitor_crd() {
  local version=$1 target=$2 module=github.com/prometheus-operator/prometheus-operator dir
  local module_dir=$repo/deploy/tools/prometheus-operator
  check_pin "$module_dir" "$module" "$version"
  dir=$(cd "$module_dir" && go mod download -json "$module" | sed -n 's/^[[:space:]]*"Dir": "\(.*\)",$/\1/p')
  local crd=$dir/example/prometheus-operator-crd/monitoring.coreos.com_servicemonitors.yaml
  [[ -f $crd ]] || { echo "build-tools: $crd is missing from $module $version" >&2; return 1; }
  cp "$crd" "$target.tmp"
  mv "$target.tmp" "$target"
}

build_one() {
  local name=$1 version target module_dir pkg ldflags=""
  version=$(version_of "$name")
  if [[ $name == servicemonitor-crd ]]; then
    target=$cache/$name-$version.yaml
    [[ -f $target ]] || fetch_servicemonitor_crd "$version" "$target"
    ln -sfn "$target" "$out/$name.yaml"
    return 0
  fi
  target=$cache/$name-$version
  if [[ ! -x $target ]]; then
    case $name in
      etcd)
        module_dir=$repo/deploy/tools/etcd$module_suffix
        check_pin "$module_dir" go.etcd.io/etcd/server/v3 "$ETCD_VERSION"
        pkg=go.etcd.io/etcd/server/v3
        ;;
      kube-apiserver | kube-controller-manager | kube-scheduler)
        module_dir=$repo/deploy/tools/kubernetes$module_suffix
        check_pin "$module_dir" k8s.io/kubernetes "$KUBERNETES_VERSION"
        check_staging_pins "$module_dir" "$KUBERNETES_STAGING_VERSION"
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
        check_pin "$module_dir" helm.sh/helm/v3 "$HELM_VERSION"
        pkg=helm.sh/helm/v3/cmd/helm
        # As helm's own release build does: the Kubernetes version `helm template` and
        # `helm lint` assume (checked against a chart's kubeVersion) is the one of the client-go
        # it is built with; without this it claims v1.20.
        local client_go kube_minor
        client_go=$(cd "$module_dir" && go list -f '{{.Version}}' -m k8s.io/client-go)
        kube_minor=${client_go#v0.}
        kube_minor=${kube_minor%%.*}
        ldflags="-X helm.sh/helm/v3/internal/version.version=$HELM_VERSION"
        local var
        for var in pkg/chartutil pkg/lint/rules; do
          ldflags+=" -X helm.sh/helm/v3/$var.k8sVersionMajor=1"
          ldflags+=" -X helm.sh/helm/v3/$var.k8sVersionMinor=$kube_minor"
        done
        ;;
      kwok)
        module_dir=$repo/deploy/tools/kwok
        check_pin "$module_dir" sigs.k8s.io/kwok "$KWOK_VERSION"
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
((${#tools[@]})) || tools=(etcd kube-apiserver kube-controller-manager)

# Binaries and the CRD appear in the cache only complete (renamed into place), so one that is
# there can be linked without the lock.
is_cached() {
  local version
  version=$(version_of "$1") || exit 1
  if [[ $1 == servicemonitor-crd ]]; then
    [[ -f $cache/$1-$version.yaml ]]
  else
    [[ -x $cache/$1-$version ]]
  fi
}

# One build at a time per cache: parallel `make test` runs wait instead of racing. A run that
# only needs links does not wait behind another checkout's build of some other tool.
for tool in "${tools[@]}"; do
  if ! is_cached "$tool"; then
    exec 9>"$cache/.lock"
    flock 9
    # The binaries are the cache. Go's build cache for a Kubernetes component is several times
    # the binary's size and only speeds up rebuilding that same version, so it lives for this run
    # only (shared by the tools built in it) and leaves the disk with it.
    GOCACHE=$(mktemp -d "$cache/.go-build.XXXXXX")
    export GOCACHE
    trap 'rm -rf "$GOCACHE"' EXIT
    break
  fi
done
for tool in "${tools[@]}"; do
  build_one "$tool"
done
