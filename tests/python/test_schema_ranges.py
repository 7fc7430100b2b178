"""The numeric ranges in schemas/scenario.schema.json and the ranges the code checks agree.

The test walks the schema (following its local $refs) to every number or integer that has a
``minimum``, ``maximum`` or ``exclusiveMinimum``. For each, it finds the field in one of a few
small valid scenarios (every ranged field must appear in one: that is the coverage check), puts
a value just outside the range there and asserts gpusched rejects it with
``scenario_error.211`` naming that field; then it puts the bound itself there and asserts the
scenario is accepted (the schema agrees with the document either way).
"""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Tuple, Union

import pytest

import gpusched
from conftest import REPO

SCHEMA_PATH = REPO / "schemas" / "scenario.schema.json"
SCHEMA: Dict[str, Any] = json.loads(SCHEMA_PATH.read_text(encoding="utf-8"))

ITEM = ("item",)        # any element of an array
ANY_KEY = ("any",)      # any key of an object (additionalProperties)
Segment = Union[str, int, Tuple[str]]

# Subtrees another reader checks, with its own error family: the profile (policies,
# profile_error.3xx), GPU models (the catalog), pod disruption budgets (the priority-preemption
# plugin). They are tested where those readers live.
OTHER_READERS = ("/$defs/profile", "/$defs/score_ref", "/$defs/gpu_model", "/$defs/mig", "/$defs/vgpu",
                 "/properties/pod_disruption_budgets")

# Bounds the schema can only give at their widest: the code's bound depends on the document.
# Values outside the schema's range are still checked; at the schema's bound the code may reject
# the value for this document (the reason says how), so that check is skipped.
_NODE_DEPENDENT = {
    "/cluster/nodes/*/topology/nvlink/*/0": "a GPU index: at most the node's GPU count - 1",
    "/cluster/nodes/*/topology/nvlink/*/1": "a GPU index: at most the node's GPU count - 1",
    "/cluster/nodes/*/topology/gpu_sockets/*": "a socket: the node has `sockets` sockets",
    "/cluster/nodes/*/gpu_partition/layout/*/start": "a memory slice: at most the GPU's memory_slices - 1",
}
DOCUMENT_DEPENDENT = {
    **{k.replace("/cluster/nodes/", prefix): v for k, v in _NODE_DEPENDENT.items()
       for prefix in ("/cluster/nodes/", "/cluster/node_groups/")},
    "/cluster/node_groups/*/count": "10^6 nodes in one group; the cluster as a whole also has at most 10^6 nodes",
    "/cluster/node_groups/*/autoscale/min": "at most the group's count",
    "/workload/synthetic/jobs": "10^7 jobs is valid but validate generates them (gigabytes); the C++ tests check "
                                "that the reader accepts the bound",
    "/workload/synthetic/duration_min_s": "duration_min_s <= duration_max_s",
    "/workload/synthetic/duration_max_s": "duration_min_s <= duration_max_s",
    "/workload/synthetic/load": "a load so high or low is valid; validate generates the arrivals",
    "/workload/synthetic/arrival_rate_per_hour": "with load > 0 the rate is unused",
}


def _resolve(ref: str) -> Tuple[str, Dict[str, Any]]:
    assert ref.startswith("#/"), f"only local $refs are followed here: {ref}"
    node: Any = SCHEMA
    for part in ref[2:].split("/"):
        node = node[int(part)] if isinstance(node, list) else node[part]
    return ref[1:], node


def _is_numeric(node: Dict[str, Any]) -> bool:
    t = node.get("type")
    types = t if isinstance(t, list) else [t]
    return "number" in types or "integer" in types


def ranged_fields() -> Iterator[Tuple[List[Segment], Dict[str, Any], str]]:
    """(document path, schema node, schema pointer) of every ranged number the scenario can hold."""
    seen = set()

    def walk(node: Any, doc: List[Segment], ptr: str, depth: int) -> Iterator[Tuple[List[Segment], Dict[str, Any], str]]:
        if not isinstance(node, dict) or depth > 40 or ptr.startswith(OTHER_READERS):
            return
        if "$ref" in node:
            if not node["$ref"].startswith("#/"):
                return   # another schema file (the trace schema: its reader's own tests)
            rptr, target = _resolve(node["$ref"])
            yield from walk(target, doc, rptr, depth + 1)
        if _is_numeric(node) and any(k in node for k in ("minimum", "maximum", "exclusiveMinimum")):
            key = (tuple(doc), ptr)
            if key not in seen:
                seen.add(key)
                yield list(doc), node, ptr
        for k, sub in node.get("properties", {}).items():
            yield from walk(sub, doc + [k], f"{ptr}/properties/{k}", depth + 1)
        if isinstance(node.get("additionalProperties"), dict):
            yield from walk(node["additionalProperties"], doc + [ANY_KEY], f"{ptr}/additionalProperties", depth + 1)
        if isinstance(node.get("items"), dict):
            yield from walk(node["items"], doc + [ITEM], f"{ptr}/items", depth + 1)
        for i, sub in enumerate(node.get("prefixItems", [])):
            yield from walk(sub, doc + [i], f"{ptr}/prefixItems/{i}", depth + 1)
        for combo in ("oneOf", "anyOf", "allOf"):
            for i, sub in enumerate(node.get(combo, [])):
                yield from walk(sub, doc, f"{ptr}/{combo}/{i}", depth + 1)

    yield from walk(SCHEMA, [], "", 0)


