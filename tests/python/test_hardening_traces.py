"""Issue 13 (hardening) for traces and seeds: numeric trace fields outside their documented
ranges, values that round to nothing, and seeds outside 0..2**64-1 give the library's own error
(exit code 1 on the command line, an exception with a stable id, file, line and field in
Python), never a traceback, a wrapped value or a silently rounded one."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import gpusched

MODULE = [sys.executable, "-m", "gpusched"]
OUT_OF_RANGE = "gpusched.trace_error.110"
SEED_OUT_OF_RANGE = "gpusched.scenario_error.211"
MAX_SEED = 2**64 - 1

HEADER = "id,submit_time,duration,gang_timeout,walltime,cpu,memory,nvidia.com/gpu,gpusched.io/gpu-milli\n"
GOOD = "ok,0,10,,,1,1Gi,1,\n"


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(MODULE + list(args), cwd=cwd, capture_output=True, text=True, timeout=120)


def _check_cli_error(p: subprocess.CompletedProcess, ident: str, where: str, field: str) -> None:
    assert p.returncode == 1, (p.stdout, p.stderr)
    assert f"[{ident}]" in p.stderr and where in p.stderr and f"field '{field}':" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr
    assert p.stderr.count("\n") == 1, p.stderr   # one line


# ---------------------------------------------------------------- trace fields

BAD_ROWS = [
    # (row on line 3, field): times beyond the clock, and values that would round to nothing
    ("a,1e30,10,,,1,1Gi,1,", "submit_time"),
    ("b,0,1e11,,,1,1Gi,1,", "duration"),
    ("c,0,1e-30,,,1,1Gi,1,", "duration"),
    ("d,0,10,1e-30,,1,1Gi,1,", "gang_timeout"),
    ("e,0,10,,2e10,1,1Gi,1,", "walltime"),
    ("f,0,10,,,1e-30,1Gi,1,", "cpu"),
    ("g,0,10,,,1,1e-30,1,", "memory"),
    ("h,0,10,,,1,1Gi,1,0", "gpusched.io/gpu-milli"),
]


@pytest.mark.parametrize("row,field", BAD_ROWS, ids=[f for _, f in BAD_ROWS])
def test_gpusched_validate_rejects_an_out_of_range_trace_field_with_exit_1(tmp_path, row, field):
    (tmp_path / "jobs.csv").write_text(HEADER + GOOD + row + "\n", encoding="utf-8")
    _check_cli_error(_cli("validate", "jobs.csv", cwd=tmp_path), OUT_OF_RANGE, "jobs.csv:3:", field)


@pytest.mark.parametrize("row,field", BAD_ROWS, ids=[f for _, f in BAD_ROWS])
def test_python_validate_raises_trace_error_110_with_file_line_and_field(tmp_path, row, field):
    path = tmp_path / "jobs.csv"
    path.write_text(HEADER + GOOD + row + "\n", encoding="utf-8")
    with pytest.raises(gpusched.TraceError) as info:
        gpusched.validate(path)
    e = info.value
    assert e.id == OUT_OF_RANGE and e.code == 110 and e.category == "trace_error"
    assert e.file.endswith("jobs.csv") and e.line == 3 and e.field == field
    assert "out of range" in e.detail


def test_a_run_with_an_inline_job_of_a_1e_30_second_duration_is_rejected(tmp_path, small_path):
    doc = json.loads(small_path.read_text())
    doc["workload"] = {"jobs": [{"id": "tiny", "submit_time": 0, "duration": 1e-30, "requests": {"cpu": "1"}}]}
    with pytest.raises(gpusched.TraceError) as info:
        gpusched.run(doc)
    assert info.value.id == OUT_OF_RANGE and info.value.field == "duration" and info.value.line == 1


def test_a_kubectl_pod_asking_for_gpu_milli_0_is_rejected_at_its_line(tmp_path):
    pods = {"apiVersion": "v1", "kind": "List", "items": [
        {"kind": "Pod", "metadata": {"name": "p"},
         "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": "1", "gpusched.io/gpu-milli": "0"}}}]}}]}
    path = tmp_path / "pods.json"
    path.write_text(json.dumps(pods, indent=1), encoding="utf-8")
    p = _cli("validate", "pods.json", "--format", "kubectl-pods", cwd=tmp_path)
    _check_cli_error(p, OUT_OF_RANGE, "pods.json:", "items[0].spec.containers[0].resources.requests.gpusched.io/gpu-milli")
    # From Python, through a scenario that imports the list (gpusched.validate(path) takes a .json for a
    # scenario or profile file).
    doc = {"schema_version": 1, "name": "k", "profile": "binpack",
           "cluster": {"nodes": [{"name": "n", "cpu": "8", "memory": "32Gi"}]},
           "workload": {"trace": {"path": str(path), "format": "kubectl-pods"}}}
    with pytest.raises(gpusched.TraceError) as info:
        gpusched.run(doc)
    assert info.value.id == OUT_OF_RANGE and info.value.line and info.value.line > 1
    assert info.value.field.endswith("gpusched.io/gpu-milli")


def test_an_swf_log_with_a_submit_time_past_the_clock_is_rejected(tmp_path):
    (tmp_path / "log.swf").write_text("1 1e11 -1 10 1 -1 -1 1 -1 -1 1 1 1 1 1 -1 -1 -1\n", encoding="utf-8")
    _check_cli_error(_cli("validate", "log.swf", cwd=tmp_path), OUT_OF_RANGE, "log.swf:1:", "submit_time")


def test_a_scale_time_transform_past_the_clock_is_a_scenario_error_naming_the_step(tmp_path):
    (tmp_path / "jobs.csv").write_text("id,submit_time,duration,cpu,memory\na,0,10,1,1Gi\nb,5e9,10,1,1Gi\n", encoding="utf-8")
    doc = {"schema_version": 1, "name": "scaled", "profile": "binpack",
           "cluster": {"nodes": [{"name": "n", "cpu": "8", "memory": "32Gi"}]},
           "workload": {"trace": {"path": "jobs.csv", "transforms": [{"scale_time": 10}]}}}
    (tmp_path / "s.json").write_text(json.dumps(doc), encoding="utf-8")
    p = _cli("run", "s.json", "--out", "out", "--progress", "never", cwd=tmp_path)
    assert p.returncode == 1 and "[gpusched.scenario_error.211]" in p.stderr and "transforms/0/scale_time" in p.stderr, p.stderr
    assert "Traceback" not in p.stderr and not (tmp_path / "out" / "summary.json").exists()


# ---------------------------------------------------------------- seeds

@pytest.mark.parametrize("seed", ["-5", str(2**64), "99999999999999999999999"])
def test_cli_seed_outside_0_to_2_64_minus_1_is_one_error_with_exit_1(tmp_path, small_path, seed):
    p = _cli("run", str(small_path), "--seed", seed, "--out", "out", "--progress", "never", cwd=tmp_path)
    assert p.returncode == 1, p.stderr
    assert p.stderr.startswith(f"gpusched: error: [{SEED_OUT_OF_RANGE}] command line: field '--seed': {seed} is out of range")
    assert "Traceback" not in p.stderr


@pytest.mark.parametrize("seed", [-5, 2**64, 10**30])
def test_python_run_seed_outside_the_range_raises_scenario_error(small_path, seed):
    with pytest.raises(gpusched.ScenarioError) as info:
        gpusched.run(small_path, seed=seed)
    e = info.value
    assert e.id == SEED_OUT_OF_RANGE and e.code == 211 and e.field == "seed"
    assert str(e).startswith(f"[{SEED_OUT_OF_RANGE}] field 'seed': {seed} is out of range")
    assert isinstance(e, gpusched.GpuschedError)


def test_a_seed_that_is_not_a_whole_number_is_a_bad_value_not_a_type_error(small_path):
    for bad in (1.5, "7", True):
        with pytest.raises(gpusched.ScenarioError) as info:
            gpusched.run(small_path, seed=bad)
        assert info.value.id == "gpusched.scenario_error.203"


def test_the_largest_seed_runs_and_distinct_large_seeds_do_not_collide(small_path):
    top = gpusched.run(small_path, seed=MAX_SEED)
    below = gpusched.run(small_path, seed=MAX_SEED - 1)
    assert top.stamp["seed"] == MAX_SEED and below.stamp["seed"] == MAX_SEED - 1


def test_scenario_builder_sweep_and_fgd_check_seeds_the_same_way():
    cluster = gpusched.Cluster().node_group("n", count=2, cpu=8, memory="32Gi")
    with pytest.raises(gpusched.ScenarioError) as info:
        gpusched.Scenario(cluster, "binpack", gpusched.synthetic(jobs=5), seed=-1)
    assert info.value.id == SEED_OUT_OF_RANGE
    sc = gpusched.Scenario(cluster, "binpack", gpusched.synthetic(jobs=5), seed=MAX_SEED)
    assert sc.to_dict()["seed"] == MAX_SEED
    with pytest.raises(gpusched.ScenarioError) as info:
        gpusched.sweep(sc, seeds=[1, 2**64], progress=False)
    assert info.value.id == SEED_OUT_OF_RANGE and info.value.field == "seeds"
    import gpusched.experiments as ex
    with pytest.raises(gpusched.ScenarioError) as info:
        ex.fgd("/nonexistent", seeds=[-1])
    assert info.value.id == SEED_OUT_OF_RANGE
    with pytest.raises(gpusched.ScenarioError) as info:
        ex.fgd("/nonexistent", seeds=f"1-{2**64}")
    assert info.value.id == SEED_OUT_OF_RANGE
