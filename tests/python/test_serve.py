"""`gpusched serve`, the Kubernetes scheduler extender, over real HTTP on loopback.

A server process (``python -m gpusched serve``) on the snapshot in tests/data/kubernetes; a client
(the standard library's urllib and raw sockets) replays the snapshot's pending pods through
kube-scheduler's extender calls (filter -> prioritize -> bind) and checks the placements against
``gpusched.whatif`` with the same profile, then sends the bad requests a server meets: malformed
JSON, an oversized body, a client too slow to finish its request, garbage instead of HTTP, an
unknown path, many connections at once. The server answers each and keeps serving.
"""

from __future__ import annotations

import json
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

import pytest

import gpusched

SNAPSHOT = Path(__file__).resolve().parents[1] / "data" / "kubernetes"
NODES = ["gpu-a100-0", "gpu-t4-0", "cpu-0", "mig-a100-0"]


class Server:
    def __init__(self, proc: subprocess.Popen, port: int):
        self.proc = proc
        self.port = port

    def request(self, method: str, path: str, body: Any = None, raw: bytes = None) -> Tuple[int, Any]:
        data = raw if raw is not None else (None if body is None else json.dumps(body).encode())
        req = urllib.request.Request(f"http://127.0.0.1:{self.port}{path}", data=data, method=method,
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                status, text = r.status, r.read().decode()
        except urllib.error.HTTPError as e:
            status, text = e.code, e.read().decode()
        try:
            return status, json.loads(text)
        except json.JSONDecodeError:
            return status, text

    def raw(self, payload: bytes, pause: float = 0.0, rest: bytes = b"") -> bytes:
        """Sends `payload` on a fresh connection (then `rest` after `pause` seconds); returns all it hears."""
        with socket.create_connection(("127.0.0.1", self.port), timeout=30) as s:
            s.sendall(payload)
            if pause:
                time.sleep(pause)
                try:
                    s.sendall(rest)
                except OSError:
                    pass
            chunks = []
            while True:
                try:
                    b = s.recv(65536)
                except OSError:
                    break
                if not b:
                    break
                chunks.append(b)
            return b"".join(chunks)


def start(profile: str, *extra: str) -> Server:
    proc = subprocess.Popen([sys.executable, "-m", "gpusched", "serve", "--profile", profile, "--nodes", str(SNAPSHOT / "nodes.json"),
                             "--pods", str(SNAPSHOT / "pods.json"), "--listen", "127.0.0.1:0", *extra],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = proc.stdout.readline()
    m = re.search(r"listening on 127\.0\.0\.1:(\d+) \(profile (\S+), 4 nodes, 4 pods bound(?:, binding through \S+)?\)", line)
    if m is None:
        proc.kill()
        raise AssertionError(f"serve did not start: {line!r} {proc.stderr.read()}")
    assert m.group(2) == profile
    return Server(proc, int(m.group(1)))


def stop(server: Server) -> None:
    server.proc.send_signal(signal.SIGTERM)
    assert server.proc.wait(timeout=30) == 0   # SIGTERM stops it cleanly


@pytest.fixture
def fgd_server() -> Iterator[Server]:
    s = start("fgd", "--read-timeout", "1", "--max-body-bytes", "200000")
    try:
        yield s
    finally:
        stop(s)


def pending_pods() -> List[Dict[str, Any]]:
    """The snapshot's pending pods, oldest first (the order kube-scheduler's queue takes them)."""
    items = json.loads((SNAPSHOT / "pods.json").read_text())["items"]
    pods = [p for p in items if not p["spec"].get("nodeName") and p.get("status", {}).get("phase") == "Pending"]
    return sorted(pods, key=lambda p: datetime.fromisoformat(p["metadata"]["creationTimestamp"].replace("Z", "+00:00")))


@pytest.mark.parametrize("profile", ["binpack", "fgd", "gpushare-binpack"])
def test_pending_pods_through_filter_prioritize_bind_land_where_whatif_puts_them(profile: str) -> None:
    expected = gpusched.whatif(SNAPSHOT / "nodes.json", SNAPSHOT / "pods.json", profiles=[profile]).pods
    where = {row.pod: row.node for row in expected.itertuples()}
    server = start(profile)
    try:
        placed = 0
        for pod in pending_pods():
            key = f"{pod['metadata']['namespace']}/{pod['metadata']['name']}"
            pod = dict(pod)
            pod.pop("status", None)
            status, filtered = server.request("POST", "/filter", {"Pod": pod, "NodeNames": NODES})
            assert status == 200 and filtered["Error"] == ""
            kept = filtered["NodeNames"]
            assert sorted(kept + list(filtered["FailedNodes"]) + list(filtered["FailedAndUnresolvableNodes"])) == sorted(NODES)
            if not where[key]:
                assert kept == []
                continue
            status, scores = server.request("POST", "/prioritize", {"Pod": pod, "NodeNames": kept})
            assert status == 200 and [h["Host"] for h in scores] == kept
            assert all(0 <= h["Score"] <= 10 for h in scores)
            best = max(scores, key=lambda h: h["Score"])
            assert best["Score"] == 10 and best["Host"] == where[key], (key, scores)
            status, bound = server.request("POST", "/bind", {"PodName": pod["metadata"]["name"], "PodNamespace": pod["metadata"]["namespace"],
                                                             "PodUID": pod["metadata"].get("uid", ""), "Node": best["Host"]})
            assert (status, bound) == (200, {"Error": ""})
            placed += 1
        assert placed == sum(1 for n in where.values() if n)
        status, held = server.request("GET", "/pods")
        assert status == 200
        held_nodes = {h["pod"]: h["node"] for h in held}
        for key, node in where.items():
            if node:
                assert held_nodes[key] == node
    finally:
        stop(server)


def test_bad_requests_are_answered_and_the_server_keeps_serving(fgd_server: Server) -> None:
    s = fgd_server
    assert s.request("GET", "/healthz") == (200, "ok")
    status, body = s.request("POST", "/filter", raw=b'{"Pod": ')
    assert status == 400 and body["error_id"] == "gpusched.trace_error.102"
    status, body = s.request("POST", "/filter", {"Pod": {"metadata": {"name": "x"}, "spec": {"containers": [
        {"name": "c", "resources": {"requests": {"cpu": "12x"}}}]}}, "NodeNames": NODES})
    assert status == 400 and "CPU quantity" in body["Error"] and body["error_id"] == "gpusched.trace_error.102"
    assert s.request("GET", "/nope")[0] == 404
    assert s.request("GET", "/filter")[0] == 405
    # A body over --max-body-bytes: 413, whatever it holds.
    status, body = s.request("POST", "/filter", raw=b"[" + b"0," * 150000 + b"0]")
    assert status == 413 and "max-body-bytes" in body["Error"]
    # A client that starts a request and stalls past --read-timeout (1 s): 408.
    heard = s.raw(b"POST /filter HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n\r\n{\"Pod\"", pause=2.5, rest=b"}")
    assert heard.startswith(b"HTTP/1.1 408"), heard[:80]
    # Not HTTP at all: 400.
    heard = s.raw(b"GARBAGE\r\n\r\n")
    assert heard.startswith(b"HTTP/1.1 400"), heard[:80]
    # Many clients at once: every one answered.
    results: List[int] = []

    def client() -> None:
        results.append(s.request("GET", "/healthz")[0])

    threads = [threading.Thread(target=client) for _ in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [200] * 32
    # Still serving, and every refusal counted in the Prometheus text.
    assert s.request("GET", "/healthz") == (200, "ok")
    status, metrics = s.request("GET", "/metrics")
    assert status == 200
    assert 'gpusched_extender_requests_total{verb="filter",code="400"} 2' in metrics
    assert 'gpusched_extender_requests_total{verb="http",code="413"} 1' in metrics
    assert 'gpusched_extender_requests_total{verb="http",code="408"} 1' in metrics
    assert 'gpusched_extender_requests_total{verb="http",code="400"} 1' in metrics
    assert re.search(r'gpusched_extender_request_duration_seconds_count\{verb="healthz"\} 3[34]', metrics)


def test_serve_refuses_a_bad_snapshot_or_address_with_the_cli_errors(tmp_path: Path) -> None:
    r = subprocess.run([sys.executable, "-m", "gpusched", "serve", "--nodes", str(SNAPSHOT / "bad-gpu-product.json")],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "gpusched.trace_error.105" in r.stderr
    r = subprocess.run([sys.executable, "-m", "gpusched", "serve", "--nodes", str(SNAPSHOT / "nodes.json"), "--listen", "nowhere"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "--listen" in r.stderr


def test_shadow_mode_prints_one_line_per_bind_and_summarises() -> None:
    server = start("binpack", "--shadow")
    try:
        pod = next(p for p in pending_pods() if p["metadata"]["name"] == "notebook-ana")
        pod = dict(pod)
        pod.pop("status", None)
        assert server.request("POST", "/filter", {"Pod": pod, "NodeNames": NODES})[0] == 200
        assert server.request("POST", "/bind", {"PodName": "notebook-ana", "PodNamespace": "ml", "Node": "mig-a100-0"}) == (200, {"Error": ""})
        line = json.loads(server.proc.stdout.readline())
        assert line == {"pod": "ml/notebook-ana", "kube_node": "mig-a100-0", "gpusched_node": "mig-a100-0", "agree": True}
        status, summary = server.request("GET", "/shadow")
        assert status == 200 and summary["binds"] == 1 and summary["agreement_pct"] == 100.0
        assert summary["kube"]["gpu_alloc_pct"] == summary["gpusched"]["gpu_alloc_pct"] > 0
    finally:
        stop(server)


class ApiServer:
    """A real HTTP server on loopback standing where `kubectl proxy` (and the API server behind it)
    would: it takes POST .../api/v1/namespaces/NS/pods/NAME/binding, records the Binding, and
    answers 201, or 409 with a metav1.Status for the pods in `refuse` (the API server's answer
    for a pod already assigned to a node)."""

    def __init__(self) -> None:
        self.bindings: List[Tuple[str, Dict[str, Any]]] = []
        self.refuse: set = set()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802 (http.server's name)
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                outer.bindings.append((self.path, body))
                name = body["metadata"]["name"]
                if name in outer.refuse:
                    code, answer = 409, {"kind": "Status", "apiVersion": "v1", "status": "Failure", "reason": "Conflict", "code": 409,
                                         "message": f'Operation cannot be fulfilled on pods/binding "{name}": pod {name} is already assigned to node "elsewhere"'}
                else:
                    code, answer = 201, {"kind": "Status", "apiVersion": "v1", "status": "Success", "code": 201}
                data = json.dumps(answer).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.httpd.server_address[1]
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def test_bind_api_creates_bindings_through_the_api_server_and_forgets_refused_ones() -> None:
    api = ApiServer()
    server = start("binpack", "--bind-api", f"http://127.0.0.1:{api.port}/proxy/", "--bind-timeout", "5")
    try:
        pods = [dict(p) for p in pending_pods()]
        for p in pods:
            p.pop("status", None)
        by_name = {p["metadata"]["name"]: p for p in pods}
        placed = gpusched.whatif(SNAPSHOT / "nodes.json", SNAPSHOT / "pods.json", profiles=["binpack"]).pods
        fits = [row.pod.split("/")[1] for row in placed.itertuples() if row.node and row.pod.split("/")[1] != "notebook-ana"]
        first, second = by_name["notebook-ana"], by_name[fits[0]]

        def bind(pod: Dict[str, Any]) -> Tuple[int, Any]:
            status, filtered = server.request("POST", "/filter", {"Pod": pod, "NodeNames": NODES})
            assert status == 200 and filtered["NodeNames"], filtered
            m = pod["metadata"]
            return server.request("POST", "/bind", {"PodName": m["name"], "PodNamespace": m["namespace"], "PodUID": m.get("uid", ""),
                                                    "Node": filtered["NodeNames"][0]})

        assert bind(first) == (200, {"Error": ""})
        path, binding = api.bindings[-1]
        assert path == "/proxy/api/v1/namespaces/ml/pods/notebook-ana/binding"
        assert binding["apiVersion"] == "v1" and binding["kind"] == "Binding"
        assert binding["metadata"]["name"] == "notebook-ana" and binding["metadata"]["namespace"] == "ml"
        assert binding["metadata"].get("uid", "") == first["metadata"].get("uid", "")
        status, held = server.request("GET", "/pods")
        mine = next(h for h in held if h["pod"] == "ml/notebook-ana")
        assert binding["target"] == {"apiVersion": "v1", "kind": "Node", "name": mine["node"]}

        # A GPU-memory share: the Binding carries the annotations gpushare's device plugin reads.
        share = json.loads(json.dumps(second))
        share["metadata"]["name"] = "mem-share"
        share["metadata"]["uid"] = "uid-mem-share"
        share["spec"]["containers"] = [dict(share["spec"]["containers"][0], resources={"limits": {"aliyun.com/gpu-mem": "4"}})]
        assert bind(share) == (200, {"Error": ""})
        path, binding = api.bindings[-1]
        assert path.endswith("/pods/mem-share/binding") and binding["metadata"]["uid"] == "uid-mem-share"
        held = server.request("GET", "/pods")[1]
        mine = next(h for h in held if h["pod"].endswith("/mem-share"))
        assert binding["metadata"]["annotations"] == mine["annotations"]
        assert binding["metadata"]["annotations"]["ALIYUN_COM_GPU_MEM_POD"] == "4"

        # Refused by the API server: the Error says why, and the pod holds nothing here.
        api.refuse.add(second["metadata"]["name"])
        status, answer = bind(second)
        assert status == 200
        assert answer["Error"].startswith(f"binding pod {second['metadata']['namespace']}/{second['metadata']['name']} to node ")
        assert "API server answered 409: Operation cannot be fulfilled on pods/binding" in answer["Error"]
        held = server.request("GET", "/pods")[1]
        assert all(h["pod"] != f"{second['metadata']['namespace']}/{second['metadata']['name']}" for h in held)
        metrics = server.request("GET", "/metrics")[1]
        assert "gpusched_extender_binder_errors_total 1" in metrics

        # No API server at all: refused, with the transport's reason, and the server keeps serving.
        api.close()
        status, answer = bind(second)
        assert status == 200 and f"API server http://127.0.0.1:{api.port}/proxy/: " in answer["Error"], answer
        assert "gpusched_extender_binder_errors_total 2" in server.request("GET", "/metrics")[1]
        assert server.request("GET", "/healthz") == (200, "ok")
    finally:
        stop(server)
        api.close()


@pytest.mark.parametrize("url, words", [("https://127.0.0.1:6443", "kubectl proxy"), ("127.0.0.1:8001", "expected http://"),
                                        ("http://127.0.0.1:99999", "port"), ("http://:8001", "no host"),
                                        ("http://[::1:8001", "[ADDRESS]:PORT"), ("http://no-such-host.invalid:8001", "cannot resolve")])
def test_bind_api_refuses_a_url_it_cannot_use(url: str, words: str) -> None:
    r = subprocess.run([sys.executable, "-m", "gpusched", "serve", "--nodes", str(SNAPSHOT / "nodes.json"), "--bind-api", url],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "--bind-api" in r.stderr and words in r.stderr and "gpusched.scenario_error.203" in r.stderr, r.stderr


def test_bind_api_gives_up_on_an_api_server_that_never_answers_and_keeps_serving() -> None:
    """A listener that accepts connections and reads but never answers: each binding fails after
    --bind-timeout, and the server keeps answering other requests meanwhile and stops cleanly."""
    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)
    port = silent.getsockname()[1]
    server = start("binpack", "--bind-api", f"http://127.0.0.1:{port}", "--bind-timeout", "1", "--threads", "2")
    try:
        pod = dict(next(p for p in pending_pods() if p["metadata"]["name"] == "notebook-ana"))
        pod.pop("status", None)
        assert server.request("POST", "/filter", {"Pod": pod, "NodeNames": NODES})[0] == 200
        answers: List[Tuple[int, Any]] = []
        t0 = time.monotonic()
        worker = threading.Thread(target=lambda: answers.append(server.request(
            "POST", "/bind", {"PodName": "notebook-ana", "PodNamespace": "ml", "Node": "mig-a100-0"})))
        worker.start()
        assert server.request("GET", "/healthz") == (200, "ok")   # answered while the binding waits
        worker.join(timeout=30)
        elapsed = time.monotonic() - t0
        assert answers and answers[0][0] == 200, answers
        assert answers[0][1]["Error"].endswith(f"API server http://127.0.0.1:{port}: no answer within 1 s"), answers
        assert 0.9 <= elapsed < 10, elapsed
        assert all(h["pod"] != "ml/notebook-ana" for h in server.request("GET", "/pods")[1])   # forgotten again
    finally:
        stop(server)
        silent.close()


def test_bind_timeout_out_of_range_is_refused() -> None:
    r = subprocess.run([sys.executable, "-m", "gpusched", "serve", "--nodes", str(SNAPSHOT / "nodes.json"),
                        "--bind-api", "http://127.0.0.1:8001", "--bind-timeout", "4000"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 1 and "--bind-timeout" in r.stderr and "at most 3600 seconds" in r.stderr, r.stderr
