"""What-if on a kubectl snapshot from Python: gpusched.whatif() returns the table `gpusched whatif`
prints, as DataFrames, and places pods exactly where gpusched.run() of the same snapshot does.
The snapshot is tests/data/kubernetes (written from kubectl's output format; see its README)."""

from __future__ import annotations

import json

import pytest

import gpusched

from conftest import REPO, cli

DATA = REPO / "tests" / "data" / "kubernetes"
NODES, PODS = DATA / "nodes.json", DATA / "pods.json"


def test_whatif_returns_one_summary_row_per_profile_and_one_pod_row_per_pending_pod():
    r = gpusched.whatif(NODES, PODS, ["kube-default", "binpack"])
    s = r.summary
    assert list(s["profile"]) == ["kube-default", "binpack"]
    assert list(s["bound"]) == [4, 4] and list(s["pending"]) == [3, 3]
    assert (s["gpu_alloc_pct"] >= s["gpu_alloc_pct_before"]).all()
    p = r.pods
    assert len(p) == 6
    assert list(p[p.profile == "binpack"]["pod"])[0] == "ml/notebook-ana"   # oldest first
    for _, row in p.iterrows():
        assert bool(row.placed) == (row.node != "") == (row.reason == "")
    placed = p.groupby("profile", sort=False)["placed"].sum()
    assert list(placed) == list(s["placed"])
    # A comma-separated string is a list of profiles too.
    assert list(gpusched.whatif(NODES, PODS, "binpack,first-fit").summary["profile"]) == ["binpack", "first-fit"]


def test_whatif_places_pods_where_run_of_the_same_snapshot_does():
    scenario = {"schema_version": 1, "name": "snap", "seed": 42,
                "cluster": {"import": [{"path": str(NODES), "format": "kubectl-nodes"}]},
                "workload": {"trace": {"path": str(PODS), "format": "kubectl-pods"}},
                "profile": "gpushare-binpack"}
    jobs = gpusched.run(scenario).jobs.set_index("job")
    pods = gpusched.whatif(NODES, PODS, ["gpushare-binpack"]).pods
    for _, p in pods.iterrows():
        j = jobs.loc[p.pod]
        assert p.placement == (j.placement if p.placed else "")
        assert p.reason == ("" if p.placed else j.reason)


def test_whatif_matches_the_command_line_json(tmp_path):
    out = cli("whatif", "--nodes", str(NODES), "--pods", str(PODS), "--profiles", "kube-default,fgd", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout) == gpusched.whatif(NODES, PODS, "kube-default,fgd").raw


def test_whatif_bad_input_names_the_file_or_profile(tmp_path):
    with pytest.raises(gpusched.ProfileError, match="nope"):
        gpusched.whatif(NODES, PODS, ["nope"])
    bad = tmp_path / "pods.json"
    bad.write_text('{"apiVersion": "v1", "kind": "List", "items": [{"kind": "Pod", "metadata": {"name": "x"},\n'
                   ' "spec": {"containers": [{"resources": {"requests": {"cpu": "lots"}}}]}}]}')
    with pytest.raises(gpusched.GpuschedError, match="pods.json:2"):
        gpusched.whatif(NODES, bad, ["binpack"])


