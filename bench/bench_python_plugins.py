"""What a scheduling plugin written in Python (numpy) costs per decision, against the built-in.

    python bench/bench_python_plugins.py [--nodes 1000 10000] [--jobs 2000] [--repeat 3]

Each run is a fill-mode scenario (jobs arrive one at a time and never leave, so every job is one
decision over all nodes that fit it) on N nodes of 8 A100s, with the built-in "best-fit" profile
whose score plugin is swapped: the built-in best-fit, the numpy Best-fit of
examples/numpy_policies.py (same decisions), the Tetris-like dot product, and a numpy plugin that
returns zeros (the fixed cost of a Python call: building the NodeView and taking the GIL).
Prints microseconds per decision (best of --repeat runs), and checks that the numpy Best-fit
placed every job where the built-in did.
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path

import numpy as np

import gpusched

ROOT = Path(__file__).resolve().parents[1]


def load_policies():
    spec = importlib.util.spec_from_file_location("numpy_policies", ROOT / "examples" / "numpy_policies.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.register()
    return module


class Zeros:
    """Every node scores the same: the cost of the call itself."""

    def score(self, job, nodes):
        return np.zeros(len(nodes))


def scenario(nodes: int, jobs: int, profile) -> dict:
    cluster = gpusched.Cluster().node_group("a100", count=nodes, cpu=128, memory="1Ti", gpus=8, gpu_model="A100-80GB")
    return gpusched.Scenario(cluster, profile, gpusched.synthetic(jobs=jobs, load=0.5), seed=1, mode="fill").to_dict()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nodes", type=int, nargs="+", default=[1000, 10000])
    parser.add_argument("--jobs", type=int, default=2000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    mod = load_policies()
    gpusched.register_plugin("bench-zeros", Zeros, replace=True)
    variants = [
        ("built-in best-fit", "best-fit"),
        ("numpy Best-fit", mod.best_fit_profile("numpy-best-fit")),
        ("numpy Tetris dot product", mod.best_fit_profile("tetris-dot")),
        ("numpy zeros (call overhead)", mod.best_fit_profile("bench-zeros")),
    ]
    print(f"gpusched {gpusched.__version__}; {args.jobs} jobs per run, best of {args.repeat}")
    print(f"{'nodes':>6}  {'plugin':<28} {'us/decision':>12} {'x built-in':>10}")
    for n in args.nodes:
        base_us = None
        reference = None
        for label, profile in variants:
            doc = scenario(n, args.jobs, profile)
            best = float("inf")
            result = None
            for _ in range(args.repeat):
                t0 = time.perf_counter()
                result = gpusched.run(doc)
                best = min(best, time.perf_counter() - t0)
            decisions = len(result.jobs)
            us = 1e6 * best / decisions
            if base_us is None:
                base_us, reference = us, result.jobs.placement.astype(str)
            elif label == "numpy Best-fit":
                assert (result.jobs.placement.astype(str) == reference).all(), "numpy Best-fit decided differently"
            print(f"{n:>6}  {label:<28} {us:>12.1f} {us / base_us:>10.1f}")


if __name__ == "__main__":
    main()