def _pattern(doc: List[Segment]) -> str:
    return "/" + "/".join("*" if isinstance(s, tuple) else str(s) for s in doc)


# ------------------------------------------------------------------ base documents


def _cluster() -> Dict[str, Any]:
    nodes = [
        {"name": "n0", "cpu": 64, "memory": 68719476736, "gpus": 2, "gpu_model": "A100-80GB", "sockets": 2,
         "extended": {"rdma/hca": 1},
         "topology": {"numa": [{"cpu": 32, "memory": "32Gi"}, {"cpu": 32, "memory": "32Gi"}],
                      "gpu_sockets": [0, 1], "gpus_per_pcie_switch": 1, "nvlink": [[0, 1, 2]]},
         "nics": [{"gpu": 0}, {"socket": 1, "rdma": False}]},   # NICs: a list, an object and a count
        {"name": "mig", "cpu": 16, "memory": "64Gi", "gpus": 1, "gpu_model": "A100-80GB",
         "gpu_partition": {"mode": "mig", "layout": [{"profile": "1g.10gb", "start": 0}]}, "nics": {"count": 2, "rdma": True}},
        {"name": "ts", "cpu": 16, "memory": "64Gi", "gpus": 1, "gpu_model": "T4",
         "gpu_partition": {"mode": "time-slicing", "replicas": 2}, "nics": 1},
        {"name": "ts2", "cpu": 16, "memory": "64Gi", "gpus": 2, "gpu_model": "T4",
         "gpu_partition": {"mode": "time-slicing", "replicas": [2, 3], "fail_requests_greater_than_one": True,
                           "rename_by_default": True}},
        {"name": "tpu", "cpu": 8, "memory": "32Gi", "tpu": {"generation": "v4", "chips_per_host": 4}},
    ]
    # Every node field again in a node group (a group's template is a node), the first autoscaled.
    groups = [dict(copy.deepcopy(n), name=f"g{n['name']}", count=1) for n in nodes]
    groups[0]["count"] = 2
    groups[0]["autoscale"] = {"min": 0, "provisioning_delay_s": 10, "scale_down_idle_s": 10}
    return {"node_groups": groups, "nodes": nodes}


def _base(workload: Dict[str, Any]) -> Dict[str, Any]:
    return {
        "schema_version": 1,
        "name": "ranges",
        "seed": 1,
        "horizon_s": 100000,
        "cluster": _cluster(),
        "devices": {"mig_reconfigure_s": 1, "time_slicing_overhead": 0.1, "replica_allocation": "device-plugin",
                    "slowdown": {"vgpu": 1.1, "passthrough": 1.1, "mig": 1.1, "pcie": 1.1, "cross_socket": 1.1}},
        "priority_classes": {"hi": 100, "lo": {"value": 1}},
        "preemption": {"restart": "checkpoint", "checkpoint_interval_s": 60, "restart_overhead_s": 5},
        "autoscaler": {"scan_interval_s": 10},
        "wait_for_pods_ready": {"timeout_s": 60,
                                "requeuing": {"backoff_limit_count": 3, "backoff_base_s": 1, "backoff_max_s": 10}},
        "events": [{"time_s": 5, "node": "n0", "type": "node_down"}],
        "outputs": {"sample_interval_s": 60},
        "workload": workload,
    }


SYNTHETIC = {"jobs": 5, "load": 0.5, "arrival_rate_per_hour": 10, "duration_median_s": 60, "duration_sigma": 1,
             "duration_min_s": 1, "duration_max_s": 100,
             "mix": {"cpu_only": 1, "fractional": 1, "gpu1": 1, "gpu2": 1, "gpu4": 1, "gpu8": 1},
             "gang_fraction": 0.5}
TRACE_CSV = "id,submit_time,duration,cpu,memory,nvidia.com/gpu\na,0,60,1,1Gi,1\nb,30,60,1,1Gi,1\nc,90,60,1,1Gi,2\n"


def base_documents() -> List[Dict[str, Any]]:
    return [
        _base({"synthetic": copy.deepcopy(SYNTHETIC)}),
        _base({"trace": {"path": "jobs.csv",
                         "transforms": [{"resample_gpu_pct": 100}, {"scale_time": 1}, {"target_load": 0.5}]}}),
    ]


def locate(doc: Any, path: List[Segment]) -> Optional[List[Union[str, int]]]:
    """The concrete path in `doc` matching `path` whose leaf exists, or None."""
    if not path:
        return []
    head, rest = path[0], path[1:]
    if head == ITEM or isinstance(head, int):
        if not isinstance(doc, list):
            return None
        indices = range(len(doc)) if head == ITEM else ([head] if head < len(doc) else [])
        for i in indices:
            sub = locate(doc[i], rest)
            if sub is not None:
                return [i] + sub
        return None
    if not isinstance(doc, dict):
        return None
    keys = list(doc) if head == ANY_KEY else ([head] if head in doc else [])
    for k in keys:
        sub = locate(doc[k], rest)
        if sub is not None:
            return [k] + sub
    return None


