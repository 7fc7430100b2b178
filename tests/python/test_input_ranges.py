"""Issue 13, classes 1 and 2, through the user's entry points: numbers beyond the clock, counts
beyond memory and positive amounts that round to nothing are ``scenario_error.211`` naming the
file and the field, from ``gpusched validate`` / ``gpusched run`` (exit 1, one line, no
traceback) and from ``gpusched.run`` / ``gpusched.validate`` (ScenarioError)."""

from __future__ import annotations

import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Callable, Dict

import pytest

import gpusched


def _base() -> Dict[str, Any]:
    return {
        "schema_version": 1,
        "name": "ranges",
        "seed": 1,
        "horizon_s": 100000,
        "cluster": {
            "nodes": [
                {"name": "gpu-a", "cpu": "32", "memory": "256Gi", "gpus": 4, "gpu_model": "A100-80GB"},
                {"name": "cpu-a", "cpu": "64", "memory": "256Gi"},
            ],
            "node_groups": [{"name": "g", "count": 2, "cpu": 8, "memory": "32Gi", "autoscale": {"min": 0}}],
        },
        "profile": "binpack",
        "workload": {"jobs": [
            {"id": "a", "submit_time": 0, "duration": 60, "requests": {"cpu": "1", "memory": "1Gi", "nvidia.com/gpu": 1}},
            {"id": "b", "submit_time": 5, "duration": 60, "requests": {"cpu": "1", "memory": "1Gi"}},
        ]},
        "events": [{"time_s": 10, "node": "cpu-a", "type": "node_down"}],
        "outputs": {"sample_interval_s": 60},
    }


def _with(change: Callable[[Dict[str, Any]], None]) -> Dict[str, Any]:
    doc = _base()
    change(doc)
    return doc


def _synthetic(**settings: Any) -> Callable[[Dict[str, Any]], None]:
    return lambda d: d.__setitem__("workload", {"synthetic": settings})


# The issue's examples and their neighbours: (name, field, change).
CASES = [
    ("horizon", "/horizon_s", lambda d: d.__setitem__("horizon_s", 1e30)),
    ("mig-reconfigure", "/devices/mig_reconfigure_s", lambda d: d.__setitem__("devices", {"mig_reconfigure_s": 1e30})),
    ("scan-interval", "/autoscaler/scan_interval_s", lambda d: d.__setitem__("autoscaler", {"scan_interval_s": 1e30})),
    ("event-time", "/events/0/time_s", lambda d: d["events"][0].__setitem__("time_s", 1e30)),
    ("synthetic-jobs", "/workload/synthetic/jobs", _synthetic(jobs=1e30, load=0.5)),
    ("gang-fraction", "/workload/synthetic/gang_fraction", _synthetic(jobs=10, load=0.5, gang_fraction=2.0)),
    ("tiny-cpu", "/cluster/nodes/1/cpu", lambda d: d["cluster"]["nodes"][1].__setitem__("cpu", 1e-30)),
    ("tiny-memory", "/cluster/nodes/1/memory", lambda d: d["cluster"]["nodes"][1].__setitem__("memory", 1e-30)),
    ("huge-sample-interval", "/outputs/sample_interval_s", lambda d: d["outputs"].__setitem__("sample_interval_s", 1e30)),
    ("tiny-sample-interval", "/outputs/sample_interval_s", lambda d: d["outputs"].__setitem__("sample_interval_s", 1e-30)),
    ("checkpoint-interval", "/preemption/checkpoint_interval_s",
     lambda d: d.__setitem__("preemption", {"restart": "checkpoint", "checkpoint_interval_s": 1e30})),
    ("provisioning-delay", "/cluster/node_groups/0/autoscale/provisioning_delay_s",
     lambda d: d["cluster"]["node_groups"][0]["autoscale"].__setitem__("provisioning_delay_s", 1e30)),
    ("pods-ready-timeout", "/wait_for_pods_ready/timeout_s", lambda d: d.__setitem__("wait_for_pods_ready", {"timeout_s": 1e30})),
    ("group-count", "/cluster/node_groups/0/count", lambda d: d["cluster"]["node_groups"][0].__setitem__("count", 1e30)),
    ("slowdown", "/devices/slowdown/vgpu", lambda d: d.__setitem__("devices", {"slowdown": {"vgpu": 1e30}})),
    ("seed", "/seed", lambda d: d.__setitem__("seed", 2**64)),
    ("negative-time", "/events/0/time_s", lambda d: d["events"][0].__setitem__("time_s", -1)),
]


@pytest.mark.parametrize("name,field,change", CASES, ids=[c[0] for c in CASES])
def test_python_run_and_validate_raise_a_scenario_error_naming_the_field(name, field, change):
    doc = _with(change)
    for call in (lambda: gpusched.validate(doc, source=f"{name}.json"), lambda: gpusched.run(doc, source=f"{name}.json")):
        with pytest.raises(gpusched.ScenarioError) as info:
            call()
        e = info.value
        assert e.id == "gpusched.scenario_error.211"
        assert e.file == f"{name}.json" and e.field == field
        assert "is out of range" in str(e)


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpusched", *args], cwd=cwd, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize("name,field,change", CASES[:10], ids=[c[0] for c in CASES[:10]])
def test_the_cli_exits_1_with_one_line_naming_the_file_and_field(name, field, change, tmp_path):
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(_with(change)), encoding="utf-8")
    for args in (("validate", str(path)), ("run", str(path), "--out", str(tmp_path / "out"), "--quiet")):
        r = _cli(*args, cwd=tmp_path)
        assert r.returncode == 1, (args, r.stdout, r.stderr)
        assert "Traceback" not in r.stderr
        lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
        assert len(lines) == 1, r.stderr
        assert "[gpusched.scenario_error.211]" in lines[0]
        assert f"{name}.json" in lines[0] and f"field '{field}'" in lines[0]
        assert not (tmp_path / "out" / "summary.json").exists()


def test_the_issue_message_format(tmp_path):
    with pytest.raises(gpusched.ScenarioError) as info:
        gpusched.validate(_with(lambda d: d.__setitem__("horizon_s", 1e30)), source="s.json")
    assert str(info.value) == "[gpusched.scenario_error.211] s.json: field '/horizon_s': 1e+30 is out of range: must be <= 1e+10 (seconds)"


def test_the_largest_times_are_accepted_and_the_run_ends_at_non_negative_times():
    """At the bounds nothing overflows: the run's times stay on the clock and jobs end after they start."""
    doc = _base()
    doc["horizon_s"] = None
    doc["events"][0]["time_s"] = 1e10
    doc["workload"]["jobs"][0]["duration"] = 1e9
    doc["devices"] = {"mig_reconfigure_s": 1e10, "slowdown": {"pcie": 10, "cross_socket": 10}}
    doc["outputs"]["sample_interval_s"] = 1e10
    result = gpusched.run(doc)
    jobs = result.jobs
    assert (jobs["start_s"] >= 0).all() and (jobs["end_s"] >= jobs["start_s"]).all()
    assert jobs["end_s"].max() >= 1e9
    assert result.summary["jobs"]["completed"] == 2
