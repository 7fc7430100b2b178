"""Plots of a run's time series (matplotlib with the Agg canvas; never touches pyplot state)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import TYPE_CHECKING, Optional, Union

import pandas as pd

if TYPE_CHECKING:
    from matplotlib.figure import Figure


def plot_timeseries(
    timeseries: pd.DataFrame,
    title: str = "",
    path: Union[str, "os.PathLike[str]", None] = None,
) -> "Figure":
    """Two stacked panels over simulated time (hours): GPU allocation % (and GPUs busy %), and
    pending / running jobs. Saves a PNG to ``path`` when given. Returns the Figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 6), layout="constrained")
    FigureCanvasAgg(fig)
    hours = timeseries["time_s"] / 3600.0
    ax1, ax2 = fig.subplots(2, 1, sharex=True)
    ax1.step(hours, timeseries["gpu_alloc_pct"], where="post", label="GPU allocated", color="tab:blue")
    if "gpus_busy_pct" in timeseries:
        ax1.step(hours, timeseries["gpus_busy_pct"], where="post", label="GPUs busy", color="tab:cyan", linewidth=0.8)
    ax1.set_ylabel("% of cluster GPUs")
    ax1.set_ylim(0, 105)
    ax1.grid(True, alpha=0.3)
    ax1.legend(loc="upper right")
    ax2.step(hours, timeseries["pending_jobs"], where="post", label="pending", color="tab:red")
    if "running_jobs" in timeseries:
        ax2.step(hours, timeseries["running_jobs"], where="post", label="running", color="tab:green", linewidth=0.8)
    ax2.set_ylabel("jobs")
    ax2.set_xlabel("simulated time (hours)")
    ax2.grid(True, alpha=0.3)
    ax2.legend(loc="upper right")
    if title:
        fig.suptitle(title)
    if path is not None:
        fig.savefig(Path(path), dpi=100, metadata={"Software": None})
    return fig


def read_timeseries_csv(path: Union[str, "os.PathLike[str]"]) -> pd.DataFrame:
    """Reads a timeseries.csv written by gpusched (skips the '# gpusched ...' stamp line)."""
    return pd.read_csv(Path(path), comment="#")


def plot_fgd_curve(
    bands: pd.DataFrame,
    title: str = "",
    path: Union[str, "os.PathLike[str]", None] = None,
) -> "Figure":
    """The FGD paper's figure: unallocated GPU % (y) against arrived GPU demand % (x), one line
    per policy (the median over seeds) with its interquartile band. ``bands`` has columns
    policy, arrived_pct, median, q25, q75 (``FgdResult.bands()``). Saves a PNG when ``path``
    is given. Returns the Figure."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(8, 5), layout="constrained")
    FigureCanvasAgg(fig)
    ax = fig.subplots()
    for policy, g in bands.groupby("policy", sort=False):
        g = g.sort_values("arrived_pct")
        (line,) = ax.plot(g["arrived_pct"], g["median"], label=str(policy), linewidth=1.4)
        ax.fill_between(g["arrived_pct"], g["q25"], g["q75"], color=line.get_color(), alpha=0.2, linewidth=0)
    ax.set_xlabel("arrived GPU demand (% of cluster GPU capacity)")
    ax.set_ylabel("unallocated GPU (%)")
    ax.set_xlim(left=max(0, float(bands["arrived_pct"].min()) if len(bands) else 0))
    ax.grid(True, alpha=0.3)
    ax.legend(loc="upper left")
    if title:
        ax.set_title(title)
    if path is not None:
        fig.savefig(Path(path), dpi=100, metadata={"Software": None})
    return fig
