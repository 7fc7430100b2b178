"""The builders produce scenario dicts that run."""

from __future__ import annotations

import json

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
