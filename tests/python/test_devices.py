"""Devices from Python: MIG, time-slicing and TPU pools built with the builders, run, and the
placements (GPU instance, TPU hosts) read back from the job table."""

from __future__ import annotations

import gpusched
from gpusched.builders import Cluster, Scenario, job, jobs


def _run(cluster, job_list, devices=None):
    sc = Scenario(cluster, "first-fit", jobs(job_list), seed=1, devices=devices)
    return gpusched.run(sc)


def test_a_mig_request_gets_a_gpu_instance_named_in_the_placement():
    cluster = Cluster().node_group("h100", count=1, cpu=64, memory="512Gi", gpus=1, gpu_model="H100-80GB",
                                   gpu_partition={"mode": "mig", "layout": ["4g.40gb", "3g.40gb"]})
    r = _run(cluster, [job("a", 0, 100, cpu=1, requests={"nvidia.com/mig-3g.40gb": 1}),
                       job("b", 0, 100, cpu=1, requests={"nvidia.com/mig-3g.40gb": 1})])
    table = r.jobs.set_index("job")
    assert table.loc["a", "placement"] == "h100-0000[0:mig-3g.40gb@4]"
    # the only 3g GI is taken: b waits for it
    assert table.loc["b", "start_s"] == 100.0


def test_a_dynamic_mig_gpu_charges_the_reconfiguration_delay():
    cluster = Cluster().node_group("h100", count=1, cpu=64, memory="512Gi", gpus=1, gpu_model="H100-80GB",
                                   gpu_partition={"mode": "mig", "dynamic": True})
    r = _run(cluster, [job("a", 0, 100, cpu=1, requests={"nvidia.com/mig-1g.10gb": 1})],
             devices={"mig_reconfigure_s": 7})
    row = r.jobs.set_index("job").loc["a"]
    assert row["start_s"] == 7.0 and row["end_s"] == 107.0


def test_time_slicing_sharers_slow_each_other():
    cluster = Cluster().node("t4", cpu=16, memory="64Gi", gpus=1, gpu_model="T4",
                             gpu_partition={"mode": "time-slicing", "replicas": 2})
    r = _run(cluster, [job("a", 0, 100, cpu=1, gpus=1), job("b", 0, 100, cpu=1, gpus=1)])
    assert list(r.jobs["end_s"]) == [200.0, 200.0]


def test_a_tpu_slice_takes_a_contiguous_block_of_one_pool():
    cluster = Cluster().tpu_pool("v4", "v4", "4x4x4", cpu=240, memory="400Gi", provisioned=False)
    req = {"google.com/tpu": 4, "cloud.google.com/gke-tpu-accelerator": "tpu-v4-podslice",
           "cloud.google.com/gke-tpu-topology": "2x2x4"}
    r = _run(cluster, [job("slice", 0, 60, cpu=8, requests=req)])
    row = r.jobs.set_index("job").loc["slice"]
    assert row["tasks"] == 4
    hosts = row["placement"].split(";")
    assert hosts == [f"v4-{i:04d}{{tpu:4}}" for i in range(4)]


def test_an_unknown_mig_profile_is_a_catalog_error_naming_the_field():
    cluster = Cluster().node_group("h100", count=1, cpu=64, memory="512Gi", gpus=1, gpu_model="H100-80GB",
                                   gpu_partition={"mode": "mig", "dynamic": True})
    try:
        _run(cluster, [job("a", 0, 100, cpu=1, requests={"nvidia.com/mig-9g.99gb": 1})])
    except gpusched.CatalogError as e:
        assert e.id == "gpusched.catalog_error.403"
        assert "nvidia.com/mig-9g.99gb" in e.field
    else:
        raise AssertionError("no error")
