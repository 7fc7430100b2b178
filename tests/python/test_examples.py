"""The runnable examples in examples/*.py: each runs as a user would (a subprocess, from a folder
outside the checkout) in its quick mode, and prints what it promises. One test per example."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"


def _example(name: str, *args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(EXAMPLES / name), *args], cwd=cwd, capture_output=True, text=True,
                          timeout=120)


def test_compare_presets_prints_mean_and_sd_per_preset_and_saves_a_plot(tmp_path):
    png = tmp_path / "presets.png"
    p = _example("compare_presets.py", "--quick", "--plot", str(png), cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    out = p.stdout
    assert "50 runs: 5 presets x 10 seeds" in out
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    for preset in ("default", "binpack", "best-fit", "fgd", "slurm-backfill"):
        assert preset in lines, out
        assert lines[preset].count("±") == 3 and lines[preset].rstrip().endswith("10"), lines[preset]
    assert "shortest mean wait:" in out
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert "plot: skipped" in out
    else:
        assert f"plot: {png}" in out and png.stat().st_size > 10_000
    assert "gpusched sweep" not in p.stderr   # no progress bar when stderr is not a terminal


def test_rl_env_runs_a_random_and_a_best_fit_agent_and_a_builtin_profile(tmp_path):
    import pytest

    pytest.importorskip("gymnasium", reason="gymnasium is not installed (pip install .[gym])")
    p = _example("rl_env.py", "--quick", cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    rows = {}
    for line in p.stdout.splitlines():
        for name in ("random agent", "best-fit agent", "profile default"):
            if line.startswith(name):
                rows[name] = line[len(name):].split()
    assert set(rows) == {"random agent", "best-fit agent", "profile default"}, p.stdout
    assert all(r[0] == "50" for r in rows.values()), p.stdout              # every job completed
    assert len(rows["random agent"]) == len(rows["best-fit agent"]) == 7   # steps and return for the agents
    assert len(rows["profile default"]) == 5
    # Best-fit keeps more of the cluster's GPUs allocated than random while jobs arrive.
    assert float(rows["best-fit agent"][3]) >= float(rows["random agent"][3]), p.stdout
    assert "8 nodes, seed 1" in p.stdout
