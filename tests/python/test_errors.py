"""Bad input raises the matching exception class with a stable id and a location."""

from __future__ import annotations

import pytest

import gpusched
from conftest import write_json


def _scenario(cluster, workload, profile="binpack"):
    return {"schema_version": 1, "name": "bad", "cluster": cluster, "profile": profile, "workload": workload}


def _run_trace(tmp_path, base_cluster, text):
    trace = tmp_path / "jobs.csv"
    trace.write_text(text, encoding="utf-8")
    scenario = write_json(tmp_path / "scenario.json", _scenario(base_cluster, {"trace": "jobs.csv"}))
    return gpusched.run(scenario), trace


def test_a_trace_missing_a_required_column_is_a_trace_error(tmp_path, base_cluster):
    with pytest.raises(gpusched.TraceError) as info:
        _run_trace(tmp_path, base_cluster, "id,duration,cpu,memory\nj1,10,1,1Gi\n")
    e = info.value
    assert e.id == "gpusched.trace_error.103" and e.code == 103 and e.category == "trace_error"
    assert e.file.endswith("jobs.csv") and e.line == 1 and e.field == "submit_time"
    assert str(e).startswith("[gpusched.trace_error.103]") and "jobs.csv:1" in str(e)
    assert isinstance(e, gpusched.GpuschedError) and isinstance(e, Exception)


def test_a_negative_request_is_a_quantity_error_at_its_line_and_column(tmp_path, base_cluster):
    with pytest.raises(gpusched.QuantityError) as info:
        _run_trace(tmp_path, base_cluster, "id,submit_time,duration,cpu,memory\nok,0,10,1,1Gi\nneg,5,10,-2,1Gi\n")
    e = info.value
    assert e.id == "gpusched.quantity_error.501"
    assert e.file.endswith("jobs.csv") and e.line == 3 and e.field == "cpu"
    assert "negative" in e.detail


def test_an_unknown_gpu_model_is_a_catalog_error(tmp_path, base_cluster):
    with pytest.raises(gpusched.CatalogError) as info:
        _run_trace(
            tmp_path, base_cluster,
            "id,submit_time,duration,gpu_model,cpu,memory,nvidia.com/gpu\na,0,10,,1,1Gi,1\nb,0,10,H900,1,1Gi,1\n",
        )
    e = info.value
    assert e.id == "gpusched.catalog_error.401"
    assert e.file.endswith("jobs.csv") and e.line == 3 and e.field == "gpu_model"
    assert "H900" in str(e) and "A100-80GB" in str(e)   # names the known models


def test_a_job_bigger_than_every_node_is_unplaceable(tmp_path, base_cluster):
    with pytest.raises(gpusched.TraceError) as info:
        _run_trace(
            tmp_path, base_cluster,
            "id,submit_time,duration,cpu,memory,nvidia.com/gpu\nfits,0,10,1,1Gi,8\nhuge,0,10,1,1Gi,16\n",
        )
    e = info.value
    assert e.id == "gpusched.trace_error.106"
    assert e.file.endswith("jobs.csv") and e.line == 3 and e.field == "requests"
    assert "huge" in e.detail


def test_a_profile_naming_an_unknown_plugin_is_a_profile_error(tmp_path, base_cluster):
    doc = _scenario(
        base_cluster,
        {"jobs": [{"id": "a", "submit_time": 0, "duration": 5, "requests": {"cpu": "1", "memory": "1Gi"}}]},
        profile={"name": "mine", "extends": "default", "score": [{"name": "no-such-plugin", "weight": 1}]},
    )
    path = write_json(tmp_path / "scenario.json", doc)
    with pytest.raises(gpusched.ProfileError) as info:
        gpusched.run(path)
    e = info.value
    assert e.id == "gpusched.profile_error.301"
    assert e.file is not None and e.field is not None and "score" in e.field
    assert e.line is None   # profiles are located by JSON path, not by line
    assert "no-such-plugin" in str(e) and "gpu-binpack" in str(e)   # lists the known plugins
    # The same check without running anything.
    with pytest.raises(gpusched.ProfileError):
        gpusched.validate(path)


def test_invalid_json_is_a_scenario_error_with_its_line(tmp_path):
    path = tmp_path / "broken.json"
    path.write_text('{\n  "schema_version": 1,\n  "cluster": ]\n}\n', encoding="utf-8")
    with pytest.raises(gpusched.ScenarioError) as info:
        gpusched.run(path)
    e = info.value
    assert e.id == "gpusched.scenario_error.202"
    assert e.file == str(path) and e.line == 3 and e.field is None


def test_an_inline_job_error_names_the_scenario_and_the_job(base_cluster):
    doc = _scenario(base_cluster, {"jobs": [
        {"id": "a", "submit_time": 0, "requests": {"cpu": "1", "memory": "1Gi"}},
        {"id": "b", "submit_time": 0, "requests": {"cpu": "lots", "memory": "1Gi"}},
    ]})
    with pytest.raises(gpusched.QuantityError) as info:
        gpusched.run(doc, source="inline.json")
    assert info.value.file.startswith("inline.json") and info.value.line == 2


def test_a_missing_scenario_file_is_a_scenario_error(tmp_path):
    with pytest.raises(gpusched.ScenarioError) as info:
        gpusched.run(tmp_path / "nope.json")
    assert info.value.id == "gpusched.scenario_error.201"
