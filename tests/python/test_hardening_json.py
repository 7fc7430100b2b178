"""Bad JSON and bad bytes through the user's entry points (gpusched.run / validate / sweep and the
``gpusched`` command): deep nesting, numbers beyond a double, kubectl files that are not kubectl
lists, invalid UTF-8 and syntax errors next to non-ASCII text are gpusched errors with an id, the
file and the line or field — never a crash, a UnicodeDecodeError or a traceback (issue 13)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import pytest

import gpusched
from conftest import write_json

DEEP = 200_000   # about 400 KB of brackets: segfaulted the parser before issue 13


def _scenario(base_cluster: Dict[str, Any], workload: Dict[str, Any]) -> Dict[str, Any]:
    return {"schema_version": 1, "name": "j", "cluster": base_cluster, "profile": "binpack", "workload": workload}


def _deep_scenario(tmp_path: Path) -> Path:
    path = tmp_path / "deep.json"
    path.write_text('{"name": "deep",\n"cluster": ' + "[" * DEEP + "]" * DEEP + "}\n", encoding="utf-8")
    return path


def _cli(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    """``python -m gpusched ARGS`` as a user runs it."""
    return subprocess.run([sys.executable, "-m", "gpusched", *args], cwd=cwd, capture_output=True, timeout=120)


def _check_cli_error(p: subprocess.CompletedProcess, expected: str) -> str:
    err = p.stderr.decode("utf-8")   # valid UTF-8, or this raises
    assert p.returncode == 1, err
    assert expected in err, err
    assert "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    return err


# ---------------------------------------------------------------- deep nesting


def test_a_scenario_nested_200000_levels_is_a_scenario_error_210(tmp_path: Path) -> None:
    path = _deep_scenario(tmp_path)
    for call in (gpusched.run, gpusched.validate):
        with pytest.raises(gpusched.ScenarioError) as info:
            call(path)
        e = info.value
        assert e.id == "gpusched.scenario_error.210" and e.code == 210
        assert e.file == str(path) and e.line == 2
        assert "deeper than 256 levels" in e.detail


def test_deep_json_text_and_sweep_base_are_scenario_errors(tmp_path: Path) -> None:
    text = '{"name": "deep", "cluster": ' + "[" * DEEP + "]" * DEEP + "}"
    with pytest.raises(gpusched.ScenarioError) as info:
        gpusched.run(text)
    assert info.value.id == "gpusched.scenario_error.210"
    with pytest.raises(gpusched.ScenarioError) as info:
        gpusched.sweep(_deep_scenario(tmp_path), seeds=[1])
    assert info.value.id == "gpusched.scenario_error.210" and info.value.line == 2


def test_cli_deep_nesting_exits_1_with_one_line(tmp_path: Path) -> None:
    path = _deep_scenario(tmp_path)
    _check_cli_error(_cli("validate", str(path), cwd=tmp_path), f"[gpusched.scenario_error.210] {path}:2:")
    _check_cli_error(_cli("run", str(path), "--out", str(tmp_path / "out"), cwd=tmp_path),
                     "[gpusched.scenario_error.210]")
    assert not (tmp_path / "out").exists()


# ---------------------------------------------------------------- numbers beyond a double


def test_1e999_in_a_scenario_is_out_of_range_with_its_field(tmp_path: Path, base_cluster: Dict[str, Any]) -> None:
    text = json.dumps(_scenario(base_cluster, {"synthetic": {"jobs": 5}}), indent=1).replace(
        '"name": "j"', '"name": "j",\n "seed": 1e999')
    path = tmp_path / "s.json"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(gpusched.ScenarioError) as info:
        gpusched.run(path)
    e = info.value
    assert e.id == "gpusched.scenario_error.211" and e.field == "/seed" and e.file == str(path) and e.line == 4
    assert "1e999 is out of range" in str(e)
    with pytest.raises(gpusched.ScenarioError) as info:
        gpusched.validate(text)   # JSON text, not a file
    assert info.value.id == "gpusched.scenario_error.211" and info.value.file == "<string>"
    _check_cli_error(_cli("validate", str(path), cwd=tmp_path), f"[gpusched.scenario_error.211] {path}:4: field '/seed'")


def test_1e999_in_a_json_lines_trace_is_a_trace_error_110(tmp_path: Path, base_cluster: Dict[str, Any]) -> None:
    trace = tmp_path / "jobs.jsonl"
    trace.write_text('{"id": "a", "submit_time": 0, "duration": 5, "requests": {"cpu": 1}}\n'
                     '{"id": "b", "submit_time": 0, "duration": -1e999, "requests": {"cpu": 1}}\n', encoding="utf-8")
    scenario = write_json(tmp_path / "s.json", _scenario(base_cluster, {"trace": "jobs.jsonl"}))
    for call, arg in ((gpusched.run, scenario), (gpusched.validate, trace)):
        with pytest.raises(gpusched.TraceError) as info:
            call(arg)
        e = info.value
        assert e.id == "gpusched.trace_error.110" and e.file.endswith("jobs.jsonl") and e.line == 2
        assert e.field == "duration"
    _check_cli_error(_cli("convert", str(trace), str(tmp_path / "o.csv"), cwd=tmp_path),
                     f"[gpusched.trace_error.110] {trace}:2: field 'duration'")
    assert not (tmp_path / "o.csv").exists()


def _pods(cpu: str) -> str:
    return ('{"apiVersion": "v1", "kind": "List", "items": [\n'
            '{"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},\n'
            ' "spec": {"containers": [{"name": "c", "resources": {"requests": {"cpu": ' + cpu + '}}}]}}]}\n')


def test_1e999_in_a_kubectl_file_is_a_trace_error_110(tmp_path: Path, base_cluster: Dict[str, Any]) -> None:
    pods = tmp_path / "pods.json"
    pods.write_text(_pods("1e999"), encoding="utf-8")
    scenario = write_json(tmp_path / "s.json", _scenario(base_cluster, {"trace": "pods.json"}))
    with pytest.raises(gpusched.TraceError) as info:
        gpusched.run(scenario)
    e = info.value
    assert e.id == "gpusched.trace_error.110" and e.file.endswith("pods.json") and e.line == 3
    assert e.field == "items[0].spec.containers[0].resources.requests.cpu"
    _check_cli_error(_cli("validate", str(pods), cwd=tmp_path), f"[gpusched.trace_error.110] {pods}:3:")


# ---------------------------------------------------------------- format auto-detection


@pytest.mark.parametrize("doc,field,says", [
    ({"apiVersion": "v1", "kind": 5, "items": []}, "kind", "kind is number, not a string"),
    ({"kind": "List", "items": [{"kind": {"x": 1}}]}, "items[0].kind", "kind is object, not a string"),
    ([{"kind": "Pod"}], None, "the document is a JSON array, not an object"),
    ("Pod", None, "the document is a JSON string, not an object"),
])
def test_a_json_trace_that_is_not_a_kubectl_list_is_a_trace_error(
        tmp_path: Path, base_cluster: Dict[str, Any], doc: Any, field: str, says: str) -> None:
    write_json(tmp_path / "t.json", doc)
    scenario = write_json(tmp_path / "s.json", _scenario(base_cluster, {"trace": "t.json"}))
    with pytest.raises(gpusched.TraceError) as info:
        gpusched.run(scenario)
    e = info.value
    assert e.id == "gpusched.trace_error.102" and e.file.endswith("t.json") and e.field == field
    assert says in e.detail
    _check_cli_error(_cli("convert", str(tmp_path / "t.json"), str(tmp_path / "o.jsonl"), cwd=tmp_path), says)


# ---------------------------------------------------------------- UTF-8


def test_invalid_utf8_in_a_csv_job_name_fails_validate_and_convert(tmp_path: Path, base_cluster: Dict[str, Any]) -> None:
    trace = tmp_path / "jobs.csv"
    trace.write_bytes(b"id,submit_time,duration,cpu\nok,0,5,1\nj\xff1,0,5,1\n")
    with pytest.raises(gpusched.TraceError) as info:
        gpusched.validate(trace)
    e = info.value
    assert e.id == "gpusched.trace_error.102" and e.line == 3 and e.field == "id"
    assert "invalid UTF-8 (byte 0xFF at position 2)" in e.detail
    scenario = write_json(tmp_path / "s.json", _scenario(base_cluster, {"trace": "jobs.csv"}))
    with pytest.raises(gpusched.TraceError):
        gpusched.run(scenario)
    _check_cli_error(_cli("validate", str(trace), cwd=tmp_path), f"[gpusched.trace_error.102] {trace}:3: field 'id'")
    for out in ("o.jsonl", "o.csv"):
        _check_cli_error(_cli("convert", str(trace), str(tmp_path / out), cwd=tmp_path), "invalid UTF-8")
        assert not (tmp_path / out).exists()


def test_invalid_utf8_in_a_csv_node_name_fails_convert(tmp_path: Path) -> None:
    nodes = tmp_path / "nodes.csv"
    nodes.write_bytes(b"sn,cpu_milli,memory_mib,gpu,model\nnode\xc3-1,64000,262144,2,V100M32\n")
    _check_cli_error(_cli("convert", "--from", "openb-nodes", str(nodes), str(tmp_path / "c.json"), cwd=tmp_path),
                     f"[gpusched.trace_error.102] {nodes}:2: field 'sn': invalid UTF-8")
    assert not (tmp_path / "c.json").exists()


def test_invalid_utf8_in_a_json_name_is_an_error_at_read_time(tmp_path: Path, base_cluster: Dict[str, Any]) -> None:
    text = json.dumps(_scenario(base_cluster, {"synthetic": {"jobs": 5}})).encode().replace(b'"n0"', b'"n\xc30"')
    path = tmp_path / "s.json"
    path.write_bytes(text)
    with pytest.raises(gpusched.ScenarioError) as info:
        gpusched.validate(path)
    e = info.value
    assert e.id == "gpusched.scenario_error.202" and e.field == "/cluster/nodes/0/name" and "UTF-8" in e.detail
    trace = tmp_path / "jobs.jsonl"
    trace.write_bytes(b'{"id": "j\xc3(", "submit_time": 0, "duration": 5, "requests": {"cpu": 1}}\n')
    with pytest.raises(gpusched.TraceError) as info:
        gpusched.validate(trace)
    assert info.value.id == "gpusched.trace_error.102" and info.value.line == 1 and info.value.field == "id"


def test_a_syntax_error_next_to_non_ascii_is_a_scenario_error(tmp_path: Path) -> None:
    text = '{"name": "héllo",\n "cluster": é}'
    with pytest.raises(gpusched.ScenarioError) as info:   # not UnicodeDecodeError
        gpusched.run(text)
    e = info.value
    assert e.id == "gpusched.scenario_error.202" and e.line == 2
    assert "column 13" in e.detail and "\\xC3" in e.detail
    path = tmp_path / "s.json"
    path.write_text(text, encoding="utf-8")
    for call in (gpusched.run, gpusched.validate):
        with pytest.raises(gpusched.ScenarioError) as info:
            call(path)
        assert info.value.id == "gpusched.scenario_error.202" and info.value.file == str(path) and info.value.line == 2
    _check_cli_error(_cli("validate", str(path), cwd=tmp_path), f"[gpusched.scenario_error.202] {path}:2:")


def test_a_file_that_is_not_utf8_at_all_is_a_scenario_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.json"
    path.write_bytes('{"name": "café"}'.encode("latin-1"))
    for call in (gpusched.run, gpusched.validate):
        with pytest.raises(gpusched.ScenarioError) as info:
            call(path)
        assert info.value.id == "gpusched.scenario_error.202" and "UTF-8" in info.value.detail
    with pytest.raises(gpusched.ScenarioError):
        gpusched.sweep(path, seeds=[1])
