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
