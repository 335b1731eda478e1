#!/usr/bin/env bash
# The local control plane the tests, the demo and the benchmarks run against: a real etcd, a real
# kube-apiserver and a real kube-controller-manager (the versions pinned in deploy/versions.env)
# on loopback, with their own PKI. There is no kubelet and no default scheduler, so a pod stays
# Pending until something (Berth) binds it, and a bound pod never runs.
#
# kube-controller-manager runs only the controllers whose work the tests and the demo need done
# for real (see start_controller_manager): resourceclaim (ResourceClaims from a pod's
# ResourceClaimTemplates), persistentvolume-binder (claims and volumes Bound), disruption
# (PodDisruptionBudget status), namespace (a deleted namespace's content removed, then the
# namespace), garbage-collector (dependents of deleted owners), the pvc-, pv- and (with
# BERTH_GENERIC_WORKLOAD=1) podgroup-protection controllers (their finalizers lifted once nothing
# uses the object). Controllers that would act as a kubelet or a workload controller (replicaset,
# node lifecycle, serviceaccount, ...) stay off: the tests create exactly the pods and nodes they
# mean to.
#
#   deploy/local-cluster.sh up                 start (idempotent); stdout: the admin kubeconfig path
#   deploy/local-cluster.sh down [--purge]     stop controller-manager, apiserver, etcd; --purge also
#                                              deletes all state
#   deploy/local-cluster.sh status             print "running" and exit 0 when the apiserver's
#                                              /readyz and the controller-manager's /healthz are ok
#   deploy/local-cluster.sh restart-apiserver  SIGKILL the apiserver and start it again (an outage);
#                                              the controller-manager is restarted after it
#   deploy/local-cluster.sh stop-apiserver [--kill]   SIGTERM (or SIGKILL) only the apiserver
#   deploy/local-cluster.sh start-apiserver    start the apiserver again (etcd must be running),
#                                              then restart the controller-manager
#   deploy/local-cluster.sh compact            advance etcd's revision, compact to it; stdout: it
#
# Everything lives in _output/cluster/ of this checkout:
#   pki/                      ca.crt (trusted), wrong-ca.crt (an unrelated CA), apiserver.*,
#                             admin.* (CN=berth-admin, O=system:masters), noperms.*
#                             (CN=berth-test-noperms, no groups, so RBAC forbids everything),
#                             controller-manager.* (CN=system:kube-controller-manager, the user
#                             the apiserver's bootstrap RBAC grants its role),
#                             controller-manager-serving.* (its /healthz's certificate),
#                             sa.key/sa.pub (service-account token signing)
#   kubeconfig                admin, credentials embedded
#   kubeconfig-noperms        the RBAC-less user
#   kubeconfig-wrong-ca       admin credentials, but wrong-ca.crt as the trusted CA
#   kubeconfig-controller-manager   kube-controller-manager's own
#   env                       `source` it: BERTH_KUBECONFIG, BERTH_APISERVER_URL, BERTH_CLUSTER_DIR,
#                             BERTH_WORKLOAD_FEATURE_GATES (the BERTH_GENERIC_WORKLOAD gates), ...
#   etcd/ etcd.log etcd.pid kube-apiserver.log kube-apiserver.pid kube-controller-manager.log
#   kube-controller-manager.pid ports
#
# Ports (defaults in brackets): BERTH_APISERVER_PORT [6443], BERTH_ETCD_PORT [2379],
# BERTH_ETCD_PEER_PORT [2380], BERTH_CONTROLLER_MANAGER_PORT [10257] (its secure port: /healthz).
# While this checkout's cluster runs, every subcommand uses the ports it was started with, so only
# `up` needs them.
#
# BERTH_COMPAT=1 selects the compatibility cluster instead: the oldest supported Kubernetes minor
# (KUBERNETES_COMPAT_VERSION and ETCD_COMPAT_VERSION in deploy/versions.env), built by
# `deploy/build-tools.sh --compat`, living in _output/cluster-compat/ with its own ports
# BERTH_COMPAT_APISERVER_PORT [7443], BERTH_COMPAT_ETCD_PORT [3379], BERTH_COMPAT_ETCD_PEER_PORT
# [3380], BERTH_COMPAT_CONTROLLER_MANAGER_PORT [11257], so it runs beside the default cluster. Every subcommand acts on the selected cluster;
# its env file exports BERTH_COMPAT=1, so a test that sources it and restarts "the" apiserver
# restarts the compat one.
#
# BERTH_GENERIC_WORKLOAD=1 (the default of the pinned-release cluster) starts kube-apiserver with
# the GenericWorkload and TopologyAwareWorkloadScheduling feature gates (the latter alpha, and
# valid only with the former) and scheduling.k8s.io/v1beta1 enabled, so it serves upstream's own
# gang API (PodGroup, Workload), keeps pods' spec.schedulingGroup and keeps a PodGroup's
# spec.schedulingConstraints.topology (without the second gate the apiserver silently drops it);
# 0 starts it without them, as a default cluster runs. The gates only add API (and
# kube-controller-manager gets the same gates, so its resourceclaim controller serves pods of a
# PodGroup and its podgroup-protection controller runs). `up` restarts a running apiserver
# whose setting (or whose set of gates, after this script changed it) differs; restart-apiserver
# and start-apiserver keep the one `up` chose. The compatibility cluster's minor has no such API:
# there it must be 0 (its default).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
case ${BERTH_COMPAT:-0} in
  0 | "")
    compat=0
    cluster=$repo/_output/cluster
    tools=$repo/_output/tools
    build_tools_args=()
    port_prefix=BERTH_
    default_apiserver_port=6443 default_etcd_port=2379 default_etcd_peer_port=2380
    default_controller_manager_port=10257
    ;;
  1)
    compat=1
    cluster=$repo/_output/cluster-compat
    tools=$repo/_output/tools/compat
    build_tools_args=(--compat)
    port_prefix=BERTH_COMPAT_
    default_apiserver_port=7443 default_etcd_port=3379 default_etcd_peer_port=3380
    default_controller_manager_port=11257
    ;;
  *)
    echo "local-cluster: BERTH_COMPAT must be 0 or 1, not '$BERTH_COMPAT'" >&2
    exit 2
    ;;
