#!/usr/bin/env bash
# Checks that deploy/local-cluster.sh gives the cluster the tests rely on, talking to it with
# nothing but curl and the credentials embedded in the kubeconfigs it wrote:
#   admin can list and create pods; a pod for berth-scheduler is admitted without a service
#   account and stays Pending; the RBAC-less user gets 403 naming verb and resource; the
#   wrong-CA kubeconfig fails TLS verification; kube-controller-manager is healthy over verified
#   TLS and its controllers act (a ResourceClaim made from a pod's template, a pre-bound claim
#   and volume Bound, a budget's status written, a deleted namespace emptied and gone); data
#   survives restart-apiserver; compact makes an old resourceVersion 410 Gone; a second `up` is
#   quick.
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

# --- kube-controller-manager --------------------------------------------------------------
tools_dir=$repo/_output/tools
[[ $BERTH_COMPAT == 1 ]] && tools_dir=$tools_dir/compat
kcm_version=$("$tools_dir/kube-controller-manager" --version | awk '{print $2}')
[[ $kcm_version == "$expected_version" ]] ||
  fail "kube-controller-manager is $kcm_version, deploy/versions.env pins $expected_version"
# shellcheck source=/dev/null
source "$BERTH_CLUSTER_DIR/ports"
health=$(curl -sS --cacert "$work/ca.crt" "https://127.0.0.1:$recorded_controller_manager_port/healthz?verbose") ||
  fail "kube-controller-manager's /healthz does not answer over TLS verified with the cluster CA"
for controller in resourceclaim persistentvolume-binder disruption namespace garbage-collector; do
  [[ $health == *"[+]$controller-controller ok"* ]] || fail "$controller-controller not healthy: $health"
done
pass "kube-controller-manager $kcm_version healthy over verified TLS, port $recorded_controller_manager_port"

# Polls the shell expression $2 every 0.2 s for up to $3 s (default 30); fails naming $1.
wait_for() {
  local what=$1 condition=$2 deadline=$((SECONDS + ${3:-30}))
  until eval "$condition"; do
    ((SECONDS < deadline)) || fail "$what: not within ${3:-30}s"
    sleep 0.2
  done
}
scratch=berth-smoke-kcm-$$
api admin POST /api/v1/namespaces -d '{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"'$scratch'"}}' >/dev/null
api admin POST "/apis/resource.k8s.io/v1/namespaces/$scratch/resourceclaimtemplates" -d '{
  "apiVersion":"resource.k8s.io/v1","kind":"ResourceClaimTemplate","metadata":{"name":"gpu"},
  "spec":{"spec":{"devices":{"requests":[{"name":"gpu","exactly":{"deviceClassName":"gpu.example.com"}}]}}}}' >/dev/null
api admin POST "/api/v1/namespaces/$scratch/pods" -d '{"apiVersion":"v1","kind":"Pod","metadata":{"name":"dra"},
  "spec":{"schedulerName":"berth-scheduler","containers":[{"name":"c","image":"registry.k8s.io/pause:3.10",
  "resources":{"claims":[{"name":"gpu"}]}}],"resourceClaims":[{"name":"gpu","resourceClaimTemplateName":"gpu"}]}}' >/dev/null
claim_of_pod() {
  api admin GET "/api/v1/namespaces/$scratch/pods/dra" | sed '$d' |
    json '[s.get("resourceClaimName", "") for s in d["status"].get("resourceClaimStatuses", [])]'
}
wait_for "resourceclaim controller: a claim for the pod's template" '[[ $(claim_of_pod) == *dra-gpu-* ]]'
claim=$(claim_of_pod | tr -d "[]'")
owner=$(api admin GET "/apis/resource.k8s.io/v1/namespaces/$scratch/resourceclaims/$claim" | sed '$d' |
  json 'd["metadata"]["ownerReferences"][0]["name"]')
[[ $owner == dra ]] || fail "claim $claim is owned by '$owner', not the pod"
pass "resourceclaim controller made ResourceClaim $claim from the pod's template"

api admin POST /api/v1/persistentvolumes -d '{"apiVersion":"v1","kind":"PersistentVolume","metadata":{"name":"'$scratch'"},
  "spec":{"capacity":{"storage":"1Gi"},"accessModes":["ReadWriteOnce"],"storageClassName":"",
  "persistentVolumeReclaimPolicy":"Retain","hostPath":{"path":"/tmp/'$scratch'"},
  "claimRef":{"namespace":"'$scratch'","name":"data"}}}' >/dev/null
api admin POST "/api/v1/namespaces/$scratch/persistentvolumeclaims" -d '{"apiVersion":"v1",
  "kind":"PersistentVolumeClaim","metadata":{"name":"data"},"spec":{"accessModes":["ReadWriteOnce"],
  "storageClassName":"","volumeName":"'$scratch'","resources":{"requests":{"storage":"1Gi"}}}}' >/dev/null
claim_phase() {
  api admin GET "/api/v1/namespaces/$scratch/persistentvolumeclaims/data" | sed '$d' | json 'd["status"].get("phase")'
}
wait_for "persistentvolume-binder controller: claim data Bound" '[[ $(claim_phase) == Bound ]]'
pass "persistentvolume-binder controller bound a pre-bound claim and volume"

api admin POST "/apis/policy/v1/namespaces/$scratch/poddisruptionbudgets" -d '{"apiVersion":"policy/v1",
  "kind":"PodDisruptionBudget","metadata":{"name":"budget"},"spec":{"minAvailable":1,
  "selector":{"matchLabels":{"app":"none"}}}}' >/dev/null
budget_observed() {
  api admin GET "/apis/policy/v1/namespaces/$scratch/poddisruptionbudgets/budget" | sed '$d' |
    json 'd["status"].get("observedGeneration") == d["metadata"]["generation"]'
}
wait_for "disruption controller: the budget's status" '[[ $(budget_observed) == True ]]'
pass "disruption controller wrote the budget's status"

api admin DELETE "/api/v1/namespaces/$scratch/pods/dra?gracePeriodSeconds=0" >/dev/null
api admin DELETE "/api/v1/namespaces/$scratch" >/dev/null
namespace_status() { status_of "$(api admin GET "/api/v1/namespaces/$scratch")"; }
start=$SECONDS
wait_for "namespace controller: namespace $scratch deleted" '[[ $(namespace_status) == 404 ]]' 60
pass "namespace controller emptied and removed namespace $scratch in $((SECONDS - start))s"
claim_status() { status_of "$(api admin GET "/apis/resource.k8s.io/v1/namespaces/$scratch/resourceclaims/$claim")"; }
[[ $(claim_status) == 404 ]] || fail "claim $claim outlived its namespace"
api admin DELETE "/api/v1/persistentvolumes/$scratch" >/dev/null
volume_status() { status_of "$(api admin GET "/api/v1/persistentvolumes/$scratch")"; }
wait_for "pv-protection controller: released volume $scratch deleted" '[[ $(volume_status) == 404 ]]' 60
pass "the volume, released with its claim, is deleted (pv-protection finalizer lifted)"

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
