#!/usr/bin/env python3
"""Smoke test of the examples (CTest `examples_smoke`): each server, started on a loopback port
with a node cache of fixed labels, answers a scheduler's requests as docs/extending.md says.
No cluster needed. Standard library only."""

import json
import os
import sys
import tempfile
import threading
import unittest
import urllib.error
import urllib.request
from http.server import ThreadingHTTPServer

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "common"), os.path.join(HERE, "extender"),
                os.path.join(HERE, "outofprocess")]
import endpoint  # noqa: E402
import extender  # noqa: E402
import kube  # noqa: E402


class FixedNodes:
    """A NodeCache stand-in: these labels, no apiserver."""

    def __init__(self, labels):
        self._labels = labels

    def labels(self, name):
        return self._labels.get(name)


LABELS = {
    "a": {"example.berth.dev/score": "3"},
    "b": {"example.berth.dev/score": "99"},
    "c": {"example.berth.dev/drain": "true", "example.berth.dev/score": "x"},
}


def node(name):
    return {"metadata": {"name": name, "labels": LABELS[name]}}


def pod(name, uid, labels=None):
    return {"metadata": {"name": name, "namespace": "ns", "uid": uid, "labels": labels or {}}}


class Server:
    def __init__(self, handler):
        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"

    def post(self, verb, body):
        request = urllib.request.Request(f"{self.url}/{verb}", data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return response.status, json.load(response)
        except urllib.error.HTTPError as e:
            return e.code, json.load(e)

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


class ExtenderTest(unittest.TestCase):
    def setUp(self):
        extender.NODE_CACHE = FixedNodes(LABELS)
        self.server = Server(extender.Handler)

    def tearDown(self):
        self.server.close()

    def test_filter_with_node_objects_returns_the_kept_objects(self):
        status, result = self.server.post("filter", {
            "Pod": pod("p", "u"), "Nodes": {"items": [node("a"), node("b"), node("c")]},
            "NodeNames": None})
        self.assertEqual(status, 200)
        self.assertEqual([n["metadata"]["name"] for n in result["Nodes"]["items"]], ["a", "b"])
        self.assertNotIn("NodeNames", result)
        self.assertEqual(result["FailedAndUnresolvableNodes"],
                         {"c": "node is being drained (example.berth.dev/drain=true)"})
        self.assertEqual(result["FailedNodes"], {})

    def test_filter_with_node_names_answers_from_the_cache(self):
        status, result = self.server.post("filter", {
            "Pod": pod("p", "u"), "Nodes": None, "NodeNames": ["a", "c", "new"]})
        self.assertEqual(status, 200)
        self.assertEqual(result["NodeNames"], ["a"])
        self.assertNotIn("Nodes", result)
        self.assertEqual(list(result["FailedAndUnresolvableNodes"]), ["c"])
        self.assertEqual(list(result["FailedNodes"]), ["new"])

    def test_node_names_without_a_cache_is_an_error_the_pod_shows(self):
        extender.NODE_CACHE = None
        status, result = self.server.post("filter", {"Pod": pod("p", "u"), "NodeNames": ["a"]})
        self.assertEqual(status, 200)
        self.assertIn("--kubeconfig", result["Error"])
        status, _ = self.server.post("prioritize", {"Pod": pod("p", "u"), "NodeNames": ["a"]})
        self.assertEqual(status, 500)

    def test_prioritize_reads_the_label_clamped_to_0_10_in_both_forms(self):
        expected = [{"Host": "a", "Score": 3}, {"Host": "b", "Score": 10},
                    {"Host": "c", "Score": 0}]
        status, scores = self.server.post("prioritize", {
            "Pod": pod("p", "u"), "Nodes": {"items": [node("a"), node("b"), node("c")]}})
        self.assertEqual((status, scores), (200, expected))
        status, scores = self.server.post("prioritize", {
            "Pod": pod("p", "u"), "NodeNames": ["a", "b", "c"]})
        self.assertEqual((status, scores), (200, expected))

    def test_unknown_verb_is_404(self):
        self.assertEqual(self.server.post("preempt", {})[0], 404)


class EndpointTest(unittest.TestCase):
    def setUp(self):
        endpoint.NODE_CACHE = FixedNodes(LABELS)
        endpoint.ARRIVED.clear()
        self.server = Server(endpoint.Handler)

    def tearDown(self):
        self.server.close()

    def request(self, verb, the_pod, **fields):
        body = {"apiVersion": endpoint.API_VERSION, "kind": "Request", "verb": verb,
                "endpoint": "example", "profile": "p", "pod": the_pod, **fields}
        status, answer = self.server.post(verb, body)
        self.assertEqual(status, 200)
        self.assertEqual(answer.pop("apiVersion"), endpoint.API_VERSION)
        return answer

    def test_filter_rejects_drained_and_unknown_nodes(self):
        answer = self.request("filter", pod("p", "u"), nodes=["a", "c", "new"], dryRun=True)
        self.assertEqual(answer, {
            "failedNodes": {"new": "the endpoint does not know this node yet"},
            "failedAndUnresolvableNodes": {
                "c": "node is being drained (example.berth.dev/drain=true)"}})

    def test_permit_waits_for_the_group_and_unreserve_takes_a_pod_out(self):
        group = {"example.berth.dev/group": "g", "example.berth.dev/group-size": "2"}
        first, second = pod("p0", "u0", group), pod("p1", "u1", group)
        self.assertEqual(self.request("permit", pod("alone", "u9"), node="a"),
                         {"decision": "allow"})
        answer = self.request("permit", first, node="a")
        self.assertEqual((answer["decision"], answer["timeout"]), ("wait", "60s"))
        self.assertEqual(self.request("permit-status", first, node="a")["decision"], "wait")
        # The first pod's wait ran out: it no longer counts.
        self.assertEqual(self.request("unreserve", first, node="a"), {})
        self.assertEqual(self.request("permit", second, node="b")["decision"], "wait")
        self.assertEqual(self.request("permit", first, node="a"), {"decision": "allow"})
        self.assertEqual(self.request("permit-status", second, node="b"), {"decision": "allow"})

    def test_a_bad_group_size_is_an_error_the_pod_shows(self):
        bad = pod("p", "u", {"example.berth.dev/group": "g",
                             "example.berth.dev/group-size": "many"})
        answer = self.request("permit", bad, node="a")
        self.assertIn("group-size must be a number", answer["error"])

    def test_other_schema_versions_are_refused(self):
        status, answer = self.server.post("filter", {"apiVersion": "v0", "nodes": []})
        self.assertEqual(status, 200)
        self.assertIn("unsupported apiVersion", answer["error"])


class KubeconfigTest(unittest.TestCase):
    def test_one_context_kubeconfig_values(self):
        text = ("apiVersion: v1\nclusters:\n- name: c\n  cluster:\n"
                "    server: https://127.0.0.1:6443\n    certificate-authority-data: Q0E=\n"
                "users:\n- name: u\n  user:\n    token: \"abc\"\n")
        with tempfile.NamedTemporaryFile("w", suffix=".kubeconfig") as f:
            f.write(text)
            f.flush()
            values = kube._kubeconfig_values(f.name)
            self.assertEqual(values["server"], "https://127.0.0.1:6443")
            self.assertEqual(kube._material(values, "certificate-authority", "/"), b"CA")
            self.assertEqual(values["token"], "abc")

    def test_several_clusters_are_refused(self):
        text = "clusters:\n- cluster:\n    server: https://a\n- cluster:\n    server: https://b\n"
        with tempfile.NamedTemporaryFile("w", suffix=".kubeconfig") as f:
            f.write(text)
            f.flush()
            with self.assertRaises(SystemExit):
                kube._kubeconfig_values(f.name)


if __name__ == "__main__":
    unittest.main()
