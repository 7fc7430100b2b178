"""Time-slicing and MPS as the NVIDIA device plugin deploys them, from Python (docs/sharing.md):
a node advertises GPUs x replicas, and failRequestsGreaterThanOne refuses a request above one
replica with its reason."""

from __future__ import annotations

import pytest

import gpusched
from gpusched.builders import Cluster, Scenario, job, jobs


def _run(partition, job_list, devices=None):
    cluster = Cluster().node("t4", cpu=16, memory="64Gi", gpus=2, gpu_model="T4", gpu_partition=partition)
    return gpusched.run(Scenario(cluster, "first-fit", jobs(job_list), seed=1, devices=devices))


def test_three_replicas_fit_a_node_of_two_gpus_with_four_replicas_each():
    r = _run({"mode": "time-slicing", "replicas": 4}, [job("three", 0, 100, cpu=1, gpus=3)])
    row = r.jobs.set_index("job").loc["three"]
    assert row["state"] == "completed"
    assert row["start_s"] == 0.0
    # The placement lists one grant per replica ("t4[0:250m,1:250m,0:250m]"): 3 replicas, spread
    # over both GPUs (the plugin's distributed allocation), 2 on one of them.
    assert row["placement"].startswith("t4[") and row["placement"].endswith("]")
    gpu_of_each = [grant.split(":")[0] for grant in row["placement"][3:-1].split(",")]
    assert len(gpu_of_each) == 3
    assert sorted(gpu_of_each.count(g) for g in ("0", "1")) == [1, 2]


def test_the_earlier_one_replica_per_gpu_model_refuses_three_on_two_gpus():
    # One replica per GPU: 3 can never fit 2 GPUs, so the run stops before it starts, naming the job.
    with pytest.raises(gpusched.TraceError, match=r'job "three" can never run: it needs 3 nvidia.com/gpu per task; the largest node has 2'):
        _run({"mode": "time-slicing", "replicas": 4}, [job("three", 0, 100, cpu=1, gpus=3)],
             devices={"replica_allocation": "one-per-gpu"})


def test_fail_requests_greater_than_one_refuses_two_replicas_with_the_reason():
    partition = {"mode": "time-slicing", "replicas": 4, "fail_requests_greater_than_one": True}
    r = _run(partition, [job("two", 0, 100, cpu=1, gpus=2), job("one", 0, 100, cpu=1, gpus=1)])
    table = r.jobs.set_index("job")
    assert table.loc["one", "state"] == "completed"
    assert table.loc["two", "state"] != "completed"
    assert "maximum request size for shared resources is 1" in table.loc["two", "reason"]


def test_mps_refuses_more_than_one_replica_by_default():
    r = _run({"mode": "mps", "replicas": 4}, [job("two", 0, 100, cpu=1, gpus=2)])
    assert "failRequestsGreaterThanOne" in r.jobs.set_index("job").loc["two", "reason"]


def test_a_sharing_flag_on_a_whole_gpu_node_is_an_error_naming_the_field():
    with pytest.raises(gpusched.ScenarioError) as info:
        _run({"mode": "whole", "rename_by_default": True}, [job("one", 0, 100, cpu=1, gpus=1)])
    assert info.value.id == "gpusched.scenario_error.209"
    assert info.value.field.endswith("/gpu_partition/rename_by_default")
