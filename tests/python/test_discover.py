"""Node discovery from saved nvidia-smi output: gpusched.discover(), `gpusched discover` and a
scenario's cluster.import entry. The samples in tests/data/nvidia-smi are written from the
documented formats (see the README there)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import gpusched

from conftest import REPO, cli

DATA = REPO / "tests" / "data" / "nvidia-smi"


def _files(stem, topo=None):
    return DATA / f"{stem}-query.xml", DATA / f"{topo or stem}-topo.txt"


def _scenario(cluster, jobs):
    return {"schema_version": 1, "name": "discovered", "seed": 1, "cluster": cluster, "profile": "first-fit",
            "workload": {"jobs": jobs}}


def _layout(node, g):
    return [f"{gi['profile']}@{gi['start']}" for gi in node["gpu_partition"]["layouts"][g]]


def test_an_hgx_a100_with_mig_becomes_a_node_with_its_gpu_instances():
    node = gpusched.discover(*_files("hgx-a100-mig"), name="hgx-01", memory="1Ti")
    assert node["name"] == "hgx-01"
    assert node["gpus"] == 4 and node["gpu_model"] == "A100-80GB"
    assert node["cpu"] == 64 and node["memory"] == "1048576Mi"
    assert node["topology"]["nvlink"] == "nvswitch"
    assert node["gpu_partition"]["mode"] == "mig"
    assert _layout(node, 0) == ["2g.20gb@0", "1g.10gb@2", "1g.10gb@3", "3g.40gb@4"]
    assert _layout(node, 2) == ["4g.40gb@0", "3g.40gb@4"]
    assert _layout(node, 3) == ["2g.20gb@0", "1g.20gb@2", "1g.10gb+me@4", "1g.10gb@5"]
    assert "dynamic" not in node["gpu_partition"]
    assert node["labels"]["nvidia.com/gpu.product"] == "NVIDIA-A100-SXM4-80GB"


def test_h200_with_lgip_h100_and_a_pcie_card_with_and_without_mig():
    q, t = _files("hgx-h200-mig", "hgx-h200")
    node = gpusched.discover(q, t, mig_lgip=DATA / "hgx-h200-mig-lgip.txt")
    assert node["gpu_model"] == "H200" and node["gpus"] == 8 and node["sockets"] == 2
    assert _layout(node, 0) == ["2g.35gb@0", "1g.18gb@2", "1g.18gb@3", "3g.71gb@4"]
    assert _layout(node, 6) == ["4g.71gb@0", "3g.71gb@4"]
    assert _layout(node, 7) == ["3g.71gb@0", "1g.35gb@4", "1g.18gb+me@6"]
    plain = gpusched.discover(*_files("hgx-h200"))
    assert "gpu_partition" not in plain and plain["labels"]["nvidia.com/gpu.memory"] == "143771"
    h100 = gpusched.discover(*_files("dgx-h100-mig", "dgx-h100"))
    assert h100["gpu_model"] == "H100-80GB"
    assert _layout(h100, 7) == ["1g.20gb@0", "1g.20gb@2", "1g.20gb@4", "1g.20gb@6"]
    assert "gpu_partition" not in gpusched.discover(*_files("dgx-h100"))
    nvl = gpusched.discover(*_files("pcie-h100nvl-mig"))
    assert nvl["gpu_model"] == "H100-NVL" and nvl["topology"]["gpu_sockets"] == [0, 1]
    assert _layout(nvl, 1) == ["3g.47gb@0", "3g.47gb@4"]
    pcie = gpusched.discover(*_files("pcie-a100x4"), name="pcie")
    assert pcie["gpu_model"] == "A100-80GB" and pcie["topology"]["nvlink"] == "none"
    assert pcie["topology"]["gpus_per_pcie_switch"] == 2 and "gpu_partition" not in pcie


def test_a_discovered_node_runs_in_a_scenario_and_its_mig_instances_are_used():
    node = gpusched.discover(*_files("hgx-a100-mig"), name="hgx", memory="1Ti")
    jobs = [{"id": f"j{i}", "submit_time": 0, "duration": 100,
             "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/mig-3g.40gb": 1}} for i in range(3)]
    sc = _scenario({"nodes": [node]}, jobs)
    info = gpusched.validate(sc)
    assert info["nodes"] == 1 and info["gpus"] == 4
    table = gpusched.run(sc).jobs.set_index("job")
    # GPU0 and GPU2 have one 3g.40gb each: the third job waits for one of them
    assert sorted(table["start_s"]) == [0.0, 0.0, 100.0]


def test_a_scenario_imports_a_machine_from_nvidia_smi_files(tmp_path):
    jobs = [{"id": "a", "submit_time": 0, "duration": 10, "requests": {"cpu": "1", "nvidia.com/gpu": 8}}]
    sc = _scenario({"import": [{"nvidia_smi_xml": str(DATA / "hgx-h200-query.xml"),
                                "topo": str(DATA / "hgx-h200-topo.txt"), "name": "h200-01", "memory": "2Ti"}]}, jobs)
    info = gpusched.validate(sc)
    assert info["nodes"] == 1 and info["gpus"] == 8
    # relative paths are relative to the scenario file
    (tmp_path / "sc.json").write_text(json.dumps(_scenario(
        {"import": [{"nvidia_smi_xml": "q.xml", "topo": "t.txt", "name": "n"}]}, jobs)))
    (tmp_path / "q.xml").write_text((DATA / "hgx-h200-query.xml").read_text())
    (tmp_path / "t.txt").write_text((DATA / "hgx-h200-topo.txt").read_text())
    assert gpusched.validate(tmp_path / "sc.json")["gpus"] == 8
    with pytest.raises(gpusched.ScenarioError) as e:
        gpusched.validate(_scenario({"import": [{"topo": "t.txt", "name": "n"}]}, jobs))
    assert e.value.field == "/cluster/import/0/nvidia_smi_xml"


def test_an_unknown_product_names_it_the_file_and_how_to_add_it(tmp_path):
    q = tmp_path / "q.xml"
    q.write_text((DATA / "hgx-h200-query.xml").read_text().replace("NVIDIA H200<", "NVIDIA Z900 96GB PCIe<", 1))
    with pytest.raises(gpusched.TraceError) as e:
        gpusched.discover(q, DATA / "hgx-h200-topo.txt")
    assert e.value.id == "gpusched.trace_error.105"
    assert e.value.file == str(q) and e.value.field == "nvidia_smi_log/gpu[0]/product_name" and e.value.line > 0
    assert "NVIDIA Z900 96GB PCIe" in str(e.value) and "gpu_models" in str(e.value)
    # ... and a catalog file with that alias makes it known
    models = tmp_path / "models.json"
    models.write_text(json.dumps([{"name": "Z900", "aliases": ["NVIDIA Z900 96GB PCIe"], "memory_mib": 143771, "sms": 100}]))
    with pytest.raises(gpusched.TraceError) as e:   # GPU0 is a Z900, the others H200s
        gpusched.discover(q, DATA / "hgx-h200-topo.txt", gpu_models=models)
    assert "one GPU model" in str(e.value)


def test_malformed_files_are_errors_naming_file_line_and_field(tmp_path):
    q = tmp_path / "q.xml"
    text = (DATA / "hgx-a100-mig-query.xml").read_text()
    q.write_text(text.replace("</pci_bus_id>", "</pci_bus_idx>", 1))
    with pytest.raises(gpusched.TraceError) as e:
        gpusched.discover(q, DATA / "hgx-a100-mig-topo.txt")
    assert e.value.id == "gpusched.trace_error.102" and e.value.file == str(q) and e.value.line > 0
    lgip = tmp_path / "lgip.txt"
    lgip.write_text((DATA / "hgx-h200-mig-lgip.txt").read_text().replace("16.00", "16,00", 1))
    with pytest.raises(gpusched.TraceError) as e:
        gpusched.discover(*_files("hgx-h200-mig", "hgx-h200"), mig_lgip=lgip)
    assert e.value.file == str(lgip) and e.value.line == 6 and e.value.field == "Memory"
    with pytest.raises(gpusched.TraceError) as e:
        gpusched.discover(DATA / "missing.xml", DATA / "hgx-h200-topo.txt")
    assert e.value.id == "gpusched.trace_error.101"


def test_the_cli_prints_the_node_json(tmp_path):
    q, t = _files("hgx-h200-mig", "hgx-h200")
    r = cli("discover", "--nvidia-smi-xml", q, "--topo", t, "--mig-lgip", DATA / "hgx-h200-mig-lgip.txt",
            "--name", "h200-01", "--memory", "2Ti")
    assert r.returncode == 0, r.stderr
    node = json.loads(r.stdout)
    assert node == gpusched.discover(q, t, mig_lgip=DATA / "hgx-h200-mig-lgip.txt", name="h200-01", memory="2Ti")
    assert "PCI bus ids" in r.stderr
    mixed = cli("discover", "--nvidia-smi-xml", DATA / "small-a30x2-nic-query.xml", "--topo", DATA / "small-a30x2-nic-topo.txt")
    assert mixed.returncode == 1
    assert "small-a30x2-nic-query.xml" in mixed.stderr and "mig_mode/current_mig" in mixed.stderr
