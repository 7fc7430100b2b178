"""Scheduling policies written in Python with numpy, used like built-in plugins.

    python examples/numpy_policies.py            # compare them with built-ins on a synthetic cluster
    python examples/numpy_policies.py --fgd      # also replay the FGD protocol (needs the openb trace)

Each policy gets one call per decision with every candidate node as numpy arrays
(gpusched.NodeView), so it costs microseconds, not one Python call per node.

- ``NumpyBestFit``: the FGD paper's Best-fit, exactly as the built-in ``best-fit`` scores it:
  100 x (1 - [0.5 (free CPU - request) / largest node CPU + 0.5 (free GPU - request) / largest
  node GPU]). Placed with the built-in profile's GPU choice, it decides as the built-in does
  (tests/python/test_python_plugins.py checks this on the FGD protocol, seed 42).
- ``TetrisDotProduct``: Tetris-style alignment (Grandl et al., SIGCOMM'14): prefer the node whose
  free CPU, memory and GPU, each as a share of the largest node, line up best with the request
  (the dot product of the two vectors).
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

import gpusched


class NumpyBestFit:
    """The FGD paper's Best-fit in numpy: least normalised free CPU and GPU left after placing."""

    normalize = "none"   # the scores below already lie in [0, 100], like the built-in's
    node_local = True    # answers depend only on the request and the nodes: the engine may skip equal jobs

    def __init__(self, cpu_weight: float = 0.5, gpu_weight: float = 0.5) -> None:
        self.cpu_weight = cpu_weight
        self.gpu_weight = gpu_weight

    def score(self, job, nodes):
        max_cpu = max(1.0, float(nodes.max_cpu_milli))
        max_gpu = max(1.0, float(nodes.max_gpu_milli))
        gpu_request = job.gpus * job.gpu_milli
        cpu_left = (nodes.cpu_free_milli - job.cpu_milli) / max_cpu
        gpu_left = (nodes.gpu_milli_free - gpu_request) / max_gpu
        return np.clip(100.0 * (1.0 - (self.cpu_weight * cpu_left + self.gpu_weight * gpu_left)), 0.0, 100.0)


class TetrisDotProduct:
    """Tetris-like alignment: the dot product of the request and the node's free resources."""

    node_local = True

    def score(self, job, nodes):
        max_cpu = max(1.0, float(nodes.max_cpu_milli))
        max_mem = max(1.0, float(nodes.max_memory_mib))
        max_gpu = max(1.0, float(nodes.max_gpu_milli))
        demand = np.array([job.cpu_milli / max_cpu, job.memory_mib / max_mem, job.gpus * job.gpu_milli / max_gpu])
        free = np.stack(
            [nodes.cpu_free_milli / max_cpu, nodes.memory_free_mib / max_mem, nodes.gpu_milli_free / max_gpu], axis=1
        )
        return free @ demand   # min-max normalised to 0..100 by the runner


def register() -> None:
    """Registers both policies under the names the profiles below use (idempotent)."""
    gpusched.register_plugin("numpy-best-fit", NumpyBestFit, replace=True)
    gpusched.register_plugin("tetris-dot", TetrisDotProduct, replace=True)


def best_fit_profile(score: str) -> dict:
    """The built-in "best-fit" profile with its score plugin swapped for ``score``."""
    profile = dict(gpusched.profiles()["best-fit"])
    profile["name"] = f"best-fit[{score}]"
    profile["description"] = f"the built-in best-fit profile scored by {score}"
    profile["score"] = [{"name": score, "weight": 1}]
    return profile


def synthetic_scenario(jobs: int) -> gpusched.Scenario:
    cluster = (
        gpusched.Cluster()
        .node_group("a100", count=24, cpu=96, memory="768Gi", gpus=8, gpu_model="A100-80GB")
        .node_group("t4", count=24, cpu=48, memory="192Gi", gpus=4, gpu_model="T4")
    )
    return gpusched.Scenario(cluster, "best-fit", gpusched.synthetic(jobs=jobs, load=1.1), seed=7)


def fgd_protocol(traces: Path, profile) -> dict:
    """One run of the FGD paper's protocol (examples/openb-fgd.json) with ``profile``."""
    openb = traces / "alibaba-gpu-v2023-openb"
    return {
        "schema_version": 1,
        "name": "openb-fgd",
        "seed": 42,
        "mode": "fill",
        "cluster": {"import": [{"path": str(openb / "openb_node_list_gpu_node.csv"), "format": "openb-nodes"}]},
        "profile": profile,
        "workload": {
            "trace": {
                "path": str(openb / "openb_pod_list_default.csv"),
                "format": "openb-pods",
                "transforms": [{"shuffle": True}, {"resample_gpu_pct": 130}, {"arrival_only": True}],
            }
        },
        "outputs": {"sample_interval_s": 0.001},
    }


def traces_dir() -> Path:
    env = os.environ.get("GPUSCHED_TRACES_DIR")
    return Path(env) if env else Path(__file__).resolve().parent.parent.parent / "shared" / "traces"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--jobs", type=int, default=3000, help="synthetic jobs (default 3000)")
    parser.add_argument("--fgd", action="store_true", help="also replay the FGD protocol on the openb trace")
    args = parser.parse_args(argv)
    register()

    print(f"{'profile':<28} {'completed':>9} {'GPU alloc %':>11} {'mean wait s':>11}")
    base = synthetic_scenario(args.jobs).to_dict()
    for profile in ("best-fit", best_fit_profile("numpy-best-fit"), best_fit_profile("tetris-dot"), "default"):
        doc = dict(base, profile=profile)
        r = gpusched.run(doc)
        s = r.summary
        name = profile if isinstance(profile, str) else profile["name"]
        print(f"{name:<28} {s['jobs']['completed']:>9} {s['allocation']['gpu_pct_time_weighted']:>11.2f} "
              f"{s['wait']['mean_s']:>11.1f}")

    if args.fgd:
        traces = traces_dir()
        if not (traces / "alibaba-gpu-v2023-openb").is_dir():
            print(f"skipping the FGD protocol: no openb trace under {traces} (set GPUSCHED_TRACES_DIR)")
            return 0
        built_in = gpusched.run(fgd_protocol(traces, "best-fit"))
        numpy_run = gpusched.run(fgd_protocol(traces, best_fit_profile("numpy-best-fit")))
        same = (built_in.jobs["placement"] == numpy_run.jobs["placement"]).all()
        print(f"FGD protocol, seed 42: {len(built_in.jobs)} pods; numpy Best-fit places them "
              f"{'exactly as' if same else 'DIFFERENTLY from'} the built-in")
        return 0 if same else 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
