#!/usr/bin/env bash
# Checks that deploy/local-cluster.sh gives the cluster the tests rely on, talking to it with
# nothing but curl and the credentials embedded in the kubeconfigs it wrote:
#   admin can list and create pods; a pod for berth-scheduler is admitted without a service
#   account and stays Pending; the RBAC-less user gets 403 naming verb and resource; the
#   wrong-CA kubeconfig fails TLS verification; data survives restart-apiserver; compact makes
#   an old resourceVersion 410 Gone; a second `up` is quick.
#
#   deploy/cluster/smoke-test.sh            uses (and leaves running) the cluster; starts it if needed
#   deploy/cluster/smoke-test.sh --cycle    also checks `down` followed by `up`
#   BERTH_COMPAT=1 deploy/cluster/smoke-test.sh   the same against the compat cluster
# It also checks that the apiserver is the release deploy/versions.env pins for that cluster.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
lc=$repo/deploy/local-cluster.sh
cycle=false
[[ ${1:-} == --cycle ]] && cycle=true

work=$(mktemp -d)
namespace=default
pod=berth-smoke-$$
trap 'rm -rf "$work"' EXIT

pass() { echo "ok   $*"; }
fail() {
  echo "FAIL $*" >&2
  exit 1
}

# Pulls one field out of a kubeconfig into a file, as a client would.
extract() {
  local kubeconfig=$1 field=$2 out=$3
  sed -n "s/^ *$field: //p" "$kubeconfig" | head -n 1 | base64 -d >"$out"
}

"$lc" up >"$work/up.out"
kubeconfig=$(cat "$work/up.out")
[[ -f $kubeconfig ]] || fail "up printed '$kubeconfig', not a kubeconfig path"
# shellcheck source=/dev/null
source "$(dirname "$kubeconfig")/env"
[[ $BERTH_KUBECONFIG == "$kubeconfig" ]] || fail "env and up disagree on the kubeconfig"
url=$BERTH_APISERVER_URL
[[ $("$lc" status) == running ]] || fail "status does not say running"
pass "up, env and status ($url)"
# shellcheck source=../versions.env
source "$repo/deploy/versions.env"
expected_version=$KUBERNETES_VERSION
expected_cluster=$repo/_output/cluster
if [[ $BERTH_COMPAT == 1 ]]; then
  expected_version=$KUBERNETES_COMPAT_VERSION
  expected_cluster=$repo/_output/cluster-compat
fi
[[ $BERTH_CLUSTER_DIR == "$expected_cluster" ]] ||
  fail "the cluster lives in $BERTH_CLUSTER_DIR, not $expected_cluster"

umask 077
for name in admin noperms; do
  file=$BERTH_KUBECONFIG
  [[ $name == noperms ]] && file=$BERTH_KUBECONFIG_NOPERMS
  extract "$file" certificate-authority-data "$work/ca.crt"
  extract "$file" client-certificate-data "$work/$name.crt"
  extract "$file" client-key-data "$work/$name.key"
done
extract "$BERTH_KUBECONFIG_WRONG_CA" certificate-authority-data "$work/wrong-ca.crt"

# curl as a kubeconfig's user; prints the body, then the HTTP status on its own last line.
api() {
  local user=$1 method=$2 path=$3
  shift 3
  curl -sS --cacert "$work/ca.crt" --cert "$work/$user.crt" --key "$work/$user.key" \
    -X "$method" -H 'Content-Type: application/json' -w '\n%{http_code}' "$@" "$url$path"
}
status_of() { tail -n 1 <<<"$1"; }
body_of() { sed '$d' <<<"$1"; }
json() { python3 -c "import json,sys; d=json.load(sys.stdin); print($1)"; }

response=$(api admin GET /version)
server_version=$(body_of "$response" | json 'd["gitVersion"]')
[[ $server_version == "$expected_version" ]] ||
  fail "kube-apiserver is $server_version, deploy/versions.env pins $expected_version"
pass "kube-apiserver $server_version in $BERTH_CLUSTER_DIR"

response=$(api admin GET "/api/v1/namespaces/$namespace/pods")
[[ $(status_of "$response") == 200 ]] || fail "admin cannot list pods: $response"
listed_rv=$(body_of "$response" | json 'd["metadata"]["resourceVersion"]')
pass "admin lists pods (rv $listed_rv)"

