"""Plots of runs (matplotlib with the Agg canvas; never touches pyplot state).

Every function returns a ``matplotlib.figure.Figure`` and, when ``path`` is given, saves it as a
PNG there (100 dpi, no software stamp, so the same data give the same bytes).

One run::

    r = gpusched.run("examples/small.json")
    r.plot("ts.png")                       # allocation % and queue over time
    r.plot_cdf("jct.png", metric="jct")    # CDF of job completion time ("wait": queueing wait)
    r.plot_heatmap("heat.png")             # GPUs allocated per node over time

Several runs (a dict label -> Result, a list of Results, or a long-form DataFrame)::

    from gpusched import plotting
    runs = {p: gpusched.run(sc, seed=1) for p, sc in scenarios.items()}
    plotting.cdf(runs, metric="wait", path="wait.png")
    plotting.compare_timeseries(runs, path="alloc.png")
    plotting.compare(sweep_frame, x="profile", y=["wait_mean_s", "jct_p95_s"], path="cmp.png")
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import pandas as pd

from .result import read_csv

if TYPE_CHECKING:
    from matplotlib.figure import Figure

    from .result import Result

PathLike = Union[str, "os.PathLike[str]"]
#: What the multi-run functions accept: one Result, a dict label -> Result (or DataFrame), a list
#: of Results, or a long-form DataFrame with a grouping column.
Runs = Union["Result", Mapping[Any, Any], Sequence["Result"], pd.DataFrame]

#: Short names of job-table metrics for ``cdf``.
METRICS = {"jct": "jct_s", "wait": "wait_s"}
_METRIC_LABELS = {"jct_s": "job completion time", "wait_s": "queueing wait"}
_SERIES_LABELS = {
    "gpu_alloc_pct": "GPU allocated (%)",
    "gpus_busy_pct": "GPUs busy (%)",
    "cpu_alloc_pct": "CPU allocated (%)",
    "memory_alloc_pct": "memory allocated (%)",
    "pending_jobs": "pending jobs",
    "running_jobs": "running jobs",
}
#: Grouping columns ``cdf`` and ``compare_timeseries`` look for in a long-form DataFrame.
GROUP_COLUMNS = ("run", "label", "profile")


def _figure(width: float, height: float) -> "Figure":
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    fig = Figure(figsize=(width, height), layout="constrained")
    FigureCanvasAgg(fig)
    return fig


def _finish(fig: "Figure", title: str, path: Optional[PathLike]) -> "Figure":
    if title:
        fig.suptitle(title)
    if path is not None:
        fig.savefig(Path(path), dpi=100, metadata={"Software": None})
    return fig


def plot_timeseries(
    timeseries: pd.DataFrame,
    title: str = "",
    path: Optional[PathLike] = None,
) -> "Figure":
    """Two stacked panels over simulated time (hours): GPU allocation % (and GPUs busy %), and
    pending / running jobs. Saves a PNG to ``path`` when given. Returns the Figure."""
    fig = _figure(9, 6)
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
    return _finish(fig, title, path)


def read_timeseries_csv(path: PathLike) -> pd.DataFrame:
    """Reads a timeseries.csv written by gpusched (header first; an older file's leading
    ``# gpusched ...`` stamp line is skipped)."""
    return read_csv(path)


def plot_fgd_curve(
    bands: pd.DataFrame,
    title: str = "",
    path: Optional[PathLike] = None,
) -> "Figure":
    """The FGD paper's figure: unallocated GPU % (y) against arrived GPU demand % (x), one line
    per policy (the median over seeds) with its interquartile band. ``bands`` has columns
    policy, arrived_pct, median, q25, q75 (``FgdResult.bands()``). Saves a PNG when ``path``
    is given. Returns the Figure."""
    fig = _figure(8, 5)
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


# -- several runs -------------------------------------------------------------------------------


def _is_result(obj: Any) -> bool:
    return hasattr(obj, "summary") and hasattr(obj, "jobs") and hasattr(obj, "timeseries") and hasattr(obj, "stamp")


def _labels(results: Sequence["Result"]) -> List[str]:
    """Short distinct labels for a list of Results: the profile when profiles differ, the seed
    when only seeds differ, else both (numbered when still equal)."""
    profiles = [r.profile for r in results]
    seeds = [r.stamp["seed"] for r in results]
    scenarios = [r.stamp["scenario"] for r in results]
    if len(set(profiles)) == len(results):
        labels = profiles
    elif len(set(seeds)) == len(results) and len(set(profiles)) == 1 and len(set(scenarios)) == 1:
        labels = [f"seed {s}" for s in seeds]
    else:
        labels = [f"{p}, seed {s}" for p, s in zip(profiles, seeds)]
        if len(set(scenarios)) > 1:
            labels = [f"{sc}: {lab}" for sc, lab in zip(scenarios, labels)]
    seen: dict = {}
    out = []
    for lab in labels:
        seen[lab] = seen.get(lab, 0) + 1
        out.append(lab if seen[lab] == 1 else f"{lab} #{seen[lab]}")
    return out


def _groups(data: Runs, table: str, by: Union[str, Sequence[str], None]) -> List[Tuple[str, pd.DataFrame]]:
    """(label, frame) per run, where frame is each run's ``table`` ("jobs" or "timeseries")."""
    if isinstance(data, pd.DataFrame):
        if by is None:
            by = next((c for c in GROUP_COLUMNS if c in data.columns), None)
        if by is None:
            return [("", data)]
        keys = [by] if isinstance(by, str) else list(by)
        missing = [k for k in keys if k not in data.columns]
        if missing:
            raise KeyError(f"grouping column(s) {missing} not in the DataFrame (columns: {list(data.columns)})")
        out = []
        for key, g in data.groupby(keys if len(keys) > 1 else keys[0], sort=False):
            label = ", ".join(str(k) for k in key) if isinstance(key, tuple) else str(key)
            out.append((label, g))
        return out
    if by is not None:
        raise ValueError("by= names a column of a long-form DataFrame; for Results use a dict label -> Result")
    if _is_result(data):
        return [(data.profile, getattr(data, table))]
    if isinstance(data, Mapping):
        return [(str(k), getattr(v, table) if _is_result(v) else v) for k, v in data.items()]
    items = list(data)
    if not items:
        return []
    if all(_is_result(r) for r in items):
        return [(lab, getattr(r, table)) for lab, r in zip(_labels(items), items)]
    if all(isinstance(f, pd.DataFrame) for f in items):
        return [(f"run {i}", f) for i, f in enumerate(items)]
    raise TypeError("expected a Result, a dict label -> Result / DataFrame, a list of Results, or a DataFrame")


def _time_unit(max_s: float) -> Tuple[str, float]:
    """A readable unit for durations up to ``max_s`` seconds: (name, seconds per unit)."""
    if max_s >= 3 * 3600:
        return "h", 3600.0
    if max_s >= 3 * 60:
        return "min", 60.0
    return "s", 1.0


def ecdf(values: Any) -> Tuple[np.ndarray, np.ndarray]:
    """The empirical CDF of ``values`` (NaN dropped): sorted values x and p = P(X <= x), from 1/n
    to 1. Both empty when no value is left."""
    x = np.asarray(values, dtype=np.float64)
    x = np.sort(x[~np.isnan(x)])
    p = np.arange(1, len(x) + 1, dtype=np.float64) / max(len(x), 1)
    return x, p


def cdf(
    data: Runs,
    metric: str = "jct",
    by: Union[str, Sequence[str], None] = None,
    logx: bool = False,
    title: str = "",
    path: Optional[PathLike] = None,
) -> "Figure":
    """CDFs of a job metric, one line per run or group, on one plot.

    ``data``: a Result, a dict label -> Result (or jobs DataFrame), a list of Results, or a
    long-form jobs DataFrame (e.g. several runs' ``jobs`` concatenated with a ``run`` or
    ``profile`` column) grouped by ``by`` (default: the first of run, label, profile present).
    ``metric``: "jct" (jct_s), "wait" (wait_s) or any numeric jobs column; jobs without a value
    (never started / not finished) are left out, so each curve is over the jobs that have one.
    Each curve steps from 0 to 1; its legend gives the job count, median and p95 (nearest rank). ``logx`` draws
    x on a symmetric-log scale (zeros stay visible). Returns the Figure; saves a PNG at ``path``."""
    column = METRICS.get(metric, metric)
    groups = _groups(data, "jobs", by)
    series = []
    for label, frame in groups:
        if column not in frame.columns:
            raise KeyError(f"no column {column!r} in the jobs table (metrics: {sorted(METRICS)} or a column name)")
        series.append((label, *ecdf(frame[column])))
    max_x = max((float(x[-1]) for _, x, _ in series if len(x)), default=0.0)
    unit, scale = _time_unit(max_x) if column.endswith("_s") else ("", 1.0)

    fig = _figure(8, 5)
    ax = fig.subplots()
    for label, x, p in series:
        if not len(x):
            ax.plot([], [], label=f"{label} (no jobs)")
            continue
        xs = np.concatenate([[x[0]], x]) / scale
        ps = np.concatenate([[0.0], p])
        median, p95 = (float(np.quantile(x, q, method="inverted_cdf")) / scale for q in (0.5, 0.95))
        text = f"n={len(x)}, median {median:.3g}, p95 {p95:.3g}{(' ' + unit) if unit else ''}"
        ax.step(xs, ps, where="post", label=f"{label} ({text})" if label else text, linewidth=1.4)
    if logx:
        positive = [float(x[x > 0][0]) / scale for _, x, _ in series if len(x) and (x > 0).any()]
        ax.set_xscale("symlog", linthresh=min(positive) if positive else 1.0)
    name = _METRIC_LABELS.get(column, column)
    ax.set_xlabel(f"{name} ({unit})" if unit else name)
    ax.set_ylabel("fraction of jobs")
    ax.set_ylim(0, 1.02)
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right")
    return _finish(fig, title, path)


def compare_timeseries(
    data: Runs,
    columns: Union[str, Sequence[str]] = ("gpu_alloc_pct", "pending_jobs"),
    by: Union[str, Sequence[str], None] = None,
    title: str = "",
    path: Optional[PathLike] = None,
) -> "Figure":
    """Time series of several runs on shared axes: one panel per column of ``columns``
    (timeseries.csv names; default GPU allocated % and pending jobs), one line per run, x in
    simulated hours. ``data``: a dict label -> Result (or timeseries DataFrame), a list of
    Results, or a long-form timeseries DataFrame grouped by ``by`` (default: the first of run,
    label, profile present). Returns the Figure; saves a PNG at ``path``."""
    cols = [columns] if isinstance(columns, str) else list(columns)
    groups = _groups(data, "timeseries", by)
    fig = _figure(9, 2.2 + 2.4 * len(cols))
    axes = fig.subplots(len(cols), 1, sharex=True, squeeze=False)[:, 0]
    for i, (label, frame) in enumerate(groups):
        color = f"C{i % 10}"
        hours = frame["time_s"] / 3600.0
        for ax, col in zip(axes, cols):
            if col not in frame.columns:
                raise KeyError(f"no column {col!r} in the time series (columns: {list(frame.columns)})")
            ax.step(hours, frame[col], where="post", label=label or None, color=color, linewidth=1.2)
    for ax, col in zip(axes, cols):
        ax.set_ylabel(_SERIES_LABELS.get(col, col))
        if col.endswith("_pct"):
            ax.set_ylim(0, 105)
        ax.grid(True, alpha=0.3)
    axes[-1].set_xlabel("simulated time (hours)")
    if any(label for label, _ in groups):
        axes[0].legend(loc="upper right")
    return _finish(fig, title, path)


# -- node x time heatmap ------------------------------------------------------------------------


def _natural_key(name: str) -> List[Any]:
    """Sort key comparing digit runs as numbers: node-2 before node-10."""
    return [(0, int(t), "") if t.isdigit() else (1, 0, t) for t in re.split(r"(\d+)", name) if t]


def _integral(edges: np.ndarray, start: np.ndarray, end: np.ndarray, weight: np.ndarray) -> np.ndarray:
    """G(x) = sum of weight * (clip(x, start, end) - start) at every x of ``edges``: the
    weighted busy time before x. O((n + len(edges)) log n)."""
    out = np.zeros(len(edges))
    for times, sign in ((start, 1.0), (end, -1.0)):
        order = np.argsort(times, kind="stable")
        t, w = times[order], weight[order]
        cw = np.concatenate([[0.0], np.cumsum(w)])
        cwt = np.concatenate([[0.0], np.cumsum(w * t)])
        k = np.searchsorted(t, edges, side="right")
        out += sign * (edges * cw[k] - cwt[k])
    return out


def allocation_matrix(
    placements: pd.DataFrame,
    end_s: Optional[float] = None,
    bins: int = 120,
    max_nodes: int = 64,
    start_s: float = 0.0,
) -> pd.DataFrame:
    """GPUs allocated per node over time, from a placements table (``Result.placements``).

    Rows: the nodes that held a GPU grant, sorted by name (digit runs compared as numbers). When
    there are more than ``max_nodes`` of them, consecutive nodes in that order are summed into
    groups of ``ceil(nodes / max_nodes)`` nodes, labelled "first … last" (so the matrix keeps
    every GPU-second). Columns: ``bins`` equal time bins from ``start_s`` to ``end_s`` (default:
    the last start or end), labelled by their start in seconds. Values: the mean number of GPUs
    allocated in the bin, a shared GPU counting its share (share_milli / 1000; memory-only
    shares count 0). Jobs still running (end_s NaN) count until ``end_s``. Hence
    ``matrix.to_numpy().sum() * matrix.attrs["bin_s"]`` is the GPU-seconds inside the window.
    ``attrs``: bin_s, nodes (nodes with a GPU grant), nodes_per_row."""
    if bins < 1 or max_nodes < 1:
        raise ValueError("bins and max_nodes must be >= 1")
    has_gpu = placements["gpu"].notna() & (placements["gpu"].fillna(-1) >= 0)
    p = placements.loc[has_gpu]
    start = p["start_s"].to_numpy(dtype=np.float64)
    end = p["end_s"].to_numpy(dtype=np.float64)
    if end_s is None:
        finite = np.concatenate([start, end[~np.isnan(end)]])
        end_s = float(finite.max()) if len(finite) else start_s
    end = np.where(np.isnan(end), end_s, end)
    weight = p["share_milli"].to_numpy(dtype=np.float64) / 1000.0
    nodes = sorted(set(p["node"]), key=_natural_key)
    per_row = max(1, math.ceil(len(nodes) / max_nodes))
    rows = [nodes[i : i + per_row] for i in range(0, len(nodes), per_row)]
    labels = [r[0] if len(r) == 1 else f"{r[0]} … {r[-1]}" for r in rows]
    edges = np.linspace(start_s, end_s, bins + 1)
    width = (end_s - start_s) / bins
    row_of = {n: i for i, r in enumerate(rows) for n in r}
    row_idx = np.array([row_of[n] for n in p["node"]], dtype=np.int64)
    matrix = np.zeros((len(rows), bins))
    if width > 0:
        for i in range(len(rows)):
            sel = row_idx == i
            matrix[i] = np.diff(_integral(edges, start[sel], end[sel], weight[sel])) / width
        # Cancellation in the running sums leaves ~1e-12 where nothing ran: make that 0.
        matrix[np.abs(matrix) < 1e-9] = 0.0
    frame = pd.DataFrame(matrix, index=pd.Index(labels, name="node"), columns=pd.Index(edges[:-1], name="time_s"))
    frame.attrs.update(bin_s=width, nodes=len(nodes), nodes_per_row=per_row)
    return frame


def plot_heatmap(
    matrix: pd.DataFrame,
    title: str = "",
    path: Optional[PathLike] = None,
    cmap: str = "viridis",
) -> "Figure":
    """Draws an ``allocation_matrix``: nodes (or node groups) top to bottom in name order, time
    in hours left to right, colour = mean GPUs allocated. Returns the Figure; saves a PNG at
    ``path``."""
    n_rows = len(matrix)
    fig = _figure(10, min(3.0 + 0.2 * n_rows, 13.0))
    ax = fig.subplots()
    bin_s = float(matrix.attrs.get("bin_s", 0.0))
    if n_rows == 0 or matrix.shape[1] == 0:
        ax.text(0.5, 0.5, "no GPU placements", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return _finish(fig, title, path)
    t0 = float(matrix.columns[0]) / 3600.0
    t1 = (float(matrix.columns[-1]) + bin_s) / 3600.0
    image = ax.imshow(
        matrix.to_numpy(), aspect="auto", interpolation="nearest", cmap=cmap,
        extent=(t0, t1, n_rows - 0.5, -0.5), vmin=0,
    )
    step = max(1, math.ceil(n_rows / 40))
    ticks = list(range(0, n_rows, step))
    ax.set_yticks(ticks)
    ax.set_yticklabels([str(matrix.index[i]) for i in ticks], fontsize=8 if n_rows > 16 else 10)
    ax.set_xlabel("simulated time (hours)")
    per_row = int(matrix.attrs.get("nodes_per_row", 1))
    nodes = int(matrix.attrs.get("nodes", n_rows))
    ax.set_ylabel("node" if per_row == 1 else f"nodes ({per_row} per row, {nodes} in all)")
    bar = fig.colorbar(image, ax=ax)
    bar.set_label("GPUs allocated (mean over bin)" + ("" if per_row == 1 else ", summed over the row's nodes"))
    return _finish(fig, title, path)


# -- comparisons across runs --------------------------------------------------------------------


def _spread(n: int, width: float) -> np.ndarray:
    """Fixed horizontal offsets for n points within ``width`` (deterministic jitter)."""
    return np.zeros(n) if n <= 1 else np.linspace(-width / 2, width / 2, n)


def compare(
    frame: pd.DataFrame,
    x: str = "profile",
    y: Union[str, Sequence[str]] = "wait_mean_s",
    hue: Optional[str] = None,
    kind: str = "bar",
    title: str = "",
    path: Optional[PathLike] = None,
) -> "Figure":
    """Summary figures of many runs grouped by a column, e.g. a sweep's tidy DataFrame with one
    row per run: ``compare(df, x="profile", y=["wait_mean_s", "jct_p95_s"])``.

    One panel per ``y`` column; groups of ``x`` in order of first appearance (and of ``hue``
    side by side within a group). ``kind="bar"``: the mean with a standard-deviation error bar;
    ``kind="box"``: a box plot (median, quartiles, 1.5 IQR whiskers). Every run is drawn as a
    dot on top. Returns the Figure; saves a PNG at ``path``."""
    if kind not in ("bar", "box"):
        raise ValueError(f"kind must be 'bar' or 'box', not {kind!r}")
    ys = [y] if isinstance(y, str) else list(y)
    for col in [x, *ys, *([hue] if hue else [])]:
        if col not in frame.columns:
            raise KeyError(f"no column {col!r} in the DataFrame (columns: {list(frame.columns)})")
    xs = list(pd.unique(frame[x]))
    hues: List[Any] = list(pd.unique(frame[hue])) if hue else [None]
    slot = 0.8 / len(hues)
    panel_w = max(4.0, 1.5 + 0.8 * len(xs) * (1 + 0.3 * (len(hues) - 1)))
    fig = _figure(min(panel_w * len(ys), 18.0), 4.5)
    axes = fig.subplots(1, len(ys), squeeze=False)[0]
    for ax, col in zip(axes, ys):
        for j, h in enumerate(hues):
            color = f"C{j % 10}"
            sub = frame if h is None else frame[frame[hue] == h]
            pos, values = [], []
            for i, xv in enumerate(xs):
                v = sub.loc[sub[x] == xv, col].to_numpy(dtype=np.float64)
                v = v[~np.isnan(v)]
                pos.append(i - 0.4 + slot * (j + 0.5))
                values.append(v)
            label = None if h is None else str(h)
            if kind == "bar":
                means = [float(v.mean()) if len(v) else np.nan for v in values]
                errs = [float(v.std(ddof=1)) if len(v) > 1 else 0.0 for v in values]
                ax.bar(pos, means, width=slot * 0.9, yerr=errs, capsize=3, color=color, alpha=0.75, label=label)
            else:
                box = ax.boxplot([v if len(v) else [np.nan] for v in values], positions=pos, widths=slot * 0.7,
                                 patch_artist=True, showfliers=False, manage_ticks=False)
                for patch in box["boxes"]:
                    patch.set_facecolor(color)
                    patch.set_alpha(0.5)
                if label is not None:
                    ax.plot([], [], color=color, linewidth=6, alpha=0.5, label=label)
            for p_, v in zip(pos, values):
                ax.scatter(p_ + _spread(len(v), slot * 0.5), v, s=10, color="black", alpha=0.6, zorder=3, linewidths=0)
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels([str(v) for v in xs], rotation=30 if len(xs) > 4 else 0, ha="right" if len(xs) > 4 else "center")
        ax.set_xlabel(x)
        ax.set_ylabel(col)
        ax.grid(True, axis="y", alpha=0.3)
        if hue:
            ax.legend(title=hue, loc="best")
    return _finish(fig, title, path)


__all__ = [
    "METRICS",
    "allocation_matrix",
    "cdf",
    "compare",
    "compare_timeseries",
    "ecdf",
    "plot_fgd_curve",
    "plot_heatmap",
    "plot_timeseries",
    "read_timeseries_csv",
]
