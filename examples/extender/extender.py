#!/usr/bin/env python3
"""An example kube-scheduler extender for Berth (and kube-scheduler): filter and prioritize by
node labels. Standard library only. docs/extending.md, "Extenders", walks through running it.

  filter      nodes labelled example.berth.dev/drain=true are rejected as unresolvable
              (preemption cannot make room there); every other node passes.
  prioritize  a node's score is its example.berth.dev/score label, 0..10 (missing or not a
              number: 0); the scheduler multiplies it by the extender's weight and by 10.

Both forms of the protocol are served:
  nodeCacheCapable: false  the request carries the Node objects (`Nodes`); the labels are read
                           from them and the answer returns the kept objects.
  nodeCacheCapable: true   the request carries node names only (`NodeNames`); the labels come
                           from this process's own cache of the nodes (--kubeconfig, or the
                           pod's service account), and the answer returns the kept names.

Usage: extender.py [--address 127.0.0.1] [--port 9680] [--kubeconfig FILE]
                   [--cert-file FILE --key-file FILE [--client-ca-file FILE]]
"""

import argparse
import json
import os
import ssl
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "common"))
import kube  # noqa: E402  (the examples' shared helper, found through the path above)

DRAIN_LABEL = "example.berth.dev/drain"
SCORE_LABEL = "example.berth.dev/score"
MAX_SCORE = 10  # kube-scheduler's MaxExtenderPriority: extender scores run 0..10.
MAX_BODY = 64 << 20

NODE_CACHE = None  # A kube.NodeCache when the names form can be served.
LOG_LOCK = threading.Lock()


def log(message):
    with LOG_LOCK:
        print(message, file=sys.stderr, flush=True)


def pod_key(pod):
    meta = (pod or {}).get("metadata") or {}
    return f"{meta.get('namespace', '')}/{meta.get('name', '')}"


def candidates(args):
    """[(name, labels, node object or None)] of the nodes in an ExtenderArgs, in either form.

    A name the cache does not know yet has labels None.
    """
    if args.get("NodeNames") is not None:
        if NODE_CACHE is None:
            raise LookupError("this extender got node names (nodeCacheCapable: true) but was "
                              "started without a node cache (--kubeconfig)")
        return [(name, NODE_CACHE.labels(name), None) for name in args["NodeNames"]]
    items = (args.get("Nodes") or {}).get("items") or []
    return [(n["metadata"]["name"], n["metadata"].get("labels") or {}, n) for n in items]


def filter_nodes(args):
    """An ExtenderFilterResult: the kept nodes in the form they came in, and why others were not."""
    by_names = args.get("NodeNames") is not None
    kept, failed, unresolvable = [], {}, {}
    for name, labels, node in candidates(args):
        if labels is None:
            # Created a moment ago and not in the cache yet: a retry will know it.
            failed[name] = "the extender does not know this node yet"
        elif labels.get(DRAIN_LABEL) == "true":
            unresolvable[name] = f"node is being drained ({DRAIN_LABEL}=true)"
        else:
            kept.append(name if by_names else node)
    log(f"filter {pod_key(args.get('Pod'))} ({'NodeNames' if by_names else 'Nodes'}): "
        f"kept {len(kept)}, rejected "
        f"{sorted(failed) + sorted(unresolvable) or 'none'}")
    result = {"FailedNodes": failed, "FailedAndUnresolvableNodes": unresolvable, "Error": ""}
    if by_names:
        result["NodeNames"] = kept
    else:
        result["Nodes"] = {"metadata": {}, "items": kept}
    return result


def prioritize(args):
    """A HostPriorityList: one {Host, Score} per node, Score in 0..MAX_SCORE."""
    scores = []
    for name, labels, _ in candidates(args):
        try:
            score = int((labels or {}).get(SCORE_LABEL, "0"))
        except ValueError:
            score = 0
        scores.append({"Host": name, "Score": max(0, min(MAX_SCORE, score))})
    form = "NodeNames" if args.get("NodeNames") is not None else "Nodes"
    log(f"prioritize {pod_key(args.get('Pod'))} ({form}): "
        + ", ".join(f"{s['Host']}={s['Score']}" for s in scores))
    return scores


class Handler(BaseHTTPRequestHandler):
    # HTTP/1.1 keeps connections open between calls, as the scheduler's client expects.
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        verb = self.path.rstrip("/").rsplit("/", 1)[-1]
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY:
            self.close_connection = True  # The body stays unread.
            return self.answer(413, {"Error": "request too large"})
        try:
            args = json.loads(self.rfile.read(length))
        except ValueError as e:
            return self.answer(400, {"Error": f"not JSON: {e}"})
        if verb == "filter":
            try:
                return self.answer(200, filter_nodes(args))
            except LookupError as e:
                # Error fails the pod's scheduling cycle; the scheduler shows the text verbatim.
                return self.answer(200, {"Error": str(e)})
        if verb == "prioritize":
            try:
                return self.answer(200, prioritize(args))
            except LookupError as e:
                # A HostPriorityList has no error field: a non-200 status is how to fail.
                log(f"prioritize: {e}")
                return self.answer(500, {"Error": str(e)})
        return self.answer(404, {"Error": f"unknown verb {verb!r}"})

    def answer(self, status, body):
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format, *args):
        pass  # One line per call is logged by the verbs themselves.


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--address", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9680)
    parser.add_argument("--kubeconfig", help="serve nodeCacheCapable requests from a node cache "
                        "built with these credentials (default in a pod: its service account)")
    parser.add_argument("--cert-file", help="serve HTTPS with this certificate chain (PEM)")
    parser.add_argument("--key-file", help="...and this key (PEM)")
    parser.add_argument("--client-ca-file",
                        help="require a client certificate signed by these CAs (PEM)")
    opts = parser.parse_args()

    global NODE_CACHE
    if opts.kubeconfig or os.path.exists(os.path.join(kube.IN_CLUSTER_DIR, "token")):
        NODE_CACHE = kube.NodeCache(kube.load_credentials(opts.kubeconfig))
        if not NODE_CACHE.wait_synced(30):
            raise SystemExit("the node cache did not fill within 30s")

    server = ThreadingHTTPServer((opts.address, opts.port), Handler)
    scheme = "http"
    if opts.cert_file:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(opts.cert_file, opts.key_file)
        if opts.client_ca_file:
            context.load_verify_locations(opts.client_ca_file)
            context.verify_mode = ssl.CERT_REQUIRED
        server.socket = context.wrap_socket(server.socket, server_side=True)
        scheme = "https"
    log(f"extender serving {scheme}://{opts.address}:{server.server_address[1]}/filter and "
        f"/prioritize (node cache: {'on' if NODE_CACHE else 'off'})")
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass


if __name__ == "__main__":
    main()
