"""Kubernetes objects (Kueue, Volcano, PriorityClass, ResourceQuota, KubeSchedulerConfiguration)
from Python: the scenario dict's ``kubernetes_objects`` goes through the same C++ translation as
a scenario file (tests/scenario/test_k8s_objects.cpp checks the translation itself)."""

from __future__ import annotations

from pathlib import Path

import pytest

import gpusched
from gpusched import Cluster, Scenario

REPO = Path(__file__).resolve().parents[2]
DATA = REPO / "tests" / "data" / "k8s"

JOBS = {
    "jobs": [
        {"id": "j1", "submit_time": 0, "duration": 100, "requests": {"cpu": 1, "nvidia.com/gpu": 1}},
        {"id": "j2", "submit_time": 1, "duration": 100, "requests": {"cpu": 1, "nvidia.com/gpu": 1}},
    ]
}


def _cluster() -> Cluster:
    return Cluster().node("a", cpu=32, memory="256Gi", gpus=4, gpu_model="A100-80GB").node(
        "b", cpu=32, memory="256Gi", gpus=4, gpu_model="A100-80GB"
    )


def test_a_kube_scheduler_configuration_file_becomes_the_profile(tmp_path: Path) -> None:
    sc = Scenario(_cluster(), "default", JOBS, name="k8s", kubernetes_objects=["kube-scheduler-config.yaml"])
    doc = sc.to_dict()
    assert doc["kubernetes_objects"] == ["kube-scheduler-config.yaml"]
    del doc["profile"]  # the configuration is the profile
    r = gpusched.run(doc, base_dir=DATA)
    assert r.summary["profile"] == "default-scheduler"
    jobs = r.jobs.set_index("job")
    # MostAllocated packs: both jobs on the first node.
    assert jobs.loc["j1", "placement"][0] == jobs.loc["j2", "placement"][0] == "a"


def test_inline_priority_class_objects_set_job_priorities() -> None:
    pc = {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "urgent"}, "value": 500}
    jobs = {"jobs": [dict(JOBS["jobs"][0], priority_class="urgent")]}
    r = gpusched.run(Scenario(_cluster(), "default", jobs, kubernetes_objects=[pc]).to_dict())
    assert int(r.jobs.set_index("job").loc["j1", "priority"]) == 500


def test_an_unmodelled_field_raises_scenario_error_naming_the_object(tmp_path: Path) -> None:
    bad = tmp_path / "queue.yaml"
    bad.write_text(
        "apiVersion: scheduling.volcano.sh/v1beta1\nkind: Queue\nmetadata: {name: q}\nspec:\n  deserved: {cpu: 2}\n",
        encoding="utf-8",
    )
    doc = Scenario(_cluster(), "default", JOBS, kubernetes_objects=[str(bad)]).to_dict()
    with pytest.raises(gpusched.ScenarioError) as e:
        gpusched.run(doc)
    assert e.value.file == str(bad)
    assert e.value.line == 5
    assert e.value.field == "document 1, Queue q, /spec/deserved"
