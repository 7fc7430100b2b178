"""The builders produce scenario dicts that run."""

from __future__ import annotations

import json

import pytest

import gpusched
from gpusched.builders import Cluster, Profile, Scenario, job, jobs, synthetic, trace


def test_a_built_cluster_profile_and_synthetic_workload_run():
    cluster = (
        Cluster()
        .node_group("a100", count=10, cpu=128, memory="1Ti", gpus=8, gpu_model="A100-80GB", sockets=2,
                    labels={"pool": "train"})
        .node_group("cpu", count=4, cpu="96", memory="384Gi", taints=["dedicated=etl:NoSchedule"])
        .node("t4-x", cpu=64, memory="256Gi", gpus=4, gpu_model="T4")
    )
    profile = (
        Profile("packed", extends="default")
        .score("gpu-binpack", weight=2)
        .score("least-allocated")
        .device_select("gpu-binpack")
        .tie_break("random")
    )
    sc = Scenario(cluster, profile, synthetic(jobs=800, load=0.9, duration_median_s=600, queues=["x", "y"]),
                  seed=3, name="built", horizon_s=None, sample_interval_s=120)
    d = sc.to_dict()
    assert d["schema_version"] == 1 and d["name"] == "built" and d["seed"] == 3 and d["mode"] == "replay"
    assert d["cluster"]["node_groups"][0] == {
        "name": "a100", "count": 10, "cpu": 128, "memory": "1Ti", "gpus": 8, "gpu_model": "A100-80GB",
        "sockets": 2, "labels": {"pool": "train"},
    }
    assert d["cluster"]["node_groups"][1]["taints"] == [{"key": "dedicated", "value": "etl", "effect": "NoSchedule"}]
    assert d["cluster"]["nodes"] == [{"name": "t4-x", "cpu": 64, "memory": "256Gi", "gpus": 4, "gpu_model": "T4"}]
    assert d["profile"] == {
        "name": "packed", "extends": "default",
        "score": [{"name": "gpu-binpack", "weight": 2}, {"name": "least-allocated", "weight": 1}],
        "device_select": "gpu-binpack", "tie_break": "random",
    }
    assert d["workload"]["synthetic"]["jobs"] == 800
    json.dumps(d)   # plain JSON

    info = gpusched.validate(d)
    assert info["nodes"] == 15 and info["gpus"] == 84 and info["profile"] == "packed"
    r = sc.run()
    assert r.summary["jobs"]["total"] == 800
    assert r.summary["inputs"]["profile"]["name"] == "packed"
    assert set(r.jobs["queue"]) == {"x", "y"}
    # The same through gpusched.run(dict).
    assert gpusched.run(d).jobs.equals(r.jobs)


def test_filters_always_start_with_node_resources_fit():
    p = Profile("f").filter("node-resources-fit").filter("node-resources-fit")
    assert p.to_dict()["filter"] == ["node-resources-fit", "taint-toleration", "node-affinity"]


def test_inline_jobs_node_events_and_fill_mode_run():
    cluster = Cluster().node("g", cpu=32, memory="128Gi", gpus=4, gpu_model="A100-80GB").node("c", cpu=16, memory="64Gi")
    work = jobs([
        job("train", 0, 100, cpu=4, memory="16Gi", gpus=2),
        job("share", 5, 50, cpu=1, memory="4Gi", gpu_milli=250, queue="inference", priority=5),
        job("gang", 10, 30, cpu=2, memory="8Gi", gpus=1, tasks=2, min_available=2, gpu_model=["A100-80GB"]),
        job("forever", 20, cpu=1, memory="1Gi"),
    ])
    sc = Scenario(cluster, "binpack", work, seed=1, name="inline", event_log=True, horizon_s=500)
    sc.node_down(60, "c").node_up(80, "c")
    r = gpusched.run(sc)
    states = dict(zip(r.jobs["job"], r.jobs["state"]))
    assert states == {"train": "completed", "share": "completed", "gang": "completed", "forever": "running"}
    node_events = r.events[r.events["event"].isin(["node_down", "node_up"])]
    assert list(node_events["event"]) == ["node_down", "node_up"]
    assert list(node_events["node"]) == ["c", "c"] and list(node_events["time_s"]) == [60.0, 80.0]

    fill = Scenario(Cluster().node_group("g", 4, cpu=64, memory="256Gi", gpus=8, gpu_model="V100-32GB"),
                    "best-fit", synthetic(jobs=300, load=1.0), mode="fill", name="fill")
    rf = fill.run()
    assert rf.summary["jobs"]["completed"] == 0   # arrival-only: nothing finishes


def test_a_trace_workload_resolves_from_base_dir(repo):
    cluster = Cluster().node_group("a100", 8, cpu=128, memory="1024Gi", gpus=8, gpu_model="A100-80GB", sockets=2) \
                       .node_group("v100", 8, cpu=64, memory="512Gi", gpus=4, gpu_model="V100-32GB", sockets=2)
    sc = Scenario(cluster, "default", trace("traces/mixed.csv"), seed=1, name="replay")
    r = gpusched.run(sc, base_dir=repo / "examples")
    assert r.summary["jobs"]["total"] == 7


