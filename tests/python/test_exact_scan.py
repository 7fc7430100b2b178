"""The node index never changes an output: ``gpusched.run(..., exact_scan=True)`` (the plain scan
of every node, ``gpusched run --exact-scan``) gives the same DataFrames and the same output bytes
as the default run, on random small scenarios over every feature (MIG static and dynamic, vGPU,
time-slicing, MPS, passthrough, GPU shares, HAMi, gangs, quotas, preemption, node events; the
invariant generator of tests/python/invariants) under every built-in profile, and on the demo
through the command line.

A failure names the seed, the profile and the first differing line; rebuild the scenario with
``invariants.generator.generate(seed)`` and set its profile as ``_with_profile`` does.
"""

from __future__ import annotations

import copy
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict, List, Tuple

import pytest

import gpusched
from conftest import medium_scenario
from invariants.generator import FEATURES, feature_of, generate

#: Seeds of the random scenarios: two per primary feature by default.
SCENARIOS = int(os.environ.get("GPUSCHED_EXACT_SCAN_SCENARIOS", str(2 * len(FEATURES))))
SEEDS = list(range(1000, 1000 + SCENARIOS))

#: Every built-in profile, in the library's order.
PROFILES: List[str] = list(gpusched.profiles())

#: Kueue ClusterQueues for the random scenarios' queues (a, b, default), in one cohort.
_KUEUE = {
    "extends": "kueue-cohorts",
    "name": "kueue-test",
    "filter": [{"name": "capacity-queues", "args": {
        "cohorts": {"org": {}},
        "default_queue": "default",
        "queues": {
            q: {"cohort": "org", "flavors": [{"name": "default", "resources": {
                "nvidia.com/gpu": {"nominal_quota": n, "borrowing_limit": 2},
                "cpu": {"nominal_quota": 64 * n}}}]}
            for q, n in (("a", 2), ("b", 4), ("default", 3))}}}],
}


def _with_profile(doc: Dict[str, Any], profile: Any) -> Dict[str, Any]:
    """`doc` under `profile` (a built-in name or a profile object); a generated profile object
    (quota, preemption) keeps its plugins and extends the new built-in instead."""
    d = copy.deepcopy(doc)
    if isinstance(profile, str) and isinstance(d.get("profile"), dict):
        d["profile"]["extends"] = profile
    else:
        d["profile"] = copy.deepcopy(profile)
    d.setdefault("outputs", {})["event_log"] = True
    return d


def _first_difference(a: List[Tuple[str, bytes]], b: List[Tuple[str, bytes]]) -> str:
    da, db = dict(a), dict(b)
    if sorted(da) != sorted(db):
        return f"files {sorted(da)} with the index, {sorted(db)} with exact_scan"
    for name in sorted(da):
        if da[name] == db[name]:
            continue
        la, lb = da[name].decode().splitlines(), db[name].decode().splitlines()
        for i in range(max(len(la), len(lb))):
            x = la[i] if i < len(la) else "<end>"
            y = lb[i] if i < len(lb) else "<end>"
            if x != y:
                return f"{name} line {i + 1}:\n  index:      {x}\n  exact_scan: {y}"
        return f"{name}: differs in line endings"
    return ""


def _files(r: gpusched.Result) -> List[Tuple[str, bytes]]:
    from gpusched.result import _output_files

    return _output_files(r.raw)


def _same_run(doc: Dict[str, Any], label: str) -> bool:
    """Runs `doc` with and without exact_scan and compares every output file; False when the
    scenario is refused (the same way both times)."""
    try:
        fast = gpusched.run(doc)
    except gpusched.GpuschedError as e:
        # A profile that cannot serve this cluster (e.g. a device it does not place) must refuse
        # it the same way with the plain scan.
        with pytest.raises(type(e)) as again:
            gpusched.run(doc, exact_scan=True)
        assert str(again.value) == str(e), label
        return False
    exact = gpusched.run(doc, exact_scan=True)
    diff = _first_difference(_files(fast), _files(exact))
    assert diff == "", f"{label}: {diff}"
    return True


@pytest.mark.parametrize("seed", SEEDS, ids=lambda s: f"{feature_of(s)}-{s}")
def test_random_scenario_same_outputs_under_every_profile(seed: int) -> None:
    doc = generate(seed)
    label = f"seed {seed} ({feature_of(seed)})"
    assert _same_run(_with_profile(doc, doc["profile"]), f"{label}, its own profile")
    ran = sum(_same_run(_with_profile(doc, name), f"{label}, profile {name}") for name in PROFILES)
    assert ran >= len(PROFILES) - 2, f"{label}: only {ran} of {len(PROFILES)} built-in profiles ran"
    assert _same_run(_with_profile(doc, _KUEUE), f"{label}, kueue-cohorts with queues")


@pytest.mark.parametrize("profile", ["binpack", "kube-default", "best-fit", "fgd", "slurm-backfill"])
def test_exact_scan_gives_the_same_dataframes(profile: str) -> None:
    doc = medium_scenario(jobs=1500, name=f"medium-{profile}")
    doc["profile"] = profile
    doc["outputs"]["event_log"] = True
    fast = gpusched.run(doc)
    exact = gpusched.run(doc, exact_scan=True)
    for table in ("jobs", "timeseries", "events", "placements", "fragmentation"):
        a, b = getattr(fast, table), getattr(exact, table)
        assert a.equals(b), f"{profile}: {table} differs"
    assert fast.summary == exact.summary   # exact_scan is not an input: same digest and summary
    assert fast.event_log == exact.event_log


def test_exact_scan_is_keyword_only_and_defaults_off() -> None:
    import inspect

    p = inspect.signature(gpusched.run).parameters["exact_scan"]
    assert p.kind is inspect.Parameter.KEYWORD_ONLY
    assert p.default is False


def _cli(args: List[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "gpusched", *args], cwd=cwd, capture_output=True, text=True,
                          timeout=600)


def _tree(folder: Path) -> Dict[str, bytes]:
    # timeseries.png is drawn by the Python wrapper after the run (matplotlib), not by gpusched.
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir()) if p.suffix != ".png"}


def test_cli_demo_exact_scan_writes_the_same_bytes(tmp_path: Path) -> None:
    a = _cli(["demo", "--out", str(tmp_path / "index"), "--progress", "never", "--quiet"], tmp_path)
    assert a.returncode == 0, a.stderr
    b = _cli(["demo", "--out", str(tmp_path / "exact"), "--progress", "never", "--quiet", "--exact-scan"], tmp_path)
    assert b.returncode == 0, b.stderr
    fa, fb = _tree(tmp_path / "index"), _tree(tmp_path / "exact")
    assert sorted(fa) == sorted(fb)
    assert "summary.json" in fa and "jobs.csv" in fa
    diff = _first_difference(sorted(fa.items()), sorted(fb.items()))
    assert diff == "", diff


def test_cli_run_exact_scan_writes_the_same_bytes(tmp_path: Path, repo: Path) -> None:
    small = repo / "examples" / "devices.json"
    for flag in ([], ["--exact-scan"]):
        p = _cli(["run", str(small), "--out", str(tmp_path / ("exact" if flag else "index")), "--quiet", *flag], tmp_path)
        assert p.returncode == 0, p.stderr
    diff = _first_difference(sorted(_tree(tmp_path / "index").items()), sorted(_tree(tmp_path / "exact").items()))
    assert diff == "", diff
    h = _cli(["run", "--help"], tmp_path)
    assert "--exact-scan" in h.stdout
