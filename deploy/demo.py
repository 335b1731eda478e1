#!/usr/bin/env python3
"""The `make demo` scenario: simulated nodes, a mixed workload, berth-scheduler binding it.

Registers 22 Node objects (three zones, three GPU nodes tainted, one cordoned), submits 234 pods
for berth-scheduler (among them a group with required anti-affinity, a group spread over zones,
three gangs: one that fits and binds whole, one that can never have all its pods placed and so
binds none, and one of four pods that each claim a GPU through Dynamic Resource Allocation where
the three GPU nodes publish one GPU each, so it binds none and holds no GPU, beside a single pod
that claims one and gets it) and 5 for default-scheduler, runs berth-scheduler, shows progress,
and ends with pods per node, how the constrained groups and the gangs were placed, which device
each claim got, every unschedulable pod with its reason, and `berth-scheduler explain` for each
pod left Pending (once per gang). Talks to the local control plane with the admin credentials
deploy/local-cluster.sh wrote; uses only the standard library.
"""

import base64
import json
import os
import signal
import ssl
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLUSTER = os.environ.get("BERTH_CLUSTER_DIR", os.path.join(REPO, "_output", "cluster"))
NAMESPACE = "berth-demo"
NODE_LABEL = "berth-demo"


def load_kubeconfig():
    """Server URL and an SSL context from the admin kubeconfig (embedded data only)."""
    server = None
    ca = cert = key = None
    with open(os.path.join(CLUSTER, "kubeconfig")) as f:
        for line in f:
            line = line.strip()
            if line.startswith("server:"):
                server = line.split(":", 1)[1].strip()
            elif line.startswith("certificate-authority-data:"):
                ca = base64.b64decode(line.split(":", 1)[1].strip())
            elif line.startswith("client-certificate-data:"):
                cert = base64.b64decode(line.split(":", 1)[1].strip())
            elif line.startswith("client-key-data:"):
                key = base64.b64decode(line.split(":", 1)[1].strip())
    ctx = ssl.create_default_context(cadata=ca.decode())
    # The client key must be a file for load_cert_chain; keep it private and short-lived.
    with tempfile.NamedTemporaryFile("wb", delete=False) as c, tempfile.NamedTemporaryFile(
        "wb", delete=False
    ) as k:
        os.chmod(k.name, 0o600)
        c.write(cert)
        k.write(key)
    try:
        ctx.load_cert_chain(c.name, k.name)
    finally:
        os.unlink(c.name)
        os.unlink(k.name)
    return server, ctx


SERVER, CTX = load_kubeconfig()


def call(method, path, body=None, ok_missing=False, content_type="application/json"):
    if body is None:
        data = None
    elif isinstance(body, bytes):
        data = body
    else:
        data = json.dumps(body).encode()
    req = urllib.request.Request(SERVER + path, data=data, method=method)
    req.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(req, context=CTX, timeout=30) as resp:
            return json.loads(resp.read() or b"{}")
    except urllib.error.HTTPError as e:
        if ok_missing and e.code in (404, 409):
            return None
        raise SystemExit(f"demo: {method} {path}: HTTP {e.code}: {e.read().decode()[:300]}")


# The two gang APIs Berth reads: scheduler-plugins' PodGroup (a CRD, installed from the chart's
# copy) and upstream's own (served when the apiserver runs with the GenericWorkload gate, as
# deploy/local-cluster.sh starts it by default).
SP_GROUPS = f"/apis/scheduling.x-k8s.io/v1alpha1/namespaces/{NAMESPACE}/podgroups"
UP_GROUPS = f"/apis/scheduling.k8s.io/v1beta1/namespaces/{NAMESPACE}/podgroups"


def served(group_version, plural):
    listing = call("GET", f"/apis/{group_version}", ok_missing=True) or {}
    return any(r.get("name") == plural for r in listing.get("resources", []))


def install_podgroup_crd():
    if served("scheduling.x-k8s.io/v1alpha1", "podgroups"):
        return
    with open(os.path.join(REPO, "charts", "berth", "files", "podgroups.scheduling.x-k8s.io.yaml"), "rb") as f:
        call("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", f.read(),
             ok_missing=True, content_type="application/yaml")
    deadline = time.time() + 60
    while not served("scheduling.x-k8s.io/v1alpha1", "podgroups"):
        if time.time() > deadline:
            raise SystemExit("demo: the PodGroup CRD is not served after 60s")
        time.sleep(0.5)