def _resolved_profile(profile: Profile) -> dict:
    """The profile a run actually used (extends and replace resolved by the core)."""
    cluster = Cluster().node("g", cpu=16, memory="64Gi", gpus=2, gpu_model="T4")
    work = jobs([job("a", 0, 10, cpu=1, memory="1Gi", gpus=1)])
    return Scenario(cluster, profile, work, seed=1).run().summary["inputs"]["profile"]


def test_an_extending_profile_adds_its_plugins_to_the_base_lists():
    p = _resolved_profile(Profile("kb", extends="kube-default").score("gpu-binpack", weight=2).post_filter("capacity-queues"))
    assert [(s["name"], s["weight"]) for s in p["score"]] == [
        ("least-allocated", 1), ("balanced-allocation", 1), ("taint-toleration", 3), ("node-affinity", 2),
        ("gpu-binpack", 2)]
    assert [f["name"] for f in p["post_filter"]] == ["priority-preemption", "capacity-queues"]
    # kube-scheduler's filter order (cordon, taints, node affinity, then resources; issue 12).
    assert [f["name"] for f in p["filter"]] == [
        "node-unschedulable", "taint-toleration", "node-affinity", "node-resources-fit", "app-max-per-node"]
    assert p["diagnosis"] == "kube-scheduler"
    assert p["name"] == "kb"
    assert p["description"] == "extends kube-default"   # never the base's own description
    # A plugin the base already has keeps its place with the new weight.
    q = _resolved_profile(Profile("kb", extends="kube-default", description="mine").score("taint-toleration", weight=5))
    assert [(s["name"], s["weight"]) for s in q["score"]] == [
        ("least-allocated", 1), ("balanced-allocation", 1), ("taint-toleration", 5), ("node-affinity", 2)]
    assert q["description"] == "mine"


def test_replace_restates_the_named_hooks():
    prof = Profile("only-binpack", extends="kube-default", replace=("score", "post_filter")).score("gpu-binpack")
    assert prof.to_dict()["replace"] == ["score", "post_filter"]
    p = _resolved_profile(prof)
    assert [s["name"] for s in p["score"]] == ["gpu-binpack"]
    assert p["post_filter"] == []
    assert [f["name"] for f in p["filter"]][-1] == "app-max-per-node"   # not named: the base's
    assert "replace" not in Profile("x", extends="default").to_dict()
    with pytest.raises(ValueError, match="replace needs extends"):
        Profile("x", replace=("score",))
    with pytest.raises(ValueError, match="list hooks"):
        Profile("x", extends="default", replace=("device_select",))


def test_trace_takes_format_transforms_and_a_target_load(repo):
    assert trace("traces/mixed.csv") == {"trace": "traces/mixed.csv"}
    w = trace("traces/mixed.csv", format="native", transforms=[{"shuffle": True}], target_load=0.5)
    assert w == {"trace": {"path": "traces/mixed.csv", "format": "native",
                           "transforms": [{"shuffle": True}, {"target_load": 0.5}]}}
    cluster = Cluster().node_group("a100", 2, cpu=128, memory="1024Gi", gpus=8, gpu_model="A100-80GB")
    finite = [{"filter": {"queues": ["nlp", "vision", "data"]}}]   # the serving jobs never end
    base = gpusched.run(Scenario(cluster, "default", trace("traces/mixed.csv", transforms=finite), seed=1),
                        base_dir=repo / "examples")
    r = gpusched.run(Scenario(cluster, "default", trace("traces/mixed.csv", transforms=finite, target_load=2.0), seed=1),
                     base_dir=repo / "examples")
    t0, t1 = base.jobs.set_index("job"), r.jobs.set_index("job")
    assert list(t1.index) == list(t0.index)   # same jobs, same arrival order
    span0 = t0["submit_s"].max() - t0["submit_s"].min()
    span1 = t1["submit_s"].max() - t1["submit_s"].min()
    assert span1 > span0   # 120 s of arrivals offer far more than 2.0: they spread out
    # The offered load (GPU milli x duration / capacity x span) of what ran is the target.
    done = t1[t1["state"] == "completed"]
    assert len(done) == len(t1)
    milli = t1["gpus"] * 1000 * t1["tasks"] + t1["gpu_milli"] * t1["tasks"]
    load = (milli * (t1["end_s"] - t1["start_s"])).sum() / (16_000 * span1)
    assert load == pytest.approx(2.0, rel=1e-6)
    with pytest.raises(gpusched.ScenarioError) as info:
        gpusched.run(Scenario(cluster, "default", trace("traces/mixed.csv", target_load=-1), seed=1),
                     base_dir=repo / "examples")
    assert info.value.field == "/workload/trace/transforms/0/target_load"
    with pytest.raises(gpusched.ScenarioError, match="never ends") as info:   # found when the run starts
        gpusched.run(Scenario(cluster, "default", trace("traces/mixed.csv", target_load=0.5), seed=1),
                     base_dir=repo / "examples")
    assert info.value.field == "/workload/trace/transforms/0/target_load"