esac
case ${BERTH_GENERIC_WORKLOAD:-} in
  "") generic_workload_wanted="" ;;
  0 | 1) generic_workload_wanted=$BERTH_GENERIC_WORKLOAD ;;
  *)
    echo "local-cluster: BERTH_GENERIC_WORKLOAD must be 0 or 1, not '$BERTH_GENERIC_WORKLOAD'" >&2
    exit 2
    ;;
esac
if ((compat)) && [[ $generic_workload_wanted == 1 ]]; then
  echo "local-cluster: BERTH_GENERIC_WORKLOAD=1 needs the pinned release; the compatibility" \
    "cluster's minor does not serve scheduling.k8s.io/v1beta1 PodGroups" >&2
  exit 2
fi
default_generic_workload=$((compat ? 0 : 1))
pki=$cluster/pki
pki_cnf=$repo/deploy/cluster/pki.cnf
# The in-cluster name of the apiserver; service-account tokens are issued for and by it.
sa_issuer=https://kubernetes.default.svc.cluster.local

# Keys, kubeconfigs and etcd's data are secrets; everything this script writes is private.
# (_output itself and the tools are shared with other scripts and keep the usual mode.)
(umask 022 && mkdir -p "$repo/_output")
umask 077

log() { echo "local-cluster: $*" >&2; }
die() { log "$*"; exit 1; }

# --- processes --------------------------------------------------------------------------

