"""The command line through subprocess: python -m gpusched and the gpusched script."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

MODULE = [sys.executable, "-m", "gpusched"]


def _script() -> list:
    """The installed `gpusched` console script, next to this interpreter or on PATH."""
    here = Path(sys.executable).parent / "gpusched"
    found = str(here) if here.exists() else shutil.which("gpusched")
    if not found:
        pytest.skip("the gpusched console script is not installed (pip install .)")
    return [found]


def _run(cmd, cwd=None):
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=120)


def test_python_m_gpusched_demo_writes_outputs_and_a_plot(tmp_path):
    out = tmp_path / "demo"
    p = _run(MODULE + ["demo", "--out", str(out), "--progress", "never"])
    assert p.returncode == 0, p.stderr
    assert "20000 jobs" in p.stdout
    for name in ("summary.json", "jobs.csv", "timeseries.csv", "report.md"):
        assert (out / name).exists(), name
    pytest.importorskip("matplotlib")
    assert (out / "timeseries.png").read_bytes()[:4] == b"\x89PNG"
    report = (out / "report.md").read_text()
    assert report.rstrip().endswith("## Plot\n\n![](timeseries.png)")
    assert "timeseries.png" in p.stdout


def test_run_without_out_uses_the_default_folder(tmp_path, small_path):
    p = _run(_script() + ["run", str(small_path), "--quiet"], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert p.stdout == ""
    out = tmp_path / "out" / "small"
    assert (out / "events.csv").exists()
    pytest.importorskip("matplotlib")
    assert (out / "timeseries.png").exists()
    assert "![](timeseries.png)" in (out / "report.md").read_text()


def test_validate_an_example(small_path, repo):
    p = _run(_script() + ["validate", "examples/small.json"], cwd=repo)
    assert p.returncode == 0, p.stderr
    assert p.stdout.startswith("OK  scenario examples/small.json: small, 4 nodes, 10 GPUs")


def test_a_bad_file_exits_1_with_the_error_id(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"schema_version": 1, "cluster": {"nodes": []}, "workload": {"jobs": []}}')
    p = _run(_script() + ["validate", str(bad)])
    assert p.returncode == 1
    assert "[gpusched.scenario_error." in p.stderr and "bad.json" in p.stderr


def test_wrong_usage_exits_2_and_help_exits_0(tmp_path):
    assert _run(MODULE + ["no-such-command"]).returncode == 2
    assert _run(MODULE + ["run"]).returncode == 2
    assert _run(MODULE).returncode == 2
    p = _run(MODULE + ["--help"], cwd=tmp_path)
    assert p.returncode == 0 and "demo" in p.stdout and "validate" in p.stdout
    assert not (tmp_path / "out").exists()


def test_version_and_policies():
    p = _run(MODULE + ["version"])
    assert p.returncode == 0 and p.stdout.startswith("gpusched ")
    p = _run(MODULE + ["policies"])
    assert p.returncode == 0 and "node-resources-fit" in p.stdout


def test_run_profile_overrides_the_scenarios_profile(tmp_path, small_path):
    # --profile before the scenario: the wrapper must still find the scenario (and draw its plot).
    p = _run(MODULE + ["run", "--profile", "first-fit", str(small_path), "--progress", "never"], cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert "profile first-fit" in p.stdout and "warning" not in p.stderr
    out = tmp_path / "out" / "small"
    summary = json.loads((out / "summary.json").read_text())
    meta = json.loads((out / "meta.json").read_text())
    assert summary["profile"] == meta["profile"] == "first-fit"
    assert summary["inputs"]["scenario"]["profile"] == "first-fit"
    assert "| profile | first-fit |" in (out / "report.md").read_text()
    # A profile file, named after the file; the scenario's own profile gives other placements.
    prof = tmp_path / "spread-gpus.json"
    prof.write_text(json.dumps({"extends": "default", "device_select": "gpu-spread"}))
    p = _run(_script() + ["run", str(small_path), "--out", str(tmp_path / "f"), "--profile", str(prof), "--quiet"])
    assert p.returncode == 0, p.stderr
    resolved = json.loads((tmp_path / "f" / "summary.json").read_text())["inputs"]["profile"]
    assert resolved["name"] == "spread-gpus" and resolved["device_select"]["name"] == "gpu-spread"
    assert resolved["description"] == "extends default"
    plain = _run(_script() + ["run", str(small_path), "--out", str(tmp_path / "p"), "--quiet"])
    assert plain.returncode == 0
    assert (tmp_path / "p" / "jobs.csv").read_text() != (out / "jobs.csv").read_text()
    # Errors: exit 1 with the id, nothing written.
    p = _run(MODULE + ["run", str(small_path), "--out", str(tmp_path / "bad"), "--profile", "fastest"])
    assert p.returncode == 1 and "[gpusched.profile_error.306] --profile" in p.stderr
    assert not (tmp_path / "bad").exists()
    assert "--profile" in _run(MODULE + ["run", "--help"]).stdout