def clean_previous_run():
    call("DELETE", f"/api/v1/namespaces/{NAMESPACE}/pods?gracePeriodSeconds=0", ok_missing=True)
    clean_devices()
    if served("scheduling.k8s.io/v1beta1", "podgroups"):
        call("DELETE", UP_GROUPS, ok_missing=True)
        # Each keeps a finalizer until kube-controller-manager's podgroup-protection controller sees
        # none of its pods left; the demo creates one of the same name again.
        deadline = time.time() + 60
        while (call("GET", UP_GROUPS, ok_missing=True) or {}).get("items"):
            if time.time() > deadline:
                raise SystemExit("demo: the previous run's PodGroups are still there after 60s "
                                 "(is kube-controller-manager running? see _output/cluster/"
                                 "kube-controller-manager.log)")
            time.sleep(0.2)
    if served("scheduling.x-k8s.io/v1alpha1", "podgroups"):
        call("DELETE", SP_GROUPS, ok_missing=True)
    call("DELETE", f"/api/v1/nodes?labelSelector={NODE_LABEL}%3Dtrue", ok_missing=True)
    call(
        "POST",
        "/api/v1/namespaces",
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NAMESPACE}},
        ok_missing=True,
    )


def node(name, zone, cpu, memory, taints=None, unschedulable=False):
    resources = {"cpu": cpu, "memory": memory, "pods": "110", "ephemeral-storage": "100Gi"}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {
            "name": name,
            "labels": {
                "kubernetes.io/hostname": name,
                "kubernetes.io/os": "linux",
                "topology.kubernetes.io/zone": zone,
                NODE_LABEL: "true",
            },
        },
        "spec": {"taints": taints or [], "unschedulable": unschedulable},
        "status": {
            "capacity": resources,
            "allocatable": resources,
            "conditions": [{"type": "Ready", "status": "True"}],
        },
    }


def make_nodes():
    nodes = []
    zones = ["zone-a", "zone-b", "zone-c"]
    for i in range(18):
        cpu = ["4", "8", "16"][i % 3]
        memory = ["8Gi", "16Gi", "32Gi"][i % 3]
        nodes.append(node(f"demo-node-{i:02d}", zones[i % 3], cpu, memory))
    for i, name in enumerate(GPU_NODES):
        nodes.append(
            node(
                name,
                zones[i % 3],
                "16",
                "64Gi",
                taints=[{"key": "dedicated", "value": "gpu", "effect": "NoSchedule"}],
            )
        )
    nodes.append(node("demo-cordoned-00", "zone-b", "16", "32Gi", unschedulable=True))
    for n in nodes:
        call("POST", "/api/v1/nodes", n)
    return nodes


def pod(name, cpu, memory, scheduler="berth-scheduler", **spec_extra):
    container = {
        "name": "app",
        "image": "registry.k8s.io/pause:3.10",
        "resources": {"requests": {"cpu": cpu, "memory": memory}},
    }
    if "host_port" in spec_extra:
        container["ports"] = [{"containerPort": 80, "hostPort": spec_extra.pop("host_port")}]
    spec = {
        "schedulerName": scheduler,
        "terminationGracePeriodSeconds": 0,
        "containers": [container],
        "nodeSelector": {NODE_LABEL: "true"},
    }
    for k, v in spec_extra.items():
        if k == "nodeSelector":
            spec["nodeSelector"].update(v)
        else:
            spec[k] = v
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NAMESPACE, "labels": {"app": name.rsplit("-", 1)[0]}},
        "spec": spec,
    }


