"""Kubernetes DRA from Python: gpusched.dra and `python -m gpusched dra` on the example claims."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

import gpusched
import gpusched.dra as dra

REPO = Path(__file__).resolve().parents[2]
CLAIMS = REPO / "examples" / "dra" / "claims.yaml"


@pytest.fixture()
def slices_file(tmp_path):
    listing = dra.slices(REPO / "examples" / "devices.json")
    kinds = sorted({item["kind"] for item in listing["items"]})
    assert kinds == ["DeviceClass", "ResourceSlice"]
    path = tmp_path / "slices.json"
    path.write_text(json.dumps(listing))
    return path


def test_the_example_claims_are_allocated_where_their_constraints_hold(slices_file):
    table = dra.allocate(slices_file, CLAIMS)
    assert table["pending"].isna().all()
    per_claim = table.groupby("claim", sort=False)
    assert list(per_claim.size()) == [4, 2, 1, 1]
    nvlink = table[table["claim"] == "training/four-gpus-one-nvlink-domain"]
    assert set(nvlink["node"]) == {"hgx-0000"}
    assert list(nvlink["device"]) == ["gpu-0", "gpu-1", "gpu-2", "gpu-3"]
    assert table[table["claim"] == "inference/mig-3g"]["device"].item() == "gpu-0-mig-9-4-4"
    assert table[table["claim"] == "research/hopper-else-ada"]["request"].item() == "gpu/hopper"


def test_a_claim_on_a_named_node_that_cannot_hold_it_stays_pending_with_the_reason(slices_file):
    raw = dra.allocate_raw(slices_file, CLAIMS, node="t4-shared-0000")
    assert raw[0] == {"claim": "training/four-gpus-one-nvlink-domain", "pending": "cannot allocate all claims on any node"}
    # Turing has no architecture 'Hopper'; its compute capability 7.5 is below 8.9.
    assert raw[3]["pending"] == "cannot allocate all claims on any node"


def test_a_selector_outside_the_cel_subset_is_an_error_naming_file_line_and_field(tmp_path, slices_file):
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: resource.k8s.io/v1\nkind: ResourceClaim\nmetadata: {name: c}\nspec:\n  devices:\n    requests:\n"
        "    - name: r\n      exactly:\n        deviceClassName: gpu.nvidia.com\n        selectors:\n"
        "        - cel: {expression: \"device.attributes['gpu.nvidia.com'].?index.orValue(0) == 0\"}\n"
    )
    with pytest.raises(gpusched.ScenarioError) as e:
        dra.allocate(slices_file, bad)
    assert e.value.file == str(bad)
    assert e.value.line == 11
    assert e.value.field.endswith("/spec/devices/requests/0/exactly/selectors/0/cel/expression")


def test_the_command_line_prints_the_same_allocation(slices_file):
    out = subprocess.run([sys.executable, "-m", "gpusched", "dra", "allocate", str(slices_file), str(CLAIMS), "--json"],
                         capture_output=True, text=True, check=True).stdout
    assert json.loads(out) == dra.allocate_raw(slices_file, CLAIMS)


TEMPLATE = {
    "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "pair"},
    "spec": {"spec": {"devices": {
        "requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}],
        "constraints": [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}]}}},
}


def _pcie_cluster():
    from gpusched import Cluster

    return Cluster().node_group("pcie", count=1, cpu=64, memory="512Gi", gpus=4, gpu_model="A100-80GB",
                                topology={"gpus_per_pcie_switch": 2})


def _pair_scenario():
    """One 4-GPU node (two PCIe switches); "one" takes a GPU, "pair" claims two behind one switch."""
    from gpusched import Scenario, job, jobs

    profile = {"name": "kube-dra", "filter": [{"name": "node-resources-fit"}, {"name": "dynamic-resources"}],
               "score": [{"name": "first-fit"}], "device_select": {"name": "dynamic-resources"}}
    return Scenario(cluster=_pcie_cluster(), profile=profile, dra_objects=[TEMPLATE], workload=jobs([
        job("one", 0, 600, cpu=4, memory="16Gi", gpus=1),
        job("pair", 1, 300, cpu=8, memory="32Gi", claim_template="pair"),
    ]))


def test_jobs_with_claims_from_the_python_builders_take_gpus_behind_one_pcie_switch():
    table = gpusched.run(_pair_scenario()).jobs
    placed = dict(zip(table["job"], table["placement"]))
    assert placed["one"] == "pcie-0000[0]"
    assert placed["pair"] == "pcie-0000[2,3]"


def test_result_claims_names_the_devices_and_requests_and_survives_pickling(tmp_path):
    import pickle

    from gpusched import Scenario, job, jobs

    result = gpusched.run(_pair_scenario())
    claims = result.claims
    assert list(claims.columns) == ["job", "task", "node", "claim_template", "request", "driver", "pool", "device",
                                    "admin_access"]
    assert claims.to_dict("records") == [
        {"job": "pair", "task": 0, "node": "pcie-0000", "claim_template": "pair", "request": "gpus",
         "driver": "gpu.nvidia.com", "pool": "pcie-0000", "device": f"gpu-{i}", "admin_access": False}
        for i in (2, 3)]
    # The same table crosses a process boundary, and claims.csv holds the same rows.
    again = pickle.loads(pickle.dumps(result))
    assert again.claims.equals(claims)
    again.write(tmp_path / "out")
    import pandas as pd

    pd.testing.assert_frame_equal(pd.read_csv(tmp_path / "out" / "claims.csv"), claims, check_dtype=False)

    # No claim: an empty table with the same columns, and no file.
    plain = gpusched.run(Scenario(cluster=_pcie_cluster(), profile="first-fit", workload=jobs([job("one", 0, 600, gpus=1)])))
    assert plain.claims.empty and list(plain.claims.columns) == list(claims.columns)
    plain.write(tmp_path / "plain")
    assert not (tmp_path / "plain" / "claims.csv").exists()


def test_firstavailable_alternatives_of_different_sizes_take_what_the_chosen_one_takes():
    # examples/dra/alternatives.json: four H100s, else eight A100s (docs/dra.md).
    result = gpusched.run(REPO / "examples" / "dra" / "alternatives.json")
    placed = dict(zip(result.jobs["job"], result.jobs["placement"]))
    assert placed["train-1"] == "h100-0000[0,1,2,3]"
    assert placed["train-3"] == "a100-0000[0,1,2,3,4,5,6,7]"
    claims = result.claims
    per_job = claims.groupby("job")["request"].agg(["first", "size"]).to_dict("index")
    assert per_job["train-1"] == {"first": "gpus/h100", "size": 4}
    assert per_job["train-3"] == {"first": "gpus/a100", "size": 8}
    # The request column is the smallest alternative.
    assert set(result.jobs["gpus"]) == {4}


def test_a_shared_resource_claim_is_allocated_once_and_kept_while_a_job_uses_it():
    # docs/dra.md "Shared claims": jobs name one ResourceClaim (job(resource_claim=...)).
    from gpusched import Cluster, Scenario, job, jobs

    two_nodes = Cluster().node_group("pcie", count=2, cpu=64, memory="512Gi", gpus=4, gpu_model="A100-80GB",
                                     topology={"gpus_per_pcie_switch": 2})
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim", "metadata": {"name": "pair"},
             "spec": {"devices": {"requests": [{"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": 2}}],
                                  "constraints": [{"matchAttribute": "resource.kubernetes.io/pcieRoot"}]}}}
    profile = {"name": "kube-dra", "filter": [{"name": "node-resources-fit"}, {"name": "dynamic-resources"}],
               "score": [{"name": "first-fit"}], "device_select": {"name": "dynamic-resources"}}
    sc = Scenario(cluster=two_nodes, profile=profile, dra_objects=[claim], workload=jobs([
        job("first", 0, 100, cpu=2, resource_claim="pair"),
        job("second", 1, 300, cpu=2, resource_claim="pair"),
        job("plain", 150, 100, cpu=2, gpus=4),
    ]))
    table = gpusched.run(sc).jobs
    placed = dict(zip(table["job"], table["placement"]))
    start = dict(zip(table["job"], table["start_s"]))
    assert placed["first"] == "pcie-0000[0,1]"
    assert placed["second"].startswith("pcie-0000")    # beside the claim's devices
    # At 150 s "first" has ended but "second" still uses the claim: the 4-GPU job goes elsewhere.
    assert placed["plain"] == "pcie-0001[0,1,2,3]" and start["plain"] == 150.0


def test_jobs_holding_nics_through_claims_show_them_in_claims_and_placements():
    # examples/dra/gpu-nic-jobs.json: GPUs with RDMA NICs on one PCIe root (docs/dra.md, "NICs in
    # simulations"), beside plain nvidia.com/gpu jobs.
    result = gpusched.run(REPO / "examples" / "dra" / "gpu-nic-jobs.json")
    assert (result.jobs["state"] == "completed").all()
    claims = result.claims
    nics = claims[claims["driver"] == "dra.net"]
    gpus = claims[claims["driver"] == "gpu.nvidia.com"]
    # One NIC per GPU for every claim job; the plain jobs hold none.
    assert nics.groupby("job").size().to_dict() == gpus.groupby("job").size().to_dict()
    assert set(nics["job"]) == {j for j in result.jobs["job"] if j.startswith("pair-")}
    assert set(nics["request"]) == {"nic", "nics"}
    placed = dict(zip(result.jobs["job"], result.jobs["placement"]))
    assert placed["pair-0"] == "hgx-0000[0,1]{nic:0,4}"
    assert "{nic:" not in placed["plain-0"]
