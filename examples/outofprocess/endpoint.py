#!/usr/bin/env python3
"""An example endpoint for Berth's OutOfProcess plugin (schema outofprocess.berth.dev/v1alpha1):
a node-label Filter and a gang-like Permit. Standard library only. docs/extending.md,
"Out-of-process plugins", has the schema; "Example: a Filter and Permit endpoint" runs this.

  filter         nodes labelled example.berth.dev/drain=true are rejected as unresolvable.
                 Requests name the nodes only, so their labels come from this process's own
                 cache of the nodes (--kubeconfig, or the pod's service account).
  reserve        nothing to do; served so that `unreserve` tells this endpoint when a pod's
                 placement is undone.
  unreserve      the pod no longer counts as arrived.
  permit         a pod labelled example.berth.dev/group=<name> and
                 example.berth.dev/group-size=<n> waits until n pods of its group (same
                 namespace) have reached Permit; then every one of them is allowed. Other pods
                 are allowed at once.
  permit-status  asked while a pod waits: allow once its group is complete, else wait.

Usage: endpoint.py [--address 127.0.0.1] [--port 9681] [--kubeconfig FILE] [--wait 60s]
"""

import argparse
import json
import os
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import kube  # noqa: E402  (the examples' shared helper, found through the path above)

API_VERSION = "outofprocess.berth.dev/v1alpha1"
DRAIN_LABEL = "example.berth.dev/drain"
GROUP_LABEL = "example.berth.dev/group"
GROUP_SIZE_LABEL = "example.berth.dev/group-size"
MAX_BODY = 16 << 20

NODE_CACHE = None
WAIT = "60s"  # How long a pod may wait for its group; Berth cuts it to the endpoint's maxWait.
LOCK = threading.Lock()
ARRIVED = {}  # (namespace, group) -> {pod uid: pod name}. Guarded by LOCK.


def log(message):
    print(message, file=sys.stderr, flush=True)


def pod_meta(request):
    return (request.get("pod") or {}).get("metadata") or {}


def pod_key(request):
    meta = pod_meta(request)
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def group_of(request):
    """((namespace, group), size) of the request's pod, or (None, 0) outside a group."""
    meta = pod_meta(request)
    labels = meta.get("labels") or {}
    if GROUP_LABEL not in labels:
        return None, 0
    try:
        size = int(labels.get(GROUP_SIZE_LABEL, ""))
    except ValueError:
        raise ValueError(f"pod {pod_key(request)}: label {GROUP_SIZE_LABEL} must be a number")
    return (meta.get("namespace", ""), labels[GROUP_LABEL]), size


def on_filter(request):
    failed, unresolvable = {}, {}
    for name in request.get("nodes") or []:
        labels = NODE_CACHE.labels(name)
        if labels is None:
            # Created a moment ago and not in the cache yet: a retry will know it.
            failed[name] = "the endpoint does not know this node yet"
        elif labels.get(DRAIN_LABEL) == "true":
            unresolvable[name] = f"node is being drained ({DRAIN_LABEL}=true)"
    dry = " (dry run)" if request.get("dryRun") else ""
    log(f"filter{dry} {pod_key(request)}: rejected {sorted(failed) + sorted(unresolvable)}")
    return {"failedNodes": failed, "failedAndUnresolvableNodes": unresolvable}


def on_permit(request, polled):
    group, size = group_of(request)
    if group is None:
        return {"decision": "allow"}
    uid = pod_meta(request).get("uid", "")
    with LOCK:
        members = ARRIVED.setdefault(group, {})
        # permit-status counts as arriving too, so a restarted endpoint learns its waiting pods.
        members[uid] = pod_meta(request).get("name", "")
        arrived = len(members)
    verb = "permit-status" if polled else "permit"
    if arrived >= size:
        log(f"{verb} {pod_key(request)}: group {group[1]} has {arrived}/{size}: allow")
        return {"decision": "allow"}
    if not polled:
        log(f"{verb} {pod_key(request)} on {request.get('node')}: group {group[1]} has "
            f"{arrived}/{size}: wait")
    answer = {"decision": "wait", "reason": f"{arrived} of {size} pods of group {group[1]} here"}
    if not polled:
        answer["timeout"] = WAIT
    return answer


def on_unreserve(request):
    group, _ = group_of(request)
    if group is not None:
        with LOCK:
            members = ARRIVED.get(group, {})
            members.pop(pod_meta(request).get("uid", ""), None)
            if not members:
                ARRIVED.pop(group, None)
        log(f"unreserve {pod_key(request)}: no longer counted in group {group[1]}")
    return {}


VERBS = {
    "filter": on_filter,
    "reserve": lambda request: {},
    "unreserve": on_unreserve,
    "permit": lambda request: on_permit(request, polled=False),
    "permit-status": lambda request: on_permit(request, polled=True),
}


class Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 keeps connections open between calls, as the scheduler's client expects.
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        verb = self.path.rstrip("/").rsplit("/", 1)[-1]
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self.close_connection = True  # The body stays unread.
            return self.answer(413, {"error": "request too large"})
        body = self.rfile.read(length)
        if verb not in VERBS:
            return self.answer(404, {"error": f"this endpoint does not serve {verb!r}"})
        try:
            request = json.loads(body)
            if request.get("apiVersion") != API_VERSION:
                raise ValueError(f"unsupported apiVersion {request.get('apiVersion')!r}")
            answer = VERBS[verb](request)
        except ValueError as e:
            # "error" fails the call; Berth puts the text in the pod's message.
            return self.answer(200, {"apiVersion": API_VERSION, "error": str(e)})
        answer["apiVersion"] = API_VERSION
        self.answer(200, answer)

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format, *args):
        pass  # The verbs log what they decided.


def main():
    global NODE_CACHE, WAIT
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--address", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9681)
    parser.add_argument("--kubeconfig", help="credentials for the node cache (default in a pod: "
                        "its service account)")
    parser.add_argument("--wait", default=WAIT,
                        help="how long a pod waits for its group, a Go duration (default 60s)")
    opts = parser.parse_args()

    WAIT = opts.wait
    NODE_CACHE = kube.NodeCache(kube.load_credentials(opts.kubeconfig))
    if not NODE_CACHE.wait_synced(30):
        raise SystemExit("the node cache did not fill within 30s")
    server = ThreadingHTTPServer((opts.address, opts.port), Handler)
    log(f"endpoint serving http://{opts.address}:{server.server_address[1]}/"
        f"{{{','.join(VERBS)}}}")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
