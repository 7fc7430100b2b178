"""Shared fixtures for the gpusched Python tests (run: pytest -q tests/python after pip install .)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Dict

import pytest

import gpusched

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples"
# Real traces: ../shared/traces beside the repository, or $GPUSCHED_TRACES_DIR.
TRACES = Path(os.environ.get("GPUSCHED_TRACES_DIR", REPO.parent / "shared" / "traces"))
OPENB = TRACES / "alibaba-gpu-v2023-openb"
needs_openb = pytest.mark.skipif(
    not (OPENB / "openb_pod_list_default.csv").exists(),
    reason=f"the Alibaba openb trace is not in {OPENB} (set GPUSCHED_TRACES_DIR)",
)


def cli(*args, cwd=None, timeout=300):
    """`python -m gpusched ARGS...` as a subprocess (text output captured)."""
    return subprocess.run([sys.executable, "-m", "gpusched", *map(str, args)], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout)


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def small_path() -> Path:
    return EXAMPLES / "small.json"


@pytest.fixture(scope="session")
def demo_result() -> gpusched.Result:
    """The built-in demo at its default seed (42), run once for the whole session."""
    return gpusched.run("demo")


def medium_scenario(jobs: int = 3000, seed: int = 5, name: str = "medium") -> Dict[str, Any]:
    """A synthetic scenario that runs in well under a second."""
    return {
        "schema_version": 1,
        "name": name,
        "seed": seed,
        "cluster": {
            "node_groups": [
                {"name": "a100", "count": 40, "cpu": "128", "memory": "1Ti", "gpus": 8, "gpu_model": "A100-80GB"},
                {"name": "t4", "count": 20, "cpu": "64", "memory": "256Gi", "gpus": 4, "gpu_model": "T4"},
                {"name": "cpu", "count": 10, "cpu": "96", "memory": "384Gi"},
            ]
        },
        "profile": "binpack",
        "workload": {"synthetic": {"jobs": jobs, "load": 1.2, "queues": ["a", "b"]}},
        "outputs": {"sample_interval_s": 600},
    }


@pytest.fixture
def base_cluster() -> Dict[str, Any]:
    """One 8-GPU A100 node: a base for error fixtures."""
    return {"nodes": [{"name": "n0", "cpu": "32", "memory": "256Gi", "gpus": 8, "gpu_model": "A100-80GB"}]}


def write_json(path: Path, doc: Any) -> Path:
    path.write_text(json.dumps(doc, indent=2) + "\n", encoding="utf-8")
    return path
