#!/usr/bin/env python3
"""Compare five built-in scheduling presets over ten seeds with one gpusched.sweep.

A small synthetic cluster (12 A100 nodes with 8 GPUs, 8 T4 nodes with 4) receives a mix of
GPU shares and 1-8 GPU jobs at 110% of its GPU capacity, so a queue builds and placement
matters. Each preset runs with ten seeds; the table shows mean ± standard deviation over the
seeds of the mean wait, the mean job completion time (JCT) and the time-weighted GPU
allocation while jobs arrive. A bar chart is saved when matplotlib is installed.

Usage (from any folder):

    python examples/compare_presets.py            # 4,000 jobs per run
    python examples/compare_presets.py --quick    # 300 jobs per run (a few seconds)
    python examples/compare_presets.py --executor processes --plot /tmp/presets.png
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional

import gpusched

HERE = Path(__file__).resolve().parent
DEFAULT_PLOT = HERE.parent / "out" / "compare_presets.png"

#: The presets compared (gpusched.profiles() lists them all).
PRESETS = ["default", "binpack", "best-fit", "fgd", "slurm-backfill"]
#: Column of the sweep -> label in the table and the plot.
METRICS = {
    "wait_mean_s": "wait (s)",
    "jct_mean_s": "JCT (s)",
    "gpu_alloc_arriving_pct": "GPU allocated (%)",
}


def scenario(jobs: int) -> Dict[str, Any]:
    """The base scenario; the sweep sets its "profile"."""
    return {
        "schema_version": 1,
        "name": "compare-presets",
        "seed": 1,
        "cluster": {
            "node_groups": [
                {"name": "a100", "count": 12, "cpu": "128", "memory": "1Ti", "gpus": 8, "gpu_model": "A100-80GB"},
                {"name": "t4", "count": 8, "cpu": "64", "memory": "256Gi", "gpus": 4, "gpu_model": "T4"},
            ]
        },
        "profile": "default",
        "workload": {
            "synthetic": {
                "jobs": jobs,
                "load": 1.1,
                "duration_median_s": 1800,
                "duration_max_s": 6 * 3600,
                "mix": {"fractional": 0.3, "gpu1": 0.3, "gpu2": 0.15, "gpu4": 0.15, "gpu8": 0.1},
            }
        },
        "outputs": {"sample_interval_s": 600},
    }


def table(runs: "Any") -> "Any":
    """Mean ± sd over seeds per preset (a DataFrame of strings, presets in PRESETS order)."""
    import pandas as pd

    stats = runs.groupby("profile", sort=False)[list(METRICS)].agg(["mean", "std"])
    out = pd.DataFrame(index=stats.index)
    for col, label in METRICS.items():
        digits = 1 if col.endswith("_pct") else 0
        out[label] = [f"{m:,.{digits}f} ± {s:,.{digits}f}" for m, s in zip(stats[(col, "mean")], stats[(col, "std")])]
    out["seeds"] = runs.groupby("profile", sort=False)["seed"].nunique()
    out.index.name = "preset"
    return out


def plot(runs: "Any", path: Path) -> Optional[Path]:
    """Bars of the mean with sd error bars, one panel per metric; None without matplotlib."""
    try:
        import matplotlib
    except ImportError:
        return None
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    stats = runs.groupby("profile", sort=False)[list(METRICS)].agg(["mean", "std"])
    fig, axes = plt.subplots(1, len(METRICS), figsize=(4 * len(METRICS), 3.6))
    for ax, (col, label) in zip(axes, METRICS.items()):
        ax.bar(stats.index, stats[(col, "mean")], yerr=stats[(col, "std")], capsize=3, color="#4c78a8")
        ax.set_title(label)
        ax.tick_params(axis="x", rotation=30)
    fig.suptitle(f"Built-in presets, mean ± sd over {runs['seed'].nunique()} seeds")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def main(argv: Optional[List[str]] = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="300 jobs per run instead of 4,000")
    ap.add_argument("--seeds", default="1-10", help="seeds, e.g. 1-10 or 1,2,3 (default 1-10)")
    ap.add_argument("--executor", choices=["threads", "processes"], default="threads")
    ap.add_argument("--plot", type=Path, default=DEFAULT_PLOT, help=f"PNG to write (default {DEFAULT_PLOT})")
    ap.add_argument("--no-plot", action="store_true", help="do not write the plot")
    args = ap.parse_args(argv)

    jobs = 300 if args.quick else 4000
    runs = gpusched.sweep(scenario(jobs), {"profile": PRESETS}, seeds=args.seeds, executor=args.executor)
    print(f"{len(runs)} runs: {len(PRESETS)} presets x {runs['seed'].nunique()} seeds, {jobs} jobs each "
          f"(load 1.1 on 128 GPUs)")
    print(table(runs).to_string())
    best = runs.groupby("profile", sort=False)["wait_mean_s"].mean().idxmin()
    print(f"shortest mean wait: {best}")
    if not args.no_plot:
        written = plot(runs, args.plot)
        print(f"plot: {written}" if written else "plot: skipped (matplotlib is not installed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