def _set(doc: Any, path: List[Union[str, int]], value: Any) -> None:
    for p in path[:-1]:
        doc = doc[p]
    doc[path[-1]] = value


def _outside_and_bound(node: Dict[str, Any]) -> List[Tuple[str, Any, Any]]:
    """(which bound, a value just outside, the bound itself or the closest accepted value)."""
    integer = node.get("type") == "integer" or (isinstance(node.get("type"), list) and "integer" in node["type"]
                                                 and "number" not in node["type"])
    out = []
    if "maximum" in node:
        m = node["maximum"]
        out.append(("maximum", m + 1 if integer else m * (1 + 1e-9) if m > 0 else m + 1e-9, m))
    if "minimum" in node:
        m = node["minimum"]
        out.append(("minimum", m - 1 if integer else (m * (1 - 1e-9) if m > 0 else m - 1e-9), m))
    if "exclusiveMinimum" in node:
        m = node["exclusiveMinimum"]
        out.append(("exclusiveMinimum", m, m + 1 if integer else math.nextafter(m, math.inf)))
    return out


FIELDS = list(ranged_fields())
CASES = [(doc, node, ptr, which, bad, good)
         for doc, node, ptr in FIELDS for which, bad, good in _outside_and_bound(node)]


def _validate(doc: Dict[str, Any], tmp_path: Path) -> Dict[str, Any]:
    (tmp_path / "jobs.csv").write_text(TRACE_CSV, encoding="utf-8")
    return gpusched.validate(doc, source="ranges.json", base_dir=tmp_path)


def test_the_walk_finds_the_ranged_fields():
    patterns = {_pattern(d) for d, _, _ in FIELDS}
    for expected in ("/horizon_s", "/devices/mig_reconfigure_s", "/autoscaler/scan_interval_s", "/events/*/time_s",
                     "/workload/synthetic/jobs", "/workload/synthetic/gang_fraction", "/cluster/nodes/*/cpu",
                     "/outputs/sample_interval_s", "/seed"):
        assert expected in patterns, sorted(patterns)
    assert len(FIELDS) >= 50


def test_the_base_documents_are_valid(tmp_path):
    for doc in base_documents():
        _validate(doc, tmp_path)


@pytest.mark.parametrize("doc_path,node,ptr,which,bad,good", CASES,
                         ids=[f"{_pattern(c[0])}:{c[3]}" for c in CASES])
def test_schema_and_code_agree_on_the_range(doc_path, node, ptr, which, bad, good, tmp_path):
    placed = None
    for base in base_documents():
        where = locate(base, doc_path)
        if where is not None:
            placed = (base, where)
            break
    assert placed is not None, f"no base document holds {_pattern(doc_path)} ({ptr}): add it to base_documents()"
    base, where = placed
    field = "/" + "/".join(str(p) for p in where)

    outside = copy.deepcopy(base)
    _set(outside, where, bad)
    with pytest.raises(gpusched.ScenarioError) as info:
        _validate(outside, tmp_path)
    e = info.value
    assert e.id == "gpusched.scenario_error.211", f"{field} = {bad!r}: {e}"
    assert e.field == field, f"{field} = {bad!r}: {e}"
    assert e.file == "ranges.json"
    assert "out of range" in str(e)

    if _pattern(doc_path) in DOCUMENT_DEPENDENT:
        return   # the schema's bound is the largest possible; this document's is tighter (see the reason)
    at_bound = copy.deepcopy(base)
    _set(at_bound, where, good)
    try:
        _validate(at_bound, tmp_path)   # accepted
    except gpusched.GpuschedError as e:
        # The range check accepts the bound; only a rule joining it to other fields of this
        # document may object (NUMA zones add up to the node, a TPU generation's host sizes).
        assert e.id != "gpusched.scenario_error.211", f"{field} = {good!r} (the schema's bound): {e}"
        assert not (e.id == "gpusched.scenario_error.203" and e.field == field), f"{field} = {good!r}: {e}"


def test_values_that_round_to_nothing_are_out_of_range_as_the_schema_says(tmp_path):
    """The schema's node_cpu / node_memory exclude positive amounts the model would round to 0."""
    import jsonschema

    validator = jsonschema.Draft202012Validator(SCHEMA)
    for field, tiny in (("cpu", 1e-30), ("memory", 1e-30), ("cpu", 1e-13)):
        doc = base_documents()[0]
        doc["cluster"]["nodes"][0][field] = tiny
        assert list(validator.iter_errors(doc)), (field, tiny)
        with pytest.raises(gpusched.ScenarioError) as info:
            _validate(doc, tmp_path)
        assert info.value.id == "gpusched.scenario_error.211"
        assert info.value.field == f"/cluster/nodes/0/{field}"