def _with_tiny_pod(tmp_path):
    """pods.json plus a pending pod that tolerates every taint and asks little: several nodes fit it."""
    doc = json.loads(PODS.read_text())
    doc["items"].append({"apiVersion": "v1", "kind": "Pod",
                         "metadata": {"name": "tiny", "namespace": "ml", "creationTimestamp": "2024-06-01T00:00:00Z"},
                         "spec": {"tolerations": [{"operator": "Exists"}],
                                  "containers": [{"name": "c", "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]},
                         "status": {"phase": "Pending"}})
    path = tmp_path / "pods.json"
    path.write_text(json.dumps(doc))
    return path


def test_whatif_explain_gives_each_nodes_verdict_and_scores(tmp_path):
    pods = _with_tiny_pod(tmp_path)
    r = gpusched.whatif(NODES, pods, ["binpack"], explain=True)
    plain = gpusched.whatif(NODES, pods, ["binpack"])
    assert r.pods.equals(plain.pods)   # explaining changes no decision
    n = r.nodes
    assert set(n["pod"]) == set(r.pods["pod"])
    assert any(c.startswith("score:") for c in n.columns) and any(c.startswith("raw:") for c in n.columns)
    assert (n[~n.feasible]["filter"] != "").all() and (n[~n.feasible]["reasons"] != "").all()
    for _, p in r.pods[r.pods.placed].iterrows():
        rows = n[n.pod == p.pod]
        assert rows[rows.node == p.node]["total"].iloc[0] == rows[rows.feasible]["total"].max()
    tiny = n[n.pod == "ml/tiny"]
    assert tiny["feasible"].sum() >= 2 and tiny[tiny.feasible]["total"].notna().all()
    for _, p in r.pods[~r.pods.placed].iterrows():
        assert not n[n.pod == p.pod]["feasible"].any()
    assert gpusched.whatif(NODES, pods, ["binpack"]).nodes.empty


def test_whatif_as_gpu_mem_turns_one_gpu_pods_into_memory_shares():
    plain = gpusched.whatif(NODES, PODS, ["gpushare-binpack"]).summary
    shared = gpusched.whatif(NODES, PODS, ["gpushare-binpack"], as_gpu_mem=True, gpu_mem_default="4Gi").summary
    assert list(plain["converted"]) == [0]
    assert list(shared["converted"]) == [1]   # the ranker pod: the snapshot's only one-GPU pod
    assert shared["gpu_memory_alloc_pct"].iloc[0] < plain["gpu_memory_alloc_pct"].iloc[0]   # 4 GiB of its T4, not all
    # Images name a default too; no figure at all leaves the pod as it is.
    by_image = gpusched.whatif(NODES, PODS, ["binpack"], as_gpu_mem=True,
                               gpu_mem_by_image={"registry.example.com/ml/ranker": "2Gi"}).summary
    assert list(by_image["converted"]) == [1]
    assert list(gpusched.whatif(NODES, PODS, ["binpack"], as_gpu_mem=True).summary["converted"]) == [0]
    with pytest.raises(ValueError, match="as_gpu_mem"):
        gpusched.whatif(NODES, PODS, ["binpack"], gpu_mem_default="4Gi")
    with pytest.raises(gpusched.GpuschedError, match="gpu_mem_default"):
        gpusched.whatif(NODES, PODS, ["binpack"], as_gpu_mem=True, gpu_mem_default="lots")


def test_whatif_events_set_kube_schedulers_last_word_beside_each_profiles_reason():
    # tests/data/kubernetes/events.json: FailedScheduling events of two pending pods (core/v1 and
    # events.k8s.io/v1), the later one for etl-nightly in kube-default's words for this snapshot.
    r = gpusched.whatif(NODES, PODS, ["kube-default", "binpack"], events=DATA / "events.json")
    s = r.summary.set_index("profile")
    assert s.loc["kube-default", "kube_reasons"] == 2 and s.loc["kube-default", "same_reason"] == 1
    assert s.loc["binpack", "same_reason"] == 0   # gpusched's own wording
    p = r.pods[r.pods.profile == "kube-default"].set_index("pod")
    etl = p.loc["data/etl-nightly-28573440-abcde"]
    assert etl.kube_reason == etl.reason and "1 Insufficient memory" in etl.kube_reason
    assert p.loc["ml/finetune-7b", "kube_reason"] == ""
    out = cli("whatif", "--nodes", NODES, "--pods", PODS, "--profiles", "kube-default", "--events", DATA / "events.json",
              "--show-pods")
    assert out.returncode == 0, out.stderr
    assert "same reason as kube-scheduler" in out.stdout and "kube-scheduler said the same" in out.stdout