# A pid file can outlive its process and the pid be reused, so a pid only counts as this
# checkout's $name when the process runs that binary with this checkout's cluster directory in
# its arguments.
is_ours() {
  local pid=$1 name=$2 argv=() arg
  [[ -r /proc/$pid/cmdline ]] || return 1
  mapfile -d '' -t argv 2>/dev/null <"/proc/$pid/cmdline" || return 1
  ((${#argv[@]})) || return 1
  [[ ${argv[0]##*/} == "$name" || ${argv[0]##*/} == "$name"-* ]] || return 1
  for arg in "${argv[@]:1}"; do
    [[ $arg == *"$cluster/"* ]] && return 0
  done
  return 1
}

# Prints the pid of this checkout's $1 (etcd | kube-apiserver | kube-controller-manager) when it
# runs. When the pid file
# is missing or stale it looks through /proc, so a lost pid file never leaves an orphan behind.
our_pid() {
  local name=$1 pidfile=$cluster/$1.pid pid dir
  pid=$(cat "$pidfile" 2>/dev/null || true)
  if [[ $pid =~ ^[0-9]+$ ]] && is_ours "$pid" "$name"; then
    echo "$pid"
    return 0
  fi
  for dir in /proc/[0-9]*; do
    pid=${dir#/proc/}
    if is_ours "$pid" "$name"; then
      [[ -d $cluster ]] && echo "$pid" >"$pidfile"
      echo "$pid"
      return 0
    fi
  done
  rm -f "$pidfile"
  return 1
}

# Starts "$@" as a daemon in its own session, so it survives this script and the terminal,
# logging to $cluster/$name.log. The child closes every inherited descriptor: a caller that
# runs `up` under $(...) or a test runner's pipe must not wait for the daemon's EOF, and the
# lock below must not stay held by etcd.
launch() {
  local name=$1 pidfile=$cluster/$1.pid i
  shift
  rm -f "$pidfile"
  printf '\n==== %s local-cluster.sh: starting %s ====\n' "$(date -u +%FT%TZ)" "$name" >>"$cluster/$name.log"
  # shellcheck disable=SC2016  # expanded by the child shell
  setsid bash -c '
    for fd in /proc/self/fd/*; do
      fd=${fd##*/}
      ((fd > 2)) && eval "exec $fd>&-" 2>/dev/null
    done
    echo $$ >"$0"
    exec "$@"' "$pidfile" "$@" </dev/null >>"$cluster/$name.log" 2>&1 &
  for ((i = 0; i < 50; i++)); do
    [[ -s $pidfile ]] && return 0
    sleep 0.1
  done
  die "$name did not start; see $cluster/$name.log"
}

# True until $1 has fully exited, sockets closed. Its command line vanishes before its sockets
# are closed, and the main thread of a Go program turns zombie while other threads still tear
# down, so the test is: some thread of it is not a zombie.
process_alive() {
  local task stat
  for task in /proc/"$1"/task/*/stat; do
    read -r stat 2>/dev/null <"$task" || continue
    stat=${stat##*) }
    [[ ${stat:0:1} == Z ]] || return 0
  done
  return 1
}

# SIGTERM (or the signal given), up to 10 s for a clean exit, then SIGKILL.
stop_process() {
  local name=$1 signal=${2:-TERM} pid i
  pid=$(our_pid "$name") || return 0
  kill -"$signal" "$pid" 2>/dev/null || true
  for ((i = 0; i < 100; i++)); do
    process_alive "$pid" || break
    sleep 0.1
  done
  # is_ours again: the escalation must not hit a process that has since reused the pid.
  if process_alive "$pid" && is_ours "$pid" "$name"; then
    log "$name (pid $pid) still running 10s after SIG$signal; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    for ((i = 0; i < 50; i++)); do
      process_alive "$pid" || break
      sleep 0.1
    done
    ! process_alive "$pid" || die "$name (pid $pid) survived SIGKILL"
  fi
  rm -f "$cluster/$name.pid"
}

show_log_tail() {
  log "last 40 lines of $cluster/$1.log:"
  tail -n 40 "$cluster/$1.log" >&2 || true
}

# --- ports ------------------------------------------------------------------------------

# Ports come from the environment, else from the running cluster (recorded in $cluster/ports),
# else the defaults.
load_ports() {
  local recorded_apiserver_port="" recorded_etcd_port="" recorded_etcd_peer_port=""
  local recorded_controller_manager_port=""
  recorded_generic_workload="" recorded_workload_gates=""
  if [[ -f $cluster/ports ]] && { our_pid etcd >/dev/null || our_pid kube-apiserver >/dev/null ||
    our_pid kube-controller-manager >/dev/null; }; then
    # shellcheck source=/dev/null
    source "$cluster/ports"
  fi
  # What a (re)started apiserver gets: the setting asked for, else the running cluster's.
  generic_workload=${generic_workload_wanted:-${recorded_generic_workload:-$default_generic_workload}}
  local apiserver_var=${port_prefix}APISERVER_PORT etcd_var=${port_prefix}ETCD_PORT
  local etcd_peer_var=${port_prefix}ETCD_PEER_PORT
  local controller_manager_var=${port_prefix}CONTROLLER_MANAGER_PORT
  apiserver_port=${!apiserver_var:-${recorded_apiserver_port:-$default_apiserver_port}}
  etcd_port=${!etcd_var:-${recorded_etcd_port:-$default_etcd_port}}
  etcd_peer_port=${!etcd_peer_var:-${recorded_etcd_peer_port:-$default_etcd_peer_port}}
  controller_manager_port=${!controller_manager_var:-${recorded_controller_manager_port:-$default_controller_manager_port}}
  local port
  for port in "$apiserver_port" "$etcd_port" "$etcd_peer_port" "$controller_manager_port"; do
    [[ $port =~ ^[0-9]+$ ]] && ((port > 0 && port < 65536)) || die "invalid port '$port'"
  done
  # A cluster started before the controller-manager joined it recorded no port for it.
  if [[ -n $recorded_etcd_port ]] &&
    [[ $apiserver_port != "$recorded_apiserver_port" || $etcd_port != "$recorded_etcd_port" ||
      $etcd_peer_port != "$recorded_etcd_peer_port" ||
      $controller_manager_port != "${recorded_controller_manager_port:-$controller_manager_port}" ]]; then
    die "this checkout's cluster already runs on apiserver port $recorded_apiserver_port," \
      "etcd ports $recorded_etcd_port/$recorded_etcd_peer_port, controller-manager port" \
      "${recorded_controller_manager_port:-$controller_manager_port}; run '$0 down' before" \
      "changing ports"
  fi
  apiserver_url=https://127.0.0.1:$apiserver_port
  etcd_url=http://127.0.0.1:$etcd_port
  controller_manager_url=https://127.0.0.1:$controller_manager_port
}

record_ports() {
  printf 'recorded_apiserver_port=%s\nrecorded_etcd_port=%s\nrecorded_etcd_peer_port=%s\n' \
    "$apiserver_port" "$etcd_port" "$etcd_peer_port" >"$cluster/ports"
  printf 'recorded_controller_manager_port=%s\n' "$controller_manager_port" >>"$cluster/ports"
  printf 'recorded_generic_workload=%s\n' "$generic_workload" >>"$cluster/ports"
  printf 'recorded_workload_gates=%s\n' "$(workload_gates)" >>"$cluster/ports"
}

# The feature gates BERTH_GENERIC_WORKLOAD=1 turns on in kube-apiserver and
# kube-controller-manager (e2e's reference kube-scheduler gets the same: test/testing/), comma
# separated; empty with 0. TopologyAwareWorkloadScheduling depends on GenericWorkload.
workload_gates() {
  if ((generic_workload)); then
    echo GenericWorkload=true,TopologyAwareWorkloadScheduling=true
  fi
}

port_in_use() {
  timeout 2 bash -c 'exec 3<>"/dev/tcp/127.0.0.1/$0"' "$1" 2>/dev/null
}

# Called only after checking that this checkout's process is not the one holding the port.
require_free_port() {
  local port=$1 what=$2 variable=$3 owner=""
  port_in_use "$port" || return 0
  if command -v ss >/dev/null 2>&1; then
    owner=$(ss -ltnpH "sport = :$port" 2>/dev/null | grep -o 'users:(([^)]*))' | head -n 1 || true)
    [[ -z $owner ]] || owner=" ($owner)"
  fi
  die "port $port ($what, $variable) on 127.0.0.1 is already in use by another process$owner," \
    "not by this checkout's cluster. Stop that process, or choose other ports, e.g." \
    "${port_prefix}APISERVER_PORT=$((apiserver_port + 10000))" \
    "${port_prefix}ETCD_PORT=$((etcd_port + 10000))" \
    "${port_prefix}ETCD_PEER_PORT=$((etcd_peer_port + 10000))" \
    "${port_prefix}CONTROLLER_MANAGER_PORT=$((controller_manager_port + 10000)) $0 up"
}

# --- PKI --------------------------------------------------------------------------------

openssl_quiet() {
  local output
  output=$(openssl "$@" 2>&1) || {
    echo "$output" >&2
    die "openssl $1 failed"
  }
}

# A certificate is reused when it exists, is valid for at least another day and (for leaves)
# still chains to the current CA; otherwise it is minted again.
cert_usable() {
  local crt=$pki/$1.crt ca=${2:-}
  [[ -f $crt && -f $pki/$1.key ]] || return 1
  openssl x509 -in "$crt" -noout -checkend 86400 >/dev/null 2>&1 || return 1
  [[ -z $ca ]] || openssl verify -CAfile "$pki/$ca.crt" "$crt" >/dev/null 2>&1
}

new_key() {
  openssl_quiet genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out "$pki/$1.key"
}

new_ca() {
  local name=$1 cn=$2
  new_key "$name"
  openssl_quiet req -x509 -new -config "$pki_cnf" -extensions ca_ext -key "$pki/$name.key" \
    -subj "/CN=$cn" -days 3650 -sha256 -set_serial "0x$(openssl rand -hex 16)" -out "$pki/$name.crt"
}

new_leaf() {
  local name=$1 subject=$2 extensions=$3
  new_key "$name"
  openssl_quiet req -new -config "$pki_cnf" -key "$pki/$name.key" -subj "$subject" -out "$pki/$name.csr"
  openssl_quiet x509 -req -in "$pki/$name.csr" -CA "$pki/ca.crt" -CAkey "$pki/ca.key" \
    -set_serial "0x$(openssl rand -hex 16)" -days 365 -sha256 \
    -extfile "$pki_cnf" -extensions "$extensions" -out "$pki/$name.crt"
  rm -f "$pki/$name.csr"
}

pki_complete() {
  local file
  for file in ca.crt ca.key wrong-ca.crt apiserver.crt apiserver.key admin.crt admin.key \
    noperms.crt noperms.key controller-manager.crt controller-manager.key \
    controller-manager-serving.crt controller-manager-serving.key sa.key sa.pub; do
    [[ -f $pki/$file ]] || return 1
  done
}

# Mints whatever is missing or expiring; sets pki_changed when the apiserver's view changed and
# controller_manager_pki_changed when the controller-manager's did.
ensure_pki() {
  pki_changed=false controller_manager_pki_changed=false
  mkdir -p "$pki"
  if ! cert_usable ca; then
    log "creating the cluster CA in $pki"
    new_ca ca berth-local-ca
    pki_changed=true
  fi
  # A CA the cluster does not trust, for tests of certificate verification failures.
  cert_usable wrong-ca || new_ca wrong-ca berth-wrong-ca
  if ! cert_usable apiserver ca; then
    new_leaf apiserver /CN=kube-apiserver serving_ext
    pki_changed=true
  fi
  cert_usable admin ca || new_leaf admin /O=system:masters/CN=berth-admin client_ext
  cert_usable noperms ca || new_leaf noperms /CN=berth-test-noperms client_ext
  if ! cert_usable controller-manager ca; then
    new_leaf controller-manager /CN=system:kube-controller-manager client_ext
    controller_manager_pki_changed=true
  fi
  if ! cert_usable controller-manager-serving ca; then
    new_leaf controller-manager-serving /CN=kube-controller-manager loopback_serving_ext
    controller_manager_pki_changed=true
  fi
  if [[ ! -f $pki/sa.key || ! -f $pki/sa.pub ]]; then
    new_key sa
    openssl_quiet pkey -in "$pki/sa.key" -pubout -out "$pki/sa.pub"
    pki_changed=true
  fi
  # The controllers authenticate with tokens the apiserver signs, and trust the CA.
  $pki_changed && controller_manager_pki_changed=true
  return 0
}

# --- etcd and kube-apiserver ------------------------------------------------------------

etcd_healthy() {
  curl -sS --max-time 2 "$etcd_url/health" 2>/dev/null | grep -q '"health":"true"'
}

readyz_ok() {
  [[ -f $pki/admin.key ]] || return 1
  [[ $(curl -sS --max-time 3 --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" \
    "$apiserver_url/readyz" 2>/dev/null) == ok ]]
}

start_etcd() {
  our_pid etcd >/dev/null && return 0
  require_free_port "$etcd_port" "etcd client" "${port_prefix}ETCD_PORT"
  require_free_port "$etcd_peer_port" "etcd peer" "${port_prefix}ETCD_PEER_PORT"
  mkdir -p "$cluster/etcd"
  # Metrics stay on the client URL (no --listen-metrics-urls), so no third port is needed.
  # The gRPC gateway serves the HTTP/JSON API `compact` uses.
  launch etcd "$tools/etcd" \
    --name=berth \
    --data-dir="$cluster/etcd" \
    --listen-client-urls="$etcd_url" \
    --advertise-client-urls="$etcd_url" \
    --listen-peer-urls="http://127.0.0.1:$etcd_peer_port" \
    --initial-advertise-peer-urls="http://127.0.0.1:$etcd_peer_port" \
    --initial-cluster="berth=http://127.0.0.1:$etcd_peer_port" \
    --enable-grpc-gateway=true \
    --log-level=warn
  record_ports
  local deadline=$((SECONDS + 60))
  until etcd_healthy; do
    if ! our_pid etcd >/dev/null; then
      show_log_tail etcd
      die "etcd exited during startup"
    fi
    if ((SECONDS >= deadline)); then
      show_log_tail etcd
      die "etcd not healthy at $etcd_url/health after 60s"
    fi
    sleep 0.2
  done
}

start_apiserver() {
  our_pid kube-apiserver >/dev/null && return 0
  our_pid etcd >/dev/null || die "etcd is not running; use '$0 up'"
  require_free_port "$apiserver_port" kube-apiserver "${port_prefix}APISERVER_PORT"
  # --enable-priority-and-fairness=false: system:masters requests are exempt from API Priority
  # and Fairness, but the scheduler under test may run as a narrower identity (its RBAC is
  # tested), and APF would put that identity's requests into the small default priority levels
  # and queue or reject them with 429 when a benchmark creates and binds thousands of pods: the
  # benchmark would measure APF, not Berth. In this single-user cluster the plain max-in-flight
  # limits below bound concurrency instead.
  # --disable-admission-plugins=ServiceAccount: that plugin rejects a pod until the serviceaccount
  # controller has created the namespace's default service account, and the controller-manager
  # here does not run it (no pod here ever runs, so none needs an account). TaintNodesByCondition
  # taints every new Node not-ready:NoSchedule until the node lifecycle controller (not run here
  # either: no kubelet heartbeats) sees it Ready; the simulated nodes here are created Ready and
  # nothing would ever lift that taint.
  # Every other default admission plugin stays on.
  # --endpoint-reconciler-type=none: the reconciler would publish the advertise address as the
  # `kubernetes` service's endpoint, but Endpoints validation rejects loopback addresses and it
  # would log that error every 10 s. Nothing in this cluster reaches the apiserver through the
  # service.
  # --shutdown-watch-termination-grace-period=2s: without it a SIGTERM'd apiserver with open
  # watches waits out its 60 s shutdown timeout (so `down` would always end in SIGKILL after
  # 10 s); with it the watches are closed cleanly and the apiserver exits in about a second.
  # DRAListTypeAttributes (pinned release only; the compatibility minor has no such gate): a
  # ResourceSlice may carry list-typed device attributes (ints, strings, ...), which the DRA
  # device-selector table (e2e/cel_selectors_e2e_test.cc) puts on its devices; with the gate off
  # the apiserver drops those fields and refuses the slice.
  local gates=() workload_flags=()
  ((compat)) || gates+=(DRAListTypeAttributes=true)
  if ((generic_workload)); then
    gates+=("$(workload_gates)")
    workload_flags=(--runtime-config=scheduling.k8s.io/v1beta1=true)
  fi
  if ((${#gates[@]})); then
    workload_flags+=(--feature-gates="$(IFS=,; echo "${gates[*]}")")
  fi
  launch kube-apiserver "$tools/kube-apiserver" \
    "${workload_flags[@]}" \
    --etcd-servers="$etcd_url" \
    --storage-backend=etcd3 \
    --bind-address=127.0.0.1 \
    --advertise-address=127.0.0.1 \
    --secure-port="$apiserver_port" \
    --cert-dir="$pki" \
    --tls-cert-file="$pki/apiserver.crt" \
    --tls-private-key-file="$pki/apiserver.key" \
    --client-ca-file="$pki/ca.crt" \
    --authorization-mode=Node,RBAC \
    --service-account-issuer="$sa_issuer" \
    --service-account-key-file="$pki/sa.pub" \
    --service-account-signing-key-file="$pki/sa.key" \
    --api-audiences="$sa_issuer" \
    --service-cluster-ip-range=10.0.0.0/24 \
    --endpoint-reconciler-type=none \
    --disable-admission-plugins=ServiceAccount,TaintNodesByCondition \
    --allow-privileged=true \
    --enable-priority-and-fairness=false \
    --max-requests-inflight=1000 \
    --max-mutating-requests-inflight=500 \
    --watch-cache=true \
    --event-ttl=1h \
    --profiling=false \
    --shutdown-watch-termination-grace-period=2s \
    --v=1
  record_ports
}

wait_apiserver_ready() {
  local deadline=$((SECONDS + 120))
  until readyz_ok; do
    if ! our_pid kube-apiserver >/dev/null; then
      show_log_tail kube-apiserver
      die "kube-apiserver exited during startup"
    fi
    if ((SECONDS >= deadline)); then
      show_log_tail kube-apiserver
      die "kube-apiserver not ready at $apiserver_url/readyz after 120s"
    fi
    sleep 0.5
  done
}

# --- kube-controller-manager -----------------------------------------------------------

# The controllers to run, by their canonical names (the same in every supported minor). Each
# registers a health check of its own name once started, which is what readiness waits for.
controllers() {
  local list=(
    resourceclaim-controller
    persistentvolume-binder-controller
    persistentvolumeclaim-protection-controller
    persistentvolume-protection-controller
    disruption-controller
    namespace-controller
    garbage-collector-controller
  )
  # Upstream's PodGroups (GenericWorkload) get a finalizer only this controller lifts; the
  # controller exists in the minors that have the API, and only with the gate.
  ((generic_workload)) && list+=(podgroup-protection-controller)
  local IFS=,
  echo "${list[*]}"
}

controller_manager_health() {
  [[ -f $pki/ca.crt ]] || return 1
  curl -sS --max-time 3 --cacert "$pki/ca.crt" "$controller_manager_url/healthz?verbose" 2>/dev/null
}

# Healthy, and every controller asked for has started (its named check is listed and ok).
controller_manager_ready() {
  local health name
  health=$(controller_manager_health) || return 1
  [[ $health == *"healthz check passed"* ]] || return 1
  for name in $(controllers | tr , ' '); do
    [[ $health == *"[+]$name ok"* ]] || return 1
  done
}

start_controller_manager() {
  our_pid kube-controller-manager >/dev/null && return 0
  require_free_port "$controller_manager_port" kube-controller-manager \
    "${port_prefix}CONTROLLER_MANAGER_PORT"
  write_kubeconfig "$cluster/kubeconfig-controller-manager" controller-manager ca
  # --use-service-account-credentials: each controller gets its own service account in
  # kube-system (created by the controller-manager) and a token for it from the apiserver's
  # TokenRequest API (signed with sa.key, see --service-account-signing-key-file), so it acts
  # with exactly the RBAC role the apiserver bootstraps for it, as in a real cluster. No
  # --service-account-private-key-file: that key only serves the legacy token-secret controller,
  # which does not run. No --root-ca-file: only the token-secret and root-ca-cert-publisher
  # controllers read it. No --cluster-signing-*: no CSR signing controller runs.
  # --authentication-/--authorization-kubeconfig: its secure port checks bearer tokens and
  # permissions with the apiserver (TokenReview, SubjectAccessReview; the bootstrap role allows
  # both) and client certificates against --client-ca-file. --authentication-skip-lookup: the
  # apiserver runs without a front proxy, so the extension-apiserver-authentication ConfigMap has
  # no request-header CA, and looking it up would log an error every few seconds. /healthz is
  # always open, served with a certificate of the cluster CA so probes verify it.
  # --leader-elect=false: one instance; no Lease traffic, and a restarted apiserver never makes it
  # give up leadership and exit.
  # --kube-api-qps/burst: the default 20/30 per controller would leave the namespace controller
  # (which lists and deletes every resource type of a namespace) minutes behind a test suite that
  # deletes a namespace per test.
  local gate_flags=()
  ((generic_workload)) && gate_flags=(--feature-gates="$(workload_gates)")
  launch kube-controller-manager "$tools/kube-controller-manager" \
    "${gate_flags[@]}" \
    --kubeconfig="$cluster/kubeconfig-controller-manager" \
    --authentication-kubeconfig="$cluster/kubeconfig-controller-manager" \
    --authorization-kubeconfig="$cluster/kubeconfig-controller-manager" \
    --authentication-skip-lookup=true \
    --client-ca-file="$pki/ca.crt" \
    --bind-address=127.0.0.1 \
    --secure-port="$controller_manager_port" \
    --tls-cert-file="$pki/controller-manager-serving.crt" \
    --tls-private-key-file="$pki/controller-manager-serving.key" \
    --use-service-account-credentials=true \
    --leader-elect=false \
    --controllers="$(controllers)" \
    --kube-api-qps=100 \
    --kube-api-burst=200 \
    --profiling=false \
    --v=1
  record_ports
}

wait_controller_manager_ready() {
  local deadline=$((SECONDS + 60))
  until controller_manager_ready; do
    if ! our_pid kube-controller-manager >/dev/null; then
      show_log_tail kube-controller-manager
      die "kube-controller-manager exited during startup"
    fi
    if ((SECONDS >= deadline)); then
      show_log_tail kube-controller-manager
      log "its health report: $(controller_manager_health | tr '\n' ' ')"
      die "kube-controller-manager not healthy with controllers $(controllers) at" \
        "$controller_manager_url/healthz after 60s"
    fi
    sleep 0.5
  done
}

# --- kubeconfigs ------------------------------------------------------------------------

# Written to a temporary name and renamed, so a reader never sees half a file.
write_kubeconfig() {
  local file=$1 user=$2 ca=$3
  cat >"$file.tmp.$$" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: berth-local
  cluster:
    server: $apiserver_url
    certificate-authority-data: $(base64 -w0 <"$pki/$ca.crt")
users:
- name: $user
  user:
    client-certificate-data: $(base64 -w0 <"$pki/$user.crt")
    client-key-data: $(base64 -w0 <"$pki/$user.key")
contexts:
- name: berth-local
  context:
    cluster: berth-local
    user: $user
current-context: berth-local
preferences: {}
EOF
  mv -f "$file.tmp.$$" "$file"
}

write_client_files() {
  write_kubeconfig "$cluster/kubeconfig" admin ca
  write_kubeconfig "$cluster/kubeconfig-noperms" noperms ca
  write_kubeconfig "$cluster/kubeconfig-wrong-ca" admin wrong-ca
  {
    echo "# Written by deploy/local-cluster.sh up. Source it to reach the local control plane."
    printf 'export BERTH_CLUSTER_DIR=%q\n' "$cluster"
    printf 'export BERTH_COMPAT=%s\n' "$compat"
    printf 'export BERTH_KUBECONFIG=%q\n' "$cluster/kubeconfig"
    printf 'export BERTH_KUBECONFIG_NOPERMS=%q\n' "$cluster/kubeconfig-noperms"
    printf 'export BERTH_KUBECONFIG_WRONG_CA=%q\n' "$cluster/kubeconfig-wrong-ca"
    printf 'export BERTH_APISERVER_URL=%q\n' "$apiserver_url"
    printf 'export BERTH_ETCD_URL=%q\n' "$etcd_url"
    # Letters, '=' and ',' only; %q would escape the commas.
    printf 'export BERTH_WORKLOAD_FEATURE_GATES=%s\n' "$(workload_gates)"
  } >"$cluster/env.tmp.$$"
  mv -f "$cluster/env.tmp.$$" "$cluster/env"
}

# --- subcommands ------------------------------------------------------------------------

# Serialises the subcommands that start or stop processes (parallel test runs may all call
# `up`). The lock is a descriptor, so it goes away with this script however it ends.
take_lock() {
  mkdir -p "$cluster"
  exec 9>"$cluster/.lock"
  flock 9
}

cmd_up() {
  local start=$SECONDS
  take_lock
  load_ports
  generic_workload=${generic_workload_wanted:-$default_generic_workload}
  if our_pid kube-apiserver >/dev/null && pki_complete && readyz_ok &&
    our_pid kube-controller-manager >/dev/null && controller_manager_ready; then
    if [[ ${recorded_generic_workload:-0} == "$generic_workload" &&
      $recorded_workload_gates == "$(workload_gates)" ]]; then
      write_client_files
      log "already running: $apiserver_url (etcd $etcd_url, controller-manager $controller_manager_url)"
      echo "$cluster/kubeconfig"
      return 0
    fi
  fi
  if [[ ${recorded_generic_workload:-0} != "$generic_workload" ||
    $recorded_workload_gates != "$(workload_gates)" ]] &&
    { our_pid kube-apiserver >/dev/null || our_pid kube-controller-manager >/dev/null; }; then
    log "restarting kube-apiserver and kube-controller-manager with" \
      "BERTH_GENERIC_WORKLOAD=$generic_workload (feature gates: $(workload_gates))"
    stop_process kube-controller-manager
    stop_process kube-apiserver
  fi
  (umask 022 && "$repo/deploy/build-tools.sh" "${build_tools_args[@]}" etcd kube-apiserver \
    kube-controller-manager >&2)
  ensure_pki
  if $pki_changed && our_pid kube-apiserver >/dev/null; then
    log "certificates changed; restarting kube-apiserver"
    stop_process kube-apiserver
  fi
  if $controller_manager_pki_changed && our_pid kube-controller-manager >/dev/null; then
    log "certificates changed; restarting kube-controller-manager"
    stop_process kube-controller-manager
  fi
  start_etcd
  start_apiserver
  wait_apiserver_ready
  local controller_manager_start=$SECONDS
  start_controller_manager
  wait_controller_manager_ready
  write_client_files
  log "up in $((SECONDS - start))s: kube-apiserver $apiserver_url ($("$tools/kube-apiserver" --version 2>/dev/null | awk '{print $2}'))," \
    "etcd $etcd_url, kube-controller-manager $controller_manager_url" \
    "(ready in $((SECONDS - controller_manager_start))s); kubeconfig $cluster/kubeconfig;" \
    "source $cluster/env"
  echo "$cluster/kubeconfig"
}

cmd_down() {
  local purge=false
  case ${1:-} in
    --purge) purge=true ;;
    "") ;;
    *) die "usage: $0 down [--purge]" ;;
  esac
  [[ -d $cluster ]] || return 0
  take_lock
  stop_process kube-controller-manager
  stop_process kube-apiserver
  stop_process etcd
  rm -f "$cluster/ports"
  if $purge; then
    rm -rf "$cluster"
    log "stopped; removed $cluster"
  else
    log "stopped (state and PKI kept in $cluster; 'down --purge' removes them)"
  fi
}

cmd_status() {
  [[ -d $cluster ]] && load_ports 2>/dev/null && readyz_ok && controller_manager_ready && {
    echo running
    return 0
  }
  echo "not running"
  return 1
}

# After an outage the controller-manager's informers retry with a backoff that grows to 30 s,
# and until they catch up its controllers act late (a PodDisruptionBudget's status, a claim's
# protection finalizer lifted). Restarted once the apiserver is back, it lists everything at
# once, so whatever runs after an outage finds the controllers as prompt as before it.
restart_controller_manager() {
  our_pid kube-controller-manager >/dev/null || return 0
  stop_process kube-controller-manager TERM
  local i
  for ((i = 0; i < 50; i++)); do
    port_in_use "$controller_manager_port" || break
    sleep 0.1
  done
  start_controller_manager
  wait_controller_manager_ready
}

cmd_stop_apiserver() {
  local signal=TERM
  case ${1:-} in
    --kill) signal=KILL ;;
    "") ;;
    *) die "usage: $0 stop-apiserver [--kill]" ;;
  esac
  [[ -d $cluster ]] || return 0
  take_lock
  load_ports
  stop_process kube-apiserver "$signal"
  log "kube-apiserver stopped (etcd still running)"
}

cmd_start_apiserver() {
  take_lock
  load_ports
  pki_complete || die "no PKI in $pki; use '$0 up'"
  start_apiserver
  wait_apiserver_ready
  restart_controller_manager
  log "kube-apiserver ready at $apiserver_url"
}

cmd_restart_apiserver() {
  local start=$SECONDS
  take_lock
  load_ports
  pki_complete || die "no PKI in $pki; use '$0 up'"
  our_pid etcd >/dev/null || die "etcd is not running; use '$0 up'"
  stop_process kube-apiserver KILL
  # The killed process's listener can outlive its reaped tasks by a moment; starting before it is
  # gone would find the port "in use by another process".
  local i
  for ((i = 0; i < 50; i++)); do
    port_in_use "$apiserver_port" || break
    sleep 0.1
  done
  start_apiserver
  wait_apiserver_ready
  restart_controller_manager
  log "kube-apiserver killed and ready again in $((SECONDS - start))s at $apiserver_url"
}

# Compacting to the current revision makes every older resourceVersion unreadable in etcd, so a
# watch or list from one gets 410 Gone once the apiserver's watch cache cannot serve it either.
# The revision is advanced first by writing a scratch key outside the apiserver's /registry: a
# client whose last event was the store's last write would otherwise hold the very revision
# compacted to, which stays readable. Done while the apiserver is down, that forces every client.
cmd_compact() {
  [[ -d $cluster ]] || die "not running; use '$0 up'"
  load_ports
  our_pid etcd >/dev/null || die "etcd is not running; use '$0 up'"
  local revision response
  # key "/berth-local-cluster/compact-marker", value "1"; the answer's header carries the
  # store's revision after the write.
  revision=$(curl -sS --fail --max-time 10 -X POST "$etcd_url/v3/kv/put" \
    -d '{"key":"L2JlcnRoLWxvY2FsLWNsdXN0ZXIvY29tcGFjdC1tYXJrZXI=","value":"MQ=="}' |
    grep -o '"revision":"[0-9]*"' | head -n 1 | grep -o '[0-9]\+') ||
    die "could not advance and read the revision of $etcd_url"
  response=$(curl -sS --max-time 60 -X POST "$etcd_url/v3/kv/compaction" \
    -d "{\"revision\":\"$revision\",\"physical\":true}") || die "compaction request to $etcd_url failed"
  if [[ $response == *'"error"'* || $response == *'"code"'* ]]; then
    # The apiserver's own periodic compaction may have got there first; that is the same result.
    [[ $response == *"compacted"* ]] || die "etcd refused the compaction: $response"
  fi
  log "etcd compacted to revision $revision"
  echo "$revision"
}

usage() {
  sed -n '/^#   deploy/p' "$0" | sed 's/^#   /usage: /' >&2
  exit 2
}

command=${1:-}
(($#)) && shift
case $command in
  up) cmd_up "$@" ;;
  down) cmd_down "$@" ;;
  status) cmd_status "$@" ;;
  restart-apiserver) cmd_restart_apiserver "$@" ;;
  stop-apiserver) cmd_stop_apiserver "$@" ;;
  start-apiserver) cmd_start_apiserver "$@" ;;
  compact) cmd_compact "$@" ;;
  *) usage ;;
esac