manifest='{"apiVersion":"v1","kind":"Pod","metadata":{"name":"'$pod'"},
  "spec":{"schedulerName":"berth-scheduler","containers":[{"name":"c","image":"registry.k8s.io/pause:3.10",
  "resources":{"requests":{"cpu":"100m","memory":"64Mi"}}}]}}'
response=$(api admin POST "/api/v1/namespaces/$namespace/pods" -d "$manifest")
[[ $(status_of "$response") == 201 ]] || fail "pod not created: $response"
trap 'api admin DELETE "/api/v1/namespaces/$namespace/pods/$pod?gracePeriodSeconds=0" >/dev/null 2>&1 || true; rm -rf "$work"' EXIT
created_rv=$(body_of "$response" | json 'd["metadata"]["resourceVersion"]')
sleep 2
response=$(api admin GET "/api/v1/namespaces/$namespace/pods/$pod")
state=$(body_of "$response" | json 'd["status"].get("phase"), d["spec"].get("nodeName"), d["spec"]["schedulerName"]')
[[ $state == "Pending None berth-scheduler" ]] || fail "pod is not Pending and unbound: $state"
pass "pod for berth-scheduler admitted (no ServiceAccount admission) and Pending, rv $created_rv"

response=$(api noperms GET "/api/v1/namespaces/$namespace/pods")
message=$(body_of "$response" | json 'd["message"]')
[[ $(status_of "$response") == 403 && $message == *'cannot list resource "pods"'* ]] ||
  fail "noperms user not forbidden as expected: $response"
pass "noperms gets 403: $message"

set +e
curl -sS --cacert "$work/wrong-ca.crt" --cert "$work/admin.crt" --key "$work/admin.key" \
  "$url/readyz" >"$work/wrong.out" 2>&1
code=$?
set -e
((code == 60)) || fail "wrong-CA kubeconfig did not fail verification (curl exit $code: $(cat "$work/wrong.out"))"
pass "wrong-CA kubeconfig fails TLS verification (curl exit 60)"

start=$SECONDS
"$lc" restart-apiserver
response=$(api admin GET "/api/v1/namespaces/$namespace/pods/$pod")
[[ $(status_of "$response") == 200 ]] || fail "pod lost across restart-apiserver: $response"
pass "restart-apiserver in $((SECONDS - start))s; the pod survived"

revision=$("$lc" compact)
response=$(curl -sS -X POST "$BERTH_ETCD_URL/v3/kv/range" -d '{"key":"AA==","revision":"'"$listed_rv"'"}')
[[ $response == *"required revision has been compacted"* ]] ||
  fail "etcd still serves revision $listed_rv after compaction to $revision: $response"
# The restarted apiserver's watch cache begins after $listed_rv, so an exact list there goes to
# etcd. (A revision the cache still holds would be served from it: compaction alone does not
# make every old resourceVersion 410 at the apiserver.)
response=$(api admin GET "/api/v1/namespaces/$namespace/pods?resourceVersion=$listed_rv&resourceVersionMatch=Exact")
[[ $(status_of "$response") == 410 ]] || fail "no 410 for rv $listed_rv after compaction to $revision: $response"
pass "compact to $revision; etcd and a list at rv $listed_rv answer 410 Gone: $(body_of "$response" | json 'd["message"]')"

start=$(date +%s%N)
"$lc" up >/dev/null 2>&1
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
((elapsed_ms < 5000)) || fail "second up took ${elapsed_ms}ms"
pass "second up is a no-op (${elapsed_ms}ms)"

if $cycle; then
  "$lc" down
  ! "$lc" status >/dev/null || fail "status says running after down"
  start=$SECONDS
  "$lc" up >/dev/null
  response=$(api admin GET "/api/v1/namespaces/$namespace/pods/$pod")
  [[ $(status_of "$response") == 200 ]] || fail "pod lost across down/up: $response"
  pass "down then up in $((SECONDS - start))s; the pod survived"
fi

response=$(api admin DELETE "/api/v1/namespaces/$namespace/pods/$pod?gracePeriodSeconds=0")
[[ $(status_of "$response") == 200 ]] || fail "could not delete the pod: $response"
pass "test pod deleted; cluster left running"