def make_pods():
    pods = []
    for i in range(120):
        pods.append(pod(f"web-{i:03d}", ["100m", "250m", "500m"][i % 3], "128Mi"))
    for i in range(40):
        pods.append(pod(f"batch-{i:03d}", "1", "2Gi"))
    for i in range(20):
        pods.append(
            pod(f"zonal-{i:03d}", "200m", "256Mi", nodeSelector={"topology.kubernetes.io/zone": "zone-c"})
        )
    for i in range(6):
        pods.append(
            pod(
                f"gpu-{i:03d}",
                "2",
                "4Gi",
                tolerations=[{"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}],
                affinity={
                    "nodeAffinity": {
                        "preferredDuringSchedulingIgnoredDuringExecution": [
                            {
                                "weight": 100,
                                "preference": {
                                    "matchExpressions": [
                                        {"key": "kubernetes.io/hostname", "operator": "In", "values": ["demo-gpu-00"]}
                                    ]
                                },
                            }
                        ]
                    }
                },
            )
        )
    for i in range(10):
        pods.append(pod(f"ingress-{i:03d}", "100m", "64Mi", host_port=443))
    # At most one replica per node, in zone-c only (6 nodes): 6 bind, 2 stay Pending.
    for i in range(8):
        pods.append(
            pod(
                f"replica-{i:03d}",
                "100m",
                "64Mi",
                nodeSelector={"topology.kubernetes.io/zone": "zone-c"},
                affinity={
                    "podAntiAffinity": {
                        "requiredDuringSchedulingIgnoredDuringExecution": [
                            {"labelSelector": {"matchLabels": {"app": "replica"}}, "topologyKey": "kubernetes.io/hostname"}
                        ]
                    }
                },
            )
        )
    # Zones may differ by at most one pod: 3 per zone.
    for i in range(9):
        pods.append(
            pod(
                f"spread-{i:03d}",
                "100m",
                "64Mi",
                topologySpreadConstraints=[
                    {
                        "maxSkew": 1,
                        "topologyKey": "topology.kubernetes.io/zone",
                        "whenUnsatisfiable": "DoNotSchedule",
                        "labelSelector": {"matchLabels": {"app": "spread"}},
                    }
                ],
            )
        )
    # Pods that fit nowhere, to show the reasons Berth reports.
    pods.append(pod("huge-000", "64", "1Gi"))
    pods.append(pod("lost-000", "100m", "64Mi", nodeSelector={"topology.kubernetes.io/zone": "zone-x"}))
    pods.append(pod("gated-000", "100m", "64Mi", schedulingGates=[{"name": "example.com/approval"}]))
    pods.append(pod("ingress-extra-000", "100m", "64Mi", host_port=443))
    pods += [pod(f"foreign-{i:03d}", "100m", "64Mi", scheduler="default-scheduler") for i in range(5)]
    pods += make_gangs()
    pods += make_devices()
    for p in pods:
        call("POST", f"/api/v1/namespaces/{NAMESPACE}/pods", p)
    return pods


# Dynamic Resource Allocation: no DRA driver runs in the local control plane, so the demo publishes
# on each GPU node a ResourceSlice of one GPU, as the node's driver would. Every pod that wants a GPU
# gets a claim from one template (kube-controller-manager's resourceclaim controller makes the
# claims): the gang "finetune" of four, one GPU per pod with three in the cluster, never fits and
# holds none of them past an attempt, so the single pod "infer-000" gets one.
RESOURCE = "/apis/resource.k8s.io/v1"
CLAIMS = f"{RESOURCE}/namespaces/{NAMESPACE}/resourceclaims"
CLAIM_TEMPLATES = f"{RESOURCE}/namespaces/{NAMESPACE}/resourceclaimtemplates"
DEVICE_DRIVER = "gpu.berth-demo.example.com"
DEVICE_CLASS = "berth-demo-gpu"
GPU_NODES = [f"demo-gpu-{i:02d}" for i in range(3)]
INFER_PODS = 1
GPU_GANG = "finetune"
GPU_GANG_SIZE = 4
GPU_TOLERATION = {"key": "dedicated", "operator": "Equal", "value": "gpu", "effect": "NoSchedule"}


def dra_served():
    return served("resource.k8s.io/v1", "deviceclasses")


def clean_devices():
    """Deletes the demo's DeviceClass and ResourceSlices (cluster-scoped, so they outlive the
    namespace's objects) and waits for the previous run's claims to go: an allocated claim holds
    its device until the resourceclaim controller, its pod gone, lets it go."""
    if not dra_served():
        return
    for plural in ("resourceslices", "deviceclasses"):
        call("DELETE", f"{RESOURCE}/{plural}?labelSelector={NODE_LABEL}%3Dtrue", ok_missing=True)
    call("DELETE", CLAIM_TEMPLATES, ok_missing=True)
    call("DELETE", CLAIMS, ok_missing=True)
    deadline = time.time() + 60
    while (call("GET", CLAIMS, ok_missing=True) or {}).get("items"):
        if time.time() > deadline:
            raise SystemExit("demo: the previous run's ResourceClaims are still there after 60s "
                             "(is kube-controller-manager running? see _output/cluster/"
                             "kube-controller-manager.log)")
        time.sleep(0.2)


def gpu_pod(name, cpu, memory):
    """A pod that tolerates the GPU nodes' taint and claims one GPU from template one-gpu."""
    p = pod(name, cpu, memory, tolerations=[GPU_TOLERATION],
            resourceClaims=[{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}])
    p["spec"]["containers"][0]["resources"]["claims"] = [{"name": "gpu"}]
    return p


def make_devices():
    """The DeviceClass, the slice each GPU node's driver would publish, the claim template the pods
    name, and the gang's PodGroup. Returns the pods, the gang's first: its PodGroup is older than
    the single pods, so Coscheduling's queue order tries it first, with all three GPUs free. None
    when the apiserver does not serve resource.k8s.io/v1."""
    if not dra_served():
        return []
    labels = {NODE_LABEL: "true"}
    call("POST", f"{RESOURCE}/deviceclasses", {
        "apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass",
        "metadata": {"name": DEVICE_CLASS, "labels": labels},
        "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DEVICE_DRIVER}"'}}]}})
    for name in GPU_NODES:
        call("POST", f"{RESOURCE}/resourceslices", {
            "apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice",
            "metadata": {"name": f"{name}-gpus", "labels": labels},
            "spec": {
                "driver": DEVICE_DRIVER,
                "nodeName": name,
                "pool": {"name": name, "generation": 1, "resourceSliceCount": 1},
                "devices": [{"name": "gpu-0", "capacity": {"memory": {"value": "80Gi"}}}],
            }})
    call("POST", CLAIM_TEMPLATES, {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
        "metadata": {"name": "one-gpu"},
        "spec": {"spec": {"devices": {"requests": [
            {"name": "gpu", "exactly": {"deviceClassName": DEVICE_CLASS}}]}}}})
    call("POST", SP_GROUPS, {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                             "metadata": {"name": GPU_GANG}, "spec": {"minMember": GPU_GANG_SIZE}})
    GANGS.append((GPU_GANG, "scheduling.x-k8s.io/v1alpha1", GPU_GANG_SIZE))
    pods = []
    for i in range(GPU_GANG_SIZE):
        p = gpu_pod(f"{GPU_GANG}-{i:03d}", "1", "2Gi")
        p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = GPU_GANG
        pods.append(p)
    pods += [gpu_pod(f"infer-{i:03d}", "500m", "1Gi") for i in range(INFER_PODS)]
    return pods


def claim_lines():
    """One line per claim: its pod, the node its allocation is for and the device it was given."""
    lines = []
    for c in sorted((call("GET", CLAIMS, ok_missing=True) or {}).get("items", []),
                    key=lambda c: c["metadata"]["name"]):
        owner = next((o["name"] for o in c["metadata"].get("ownerReferences", [])), "-")
        allocation = (c.get("status") or {}).get("allocation")
        if not allocation:
            lines.append(f"  {c['metadata']['name']:<22} pod {owner:<12} not allocated")
            continue
        node = "-"
        for term in allocation.get("nodeSelector", {}).get("nodeSelectorTerms", []):
            for field in term.get("matchFields", []):
                if field.get("key") == "metadata.name":
                    node = ",".join(field.get("values", []))
        devices = ", ".join(f"{r['driver']}/{r['pool']}/{r['device']}"
                            for r in allocation.get("devices", {}).get("results", []))
        reserved = ", ".join(r["name"] for r in c["status"].get("reservedFor", []))
        lines.append(f"  {c['metadata']['name']:<22} pod {owner:<12} node {node:<12} "
                     f"device {devices} (reserved for {reserved or 'nobody'})")
    return lines


GANGS = []  # (name, api, minimum), as make_gangs created them.


def make_gangs():
    """Two gangs: "train" (4 pods of 1 CPU, all required) fits and binds whole; "sweep" (8 pods of
    12 CPU, all required) never can: only the six 16-CPU nodes hold such a pod, so it binds none
    and says why. "train" uses upstream's PodGroup when the apiserver serves it."""
    install_podgroup_crd()
    upstream = served("scheduling.k8s.io/v1beta1", "podgroups")
    if upstream:
        call("POST", UP_GROUPS, {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
                                 "metadata": {"name": "train"},
                                 "spec": {"schedulingPolicy": {"gang": {"minCount": 4}}}})
        GANGS.append(("train", "scheduling.k8s.io/v1beta1", 4))
    else:
        call("POST", SP_GROUPS, {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                                 "metadata": {"name": "train"}, "spec": {"minMember": 4}})
        GANGS.append(("train", "scheduling.x-k8s.io/v1alpha1", 4))
    call("POST", SP_GROUPS, {"apiVersion": "scheduling.x-k8s.io/v1alpha1", "kind": "PodGroup",
                             "metadata": {"name": "sweep"}, "spec": {"minMember": 8}})
    GANGS.append(("sweep", "scheduling.x-k8s.io/v1alpha1", 8))
    gang_pods = []
    for i in range(4):
        p = pod(f"train-{i:03d}", "1", "1Gi")
        if upstream:
            p["spec"]["schedulingGroup"] = {"podGroupName": "train"}
        else:
            p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = "train"
        gang_pods.append(p)
    for i in range(8):
        p = pod(f"sweep-{i:03d}", "12", "1Gi")
        p["metadata"]["labels"]["scheduling.x-k8s.io/pod-group"] = "sweep"
        gang_pods.append(p)
    return gang_pods


def gang_state(name, api):
    """What the gang's object says: upstream's condition, or scheduler-plugins' phase."""
    path = UP_GROUPS if api.startswith("scheduling.k8s.io") else SP_GROUPS
    status = (call("GET", f"{path}/{name}", ok_missing=True) or {}).get("status", {})
    for c in status.get("conditions", []):
        if c.get("type") == "PodGroupInitiallyScheduled":
            return f"PodGroupInitiallyScheduled={c.get('status')} ({c.get('reason')})"
    return f"phase {status.get('phase', '(none yet)')}" if "phase" in status else "(no status yet)"


def list_pods():
    return call("GET", f"/api/v1/namespaces/{NAMESPACE}/pods")["items"]


def free_local_port():
    """A loopback port nothing listens on now, so demos of several checkouts do not collide."""
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


METRICS_PORT = free_local_port()
METRICS_ADDRESS = f"127.0.0.1:{METRICS_PORT}"


def scrape_metrics():
    """The lines of /metrics an operator looks at first."""
    import urllib.request
    try:
        with urllib.request.urlopen(f"http://{METRICS_ADDRESS}/metrics", timeout=5) as r:
            text = r.read().decode()
    except OSError as e:
        return [f"(metrics unavailable: {e})"]
    wanted = ("scheduler_schedule_attempts_total", "scheduler_pending_pods",
              "scheduler_unschedulable_pods")
    return [l for l in text.splitlines() if l.startswith(wanted)]


def gang_of(p):
    """The pod group a pod belongs to, as (API, name), or None. The two gang APIs are two name
    spaces, and neither shares one with pods."""
    group = (p["spec"].get("schedulingGroup") or {}).get("podGroupName")
    if group:
        return ("scheduling.k8s.io", group)
    label = p["metadata"].get("labels", {}).get("scheduling.x-k8s.io/pod-group")
    return ("scheduling.x-k8s.io", label) if label else None


def scheduled_condition(p):
    """The pod's PodScheduled condition, or {} before its first attempt."""
    return next((c for c in p.get("status", {}).get("conditions", []) if c["type"] == "PodScheduled"),
                {})


def explain_pending(binary, items):
    """(title, output) of berth-scheduler explain for every pod of ours left Pending and not gated
    (a gated pod has had no attempt to explain). A gang's pods are explained once, through one
    member: explain answers for the whole group, so the others would repeat it. That member is the
    one the gang's last rejection names as fitting no node, when there is one: the others' last
    attempt may have only met the gang's backoff."""
    pending = {}
    for p in items:
        if p["spec"].get("nodeName") or p["spec"]["schedulerName"] != "berth-scheduler":
            continue
        if p["spec"].get("schedulingGates"):
            continue
        gang = gang_of(p)
        pending.setdefault(gang or ("pod", p["metadata"]["name"]), []).append(p)
    out = []
    for key, members in pending.items():
        name = members[0]["metadata"]["name"]
        for p in members:
            message = scheduled_condition(p).get("message") or ""
            if f'pod "{p["metadata"]["name"]}" fits no node' in message:
                name = p["metadata"]["name"]
                break
        run = subprocess.run(
            [binary, "explain", f"{NAMESPACE}/{name}", "--server", f"http://{METRICS_ADDRESS}"],
            capture_output=True, text=True, timeout=60)
        title = f"{NAMESPACE}/{name}"
        if gang_of(members[0]):
            title += f"   # pod group {key[1]}: the answer for all {len(members)} of its Pending pods"
        out.append((title, run.stdout if run.returncode == 0 else run.stderr))
    return out


def main():
    binary = os.path.join(REPO, "_output", "bin", "berth-scheduler")
    print("== Berth demo: 22 simulated nodes, 239 pods ==")
    clean_previous_run()
    nodes = make_nodes()
    print(f"registered {len(nodes)} nodes in 3 zones ({GPU_NODES[0]}..{GPU_NODES[-1][-2:]} tainted "
          "dedicated=gpu:NoSchedule, demo-cordoned-00 cordoned)")
    pods = make_pods()
    ours = [p for p in pods if p["spec"]["schedulerName"] == "berth-scheduler"]
    print(f"submitted {len(ours)} pods for berth-scheduler and {len(pods) - len(ours)} for default-scheduler")
    dra = [p for p in pods if p["spec"].get("resourceClaims")]
    if dra:
        print(f"published {len(GPU_NODES)} GPUs, one per GPU node (a ResourceSlice each, driver "
              f"{DEVICE_DRIVER}, DeviceClass {DEVICE_CLASS}); {len(dra)} pods claim one each from "
              f"ResourceClaimTemplate one-gpu: gang {GPU_GANG} ({GPU_GANG_SIZE} required) and "
              f"{INFER_PODS} single pod")

    log_dir = os.path.join(REPO, "_output", "demo")
    os.makedirs(log_dir, exist_ok=True)
    config = os.path.join(log_dir, "config.yaml")
    with open(config, "w") as f:
        f.write(
            "apiVersion: kubescheduler.config.k8s.io/v1\n"
            "kind: KubeSchedulerConfiguration\n"
            "leaderElection:\n  leaderElect: false\n"
            "profiles:\n- schedulerName: berth-scheduler\n"
        )
    log_path = os.path.join(log_dir, "berth-scheduler.log")
    print(f"starting berth-scheduler (log: {os.path.relpath(log_path, REPO)})")
    with open(log_path, "w") as log:
        proc = subprocess.Popen(
            [binary, "--kubeconfig", os.path.join(CLUSTER, "kubeconfig"), "--config", config, "--v", "2",
             # Plain HTTP on loopback only, so the table below can read /metrics without a
             # token; a deployment serves the secure port instead (see README, Operate).
             "--secure-port", "0", "--port", str(METRICS_PORT), "--address", "127.0.0.1"],
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    start = time.time()
    try:
        last, stalled = -1, 0
        while True:
            time.sleep(0.5)
            items = list_pods()
            bound = sum(1 for p in items if p["spec"].get("nodeName") and p["spec"]["schedulerName"] == "berth-scheduler")
            print(f"\r  {time.time() - start:5.1f}s  bound {bound}/{len(ours)}", end="", flush=True)
            if proc.poll() is not None:
                print()
                sys.exit(f"demo: berth-scheduler exited with {proc.returncode}; see {log_path}")
            stalled = stalled + 1 if bound == last else 0
            last = bound
            if (stalled >= 6 and bound > 0) or time.time() - start > 120:
                break
        print()
        time.sleep(1)  # Let the last conditions land.
        items = list_pods()
        claims = claim_lines() if dra else []
        metrics = scrape_metrics()
        explanations = explain_pending(binary, items)
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
        # The class and the slices are cluster-wide: leave no devices behind for other workloads.
        # The pods and their claims stay in the namespace, to look at, until the next run.
        if dra:
            for plural in ("resourceslices", "deviceclasses"):
                call("DELETE", f"{RESOURCE}/{plural}?labelSelector={NODE_LABEL}%3Dtrue",
                     ok_missing=True)

    by_node = {}
    for p in items:
        n = p["spec"].get("nodeName")
        if n:
            by_node.setdefault(n, []).append(p)
    print()
    print(f"{'NODE':<18} {'ZONE':<8} {'CPU':>5} {'PODS':>5} {'CPU REQUESTED':>14}")
    for n in nodes:
        name = n["metadata"]["name"]
        on = by_node.get(name, [])
        milli = 0
        for p in on:
            c = p["spec"]["containers"][0]["resources"]["requests"]["cpu"]
            milli += int(c[:-1]) if c.endswith("m") else int(float(c) * 1000)
        note = " (tainted)" if n["spec"]["taints"] else " (cordoned)" if n["spec"]["unschedulable"] else ""
        print(f"{name:<18} {n['metadata']['labels']['topology.kubernetes.io/zone']:<8} "
              f"{n['status']['allocatable']['cpu']:>5} {len(on):>5} {milli:>13}m{note}")

    zone_of = {n["metadata"]["name"]: n["metadata"]["labels"]["topology.kubernetes.io/zone"] for n in nodes}

    def group(app):
        return [p for p in items if p["metadata"]["labels"].get("app") == app]

    replicas = [p["spec"]["nodeName"] for p in group("replica") if p["spec"].get("nodeName")]
    print()
    print(f"replica (required anti-affinity per node, zone-c only): {len(replicas)} bound on "
          f"{len(set(replicas))} distinct nodes, {len(group('replica')) - len(replicas)} Pending")
    spread = {}
    for p in group("spread"):
        if p["spec"].get("nodeName"):
            zone = zone_of[p["spec"]["nodeName"]]
            spread[zone] = spread.get(zone, 0) + 1
    print("spread (zones differ by at most 1): " +
          ", ".join(f"{z} {spread.get(z, 0)}" for z in ("zone-a", "zone-b", "zone-c")))
    for name, api, minimum in GANGS:
        members = group(name)
        bound = sum(1 for p in members if p["spec"].get("nodeName"))
        print(f"gang {name} ({api} PodGroup, {minimum} required): {bound}/{len(members)} bound, "
              f"{gang_state(name, api)}")
    if dra:
        gang = group(GPU_GANG)
        infer = group("infer")
        held = sum(1 for line in claims if " device " in line)
        gang_held = sum(1 for line in claims if f" pod {GPU_GANG}-" in line and " device " in line)
        print(f"GPUs ({len(GPU_NODES)}, one per GPU node): gang {GPU_GANG} needs {GPU_GANG_SIZE}, "
              f"{sum(1 for p in gang if p['spec'].get('nodeName'))}/{len(gang)} bound (all or "
              f"nothing), {gang_held} GPU(s) held by its claims; infer "
              f"{sum(1 for p in infer if p['spec'].get('nodeName'))}/{len(infer)} bound; "
              f"{len(GPU_NODES) - held} GPU(s) free. The ResourceClaims:")
        for line in claims:
            print(line)

    pending = [p for p in items if not p["spec"].get("nodeName") and p["spec"]["schedulerName"] == "berth-scheduler"]
    print()
    print(f"unschedulable pods ({len(pending)}):")
    for p in pending:
        reason = "(no condition yet)"
        for c in p.get("status", {}).get("conditions", []):
            if c["type"] == "PodScheduled":
                reason = f"{c.get('reason')}: {c.get('message')}"
        if p["spec"].get("schedulingGates"):
            reason = "gated by schedulingGates " + ", ".join(g["name"] for g in p["spec"]["schedulingGates"])
        print(f"  {p['metadata']['name']:<20} {reason}")
    foreign = [p for p in items if p["spec"]["schedulerName"] == "default-scheduler"]
    untouched = all(not p["spec"].get("nodeName") for p in foreign)
    print()
    print(f"default-scheduler pods: {len(foreign)}, untouched by berth-scheduler: {'yes' if untouched else 'NO'}")
    print()
    print(f"from http://{METRICS_ADDRESS}/metrics (what Prometheus scrapes from the secure port):")
    for line in metrics:
        print(f"  {line}")
    bound_total = sum(len(v) for v in by_node.values())
    print(f"bound {bound_total}/{len(ours)} berth-scheduler pods in {time.time() - start:.1f}s")
    print()
    print(f"== why each pod is still Pending: berth-scheduler explain "
          f"(--server http://{METRICS_ADDRESS}, the insecure loopback port of this demo) ==")
    for title, output in explanations:
        print()
        print(f"$ berth-scheduler explain {title}")
        print(output.rstrip())
    if not untouched:
        sys.exit(1)


if __name__ == "__main__":
    main()
