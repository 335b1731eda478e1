"""What the examples need of the Kubernetes API: credentials and a cache of the nodes' labels.

Standard library only. Credentials come from a kubeconfig with one cluster and one user (the
local cluster's `_output/cluster/kubeconfig` is one; make one from yours with
`kubectl config view --minify --flatten > one.kubeconfig`) or, without one, from the pod's
service account. The NodeCache lists the nodes once and then watches them, so it needs get, list
and watch on nodes.

Why a cache at all: an extender with nodeCacheCapable and every out-of-process endpoint receive
node *names* only; what they decide by (here a node's labels) they must know already.
"""

import base64
import json
import os
import re
import ssl
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.parse
import urllib.request

IN_CLUSTER_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


class Credentials:
    """The apiserver's URL, an SSL context trusting it, and the headers that authenticate us."""

    def __init__(self, server, context, token=None, token_path=None):
        self.server = server.rstrip("/")
        self.context = context
        self._token = token
        self._token_path = token_path

    def headers(self):
        token = self._token
        if self._token_path:
            # A projected service account token is rotated in place: read it for each request.
            with open(self._token_path) as f:
                token = f.read().strip()
        return {"Authorization": "Bearer " + token} if token else {}


def _kubeconfig_values(path):
    """The scalar values of a one-context kubeconfig, by key (`server`, `client-key-data`, ...).

    A line-based reader, enough for the flat files `kubectl config view --minify --flatten`
    writes; refuses a file with several clusters or users rather than guessing.
    """
    values = {}
    with open(path) as f:
        for line in f:
            match = re.match(r"^\s*-?\s*([a-z-]+):\s*(.*?)\s*$", line)
            if not match or not match.group(2):
                continue
            key, value = match.group(1), match.group(2).strip("\"'")
            if key in values and key in ("server", "client-certificate-data", "client-key-data",
                                         "token"):
                raise SystemExit(f"{path}: more than one `{key}`; pass a one-context kubeconfig "
                                 "(kubectl config view --minify --flatten)")
            values[key] = value
    return values


def _material(values, key, base_dir):
    """PEM bytes from `<key>-data` (base64) or the file `<key>` names, else None."""
    if key + "-data" in values:
        return base64.b64decode(values[key + "-data"])
    if key in values:
        path = values[key]
        if not os.path.isabs(path):
            path = os.path.join(base_dir, path)
        with open(path, "rb") as f:
            return f.read()
    return None


def load_credentials(kubeconfig=None):
    """Credentials from `kubeconfig`, else from the pod's service account."""
    if not kubeconfig:
        token_path = os.path.join(IN_CLUSTER_DIR, "token")
        host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get(
            "KUBERNETES_SERVICE_PORT")
        if not (host and port and os.path.exists(token_path)):
            raise SystemExit("no --kubeconfig given and not running in a pod")
        context = ssl.create_default_context(cafile=os.path.join(IN_CLUSTER_DIR, "ca.crt"))
        if ":" in host:
            host = f"[{host}]"
        return Credentials(f"https://{host}:{port}", context, token_path=token_path)

    values = _kubeconfig_values(kubeconfig)
    base_dir = os.path.dirname(os.path.abspath(kubeconfig))
    if "server" not in values:
        raise SystemExit(f"{kubeconfig}: no cluster server")
    ca = _material(values, "certificate-authority", base_dir)
    context = ssl.create_default_context(cadata=ca.decode() if ca else None)
    if values.get("insecure-skip-tls-verify") == "true":
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
    cert = _material(values, "client-certificate", base_dir)
    key = _material(values, "client-key", base_dir)
    if cert and key:
        # load_cert_chain reads files only: write them private and remove them at once.
        with tempfile.TemporaryDirectory() as tmp:
            cert_path, key_path = os.path.join(tmp, "tls.crt"), os.path.join(tmp, "tls.key")
            for path, data in ((cert_path, cert), (key_path, key)):
                fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
            context.load_cert_chain(cert_path, key_path)
    return Credentials(values["server"], context, token=values.get("token"))


class NodeCache:
    """Every node's labels, kept current by a list and a watch on a background thread.

    labels() may be called from any thread. A node the cache has not seen yet (created a moment
    ago) is None: callers decide what an unknown node means.
    """

    def __init__(self, credentials):
        self._credentials = credentials
        self._lock = threading.Lock()
        self._labels = {}  # Guarded by _lock.
        self._synced = threading.Event()
        threading.Thread(target=self._run, name="node-cache", daemon=True).start()

    def labels(self, name):
        with self._lock:
            return self._labels.get(name)

    def wait_synced(self, timeout):
        """True once the first list arrived."""
        return self._synced.wait(timeout)

    def _open(self, path, timeout):
        request = urllib.request.Request(self._credentials.server + path,
                                         headers=self._credentials.headers())
        return urllib.request.urlopen(request, context=self._credentials.context,
                                      timeout=timeout)

    def _run(self):
        while True:
            try:
                self._list_and_watch()
            except (OSError, urllib.error.URLError, ValueError) as e:
                print(f"node cache: {e}; listing again in 1s", file=sys.stderr, flush=True)
                time.sleep(1)

    def _list_and_watch(self):
        with self._open("/api/v1/nodes", 30) as response:
            listing = json.load(response)
        with self._lock:
            self._labels = {n["metadata"]["name"]: n["metadata"].get("labels") or {}
                            for n in listing.get("items") or []}
        self._synced.set()
        version = listing["metadata"]["resourceVersion"]
        while True:
            query = urllib.parse.urlencode({"watch": "1", "resourceVersion": version,
                                            "allowWatchBookmarks": "true",
                                            "timeoutSeconds": "300"})
            # The read timeout only has to outlast the bookmarks the apiserver sends about once
            # a minute.
            with self._open("/api/v1/nodes?" + query, 120) as stream:
                for line in stream:
                    event = json.loads(line)
                    kind, node = event.get("type"), event.get("object") or {}
                    if kind == "ERROR":
                        # Usually 410 Gone: the version is too old to watch from. List again.
                        raise ValueError(f"watch ended: {node.get('message', node)}")
                    meta = node.get("metadata") or {}
                    version = meta.get("resourceVersion", version)
                    with self._lock:
                        if kind in ("ADDED", "MODIFIED"):
                            self._labels[meta["name"]] = meta.get("labels") or {}
                        elif kind == "DELETED":
                            self._labels.pop(meta["name"], None)
