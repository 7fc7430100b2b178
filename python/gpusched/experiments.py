"""Published experiments, reproduced in one call.

``fgd`` runs the FGD paper's experiment (Weng et al., USENIX ATC'23; docs/fgd.md): the Alibaba
openb pod list against the openb GPU cluster, pods arriving one at a time until 130% of the GPU
capacity has been requested, unallocated GPU % and fragmentation after every pod, for several
policies and seeds, in parallel on all cores (C++ thread pool; the GIL is released).

Example::

    import gpusched.experiments as ex
    r = ex.fgd("../shared/traces", seeds="42-44", policies="bestfit,fgd")
    print(r.summary)                      # median unallocated GPU % at 100% and 130% arrived
    r.curve.query("policy == 'fgd'")      # one row per policy, seed and integer arrived %
    r.plot("fgd.png")                     # median line with an interquartile band per policy
    every = ex.fgd(workload="all")        # the 24 openb variants: 1,440 runs on one thread pool
    every.summary.query("workload == 'gpushare80'")
"""

from __future__ import annotations

import math
import os
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Tuple, Union

import pandas as pd

from . import _core
from ._seeds import check_seed
from ._fanout import check_executor, parallelism, run_tasks
from ._progress import Progress, want_progress

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PathLike = Union[str, "os.PathLike[str]"]

#: The policies of the paper, in its table order.
FGD_POLICIES: List[str] = list(_core.fgd_policy_names())
#: The openb pod-list variants ``workload="all"`` runs (24), in the reference's order.
FGD_WORKLOADS: List[str] = list(_core.fgd_workload_names())


def default_traces_dir() -> Path:
    """``$GPUSCHED_TRACES_DIR`` when set, else ``../shared/traces`` from the working directory."""
    env = os.environ.get("GPUSCHED_TRACES_DIR")
    return Path(env) if env else Path("..") / "shared" / "traces"


@dataclass
class FgdResult:
    """What ``fgd`` returns. ``curve``: policy, seed, arrived_pct, unallocated_pct, frag_pct,
    frag_ratio_pct, workload (one row per integer arrived %). ``summary``: per workload and
    policy, the median over seeds at 100% and 130% arrived and fragmentation at 80%, with the
    paper's figures for the default workload. ``runs``: pods submitted and failed, wall time per
    run. Rows come workload after workload, in the order asked."""

    curve: pd.DataFrame
    summary: pd.DataFrame
    runs: pd.DataFrame
    wall_s: float
    threads: int
    info: Dict[str, Any] = field(default_factory=dict)

    def bands(self) -> pd.DataFrame:
        """Median and interquartile range over seeds of unallocated GPU %, per policy and
        arrived % (the plotted lines and bands); per workload too when the curve has several."""
        keys = ["policy", "arrived_pct"]
        if "workload" in self.curve.columns and self.curve["workload"].nunique() > 1:
            keys = ["workload"] + keys
        g = self.curve.groupby(keys, sort=False)["unallocated_pct"]
        out = pd.DataFrame({"median": g.median(), "q25": g.quantile(0.25), "q75": g.quantile(0.75)})
        return out.reset_index()

    def plot(self, path: Optional[PathLike] = None, title: str = "") -> "Figure":
        """Unallocated GPU % against arrived demand, one line per policy (median over seeds)
        with an interquartile band; several workloads: one panel each. Saves a PNG when
        ``path`` is given."""
        from .plotting import plot_fgd_curve

        bands = self.bands()
        seeds = self.curve["seed"].nunique()
        if "workload" not in bands.columns:
            if not title:
                title = f"FGD experiment, workload {self.info.get('workload', '?')}, {seeds} seeds"
            return plot_fgd_curve(bands, title=title, path=path)
        return _plot_fgd_panels(bands, title or f"FGD experiment, {bands['workload'].nunique()} workloads, {seeds} seeds", path)


def _plot_fgd_panels(bands: pd.DataFrame, title: str, path: Optional[PathLike]) -> "Figure":
    """One small panel per workload (unallocated GPU % against arrived demand, a median line
    and interquartile band per policy), one legend."""
    import math

    from matplotlib.figure import Figure

    names = list(dict.fromkeys(bands["workload"]))
    cols = min(6, len(names))
    rows = math.ceil(len(names) / cols)
    fig = Figure(figsize=(2.8 * cols, 2.3 * rows + 0.6))
    axes = fig.subplots(rows, cols, squeeze=False, sharex=True, sharey=True)
    for k, name in enumerate(names):
        ax = axes[k // cols][k % cols]
        for policy, g in bands[bands["workload"] == name].groupby("policy", sort=False):
            g = g.sort_values("arrived_pct")
            (line,) = ax.plot(g["arrived_pct"], g["median"], label=str(policy), linewidth=1.0)
            ax.fill_between(g["arrived_pct"], g["q25"], g["q75"], color=line.get_color(), alpha=0.2, linewidth=0)
        ax.set_title(str(name), fontsize=9)
        ax.grid(True, alpha=0.3)
    for k in range(len(names), rows * cols):
        axes[k // cols][k % cols].set_visible(False)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="upper right", fontsize=8)
    fig.supxlabel("arrived GPU demand (% of cluster GPU capacity)")
    fig.supylabel("unallocated GPU (%)")
    fig.suptitle(title)
    if path is not None:
        fig.savefig(Path(path), dpi=100, metadata={"Software": None})
    return fig


def _workload_list(workload: Union[str, "os.PathLike[str]", Iterable[Union[str, "os.PathLike[str]"]]]) -> List[str]:
    """``"all"``, a comma list or a list of variant names and paths -> the workloads to run."""
    if isinstance(workload, (str, os.PathLike)):
        return list(_core.parse_fgd_workloads(os.fspath(workload)))
    out: List[str] = []
    for w in workload:
        for name in _core.parse_fgd_workloads(os.fspath(w)):
            if name not in out:
                out.append(name)
    if not out:
        _core.parse_fgd_workloads("")   # raises the ScenarioError for an empty list
    return out


def fgd(
    traces: Optional[PathLike] = None,
    workload: Union[str, "os.PathLike[str]", Iterable[Union[str, "os.PathLike[str]"]]] = "default",
    policies: Union[str, Iterable[str]] = "all",
    seeds: Union[str, int, Iterable[int]] = "42-51",
    out: Optional[PathLike] = None,
    jobs: int = 0,
    max_arrived_pct: float = 130.0,
    plot: bool = True,
    *,
    executor: Any = None,
    progress: Optional[bool] = None,
) -> FgdResult:
    """Runs the FGD paper's experiment and returns DataFrames (see ``FgdResult``).

    traces: the folder holding ``alibaba-gpu-v2023-openb`` (or that folder itself); default
    ``default_traces_dir()``. workload: a variant name (``default``, ``gpushare80``, ...) or a
    pod-list path; ``"all"`` (the 24 variants of ``FGD_WORKLOADS``), a comma list or a list of
    them runs every workload on one pool, rows workload after workload (an unknown name fails
    before any run, naming it and listing the known ones). policies: ``"all"``, a comma list or a list of ``FGD_POLICIES``. seeds: one
    seed, ``"42-51"``, a comma list or a list. out: also write curve.csv, summary.csv, runs.csv,
    report.md (and fgd.png when ``plot`` and matplotlib is installed) there. jobs: parallel
    runs (0 = one per core). Bad input raises the gpusched error naming what was wrong.

    executor: None runs the experiment in C++ on its own thread pool of ``jobs`` threads. Else
    one task per (policy, seed) goes to ``"threads"``, ``"processes"``, a
    ``concurrent.futures.Executor`` or a ``dask.distributed.Client`` (workers read the traces
    from the same ``traces`` path, once per worker process); the gathered runs are assembled by
    the same C++ as the built-in path, so curve, summary (medians) and files are identical.
    progress: a bar with an ETA over the runs; None = only on a terminal or in a notebook,
    True = always, False = never (see gpusched.sweep)."""
    # One absolute form for every executor (workers elsewhere have another working folder);
    # symlinks are kept, so the files are named as the caller named them.
    traces_dir = Path(os.path.normpath(os.path.abspath(traces if traces is not None else default_traces_dir())))
    policy_list = list(_core.parse_fgd_policies(policies if isinstance(policies, str) else ",".join(policies)))
    workloads = _workload_list(workload)
    if isinstance(seeds, str):
        seed_list = list(_core.parse_seeds(seeds))
    elif isinstance(seeds, int) and not isinstance(seeds, bool):
        seed_list = [check_seed(seeds, "seeds")]
    else:
        seed_list = [check_seed(s, "seeds") for s in seeds]
    out_dir = None if out is None else Path(out)
    label = workloads[0] if len(workloads) == 1 else f"{len(workloads)} workloads"
    bar = Progress(len(workloads) * len(policy_list) * len(seed_list), f"gpusched fgd {label}", want_progress(progress))
    with bar:
        if executor is None:
            raw = _core.fgd_experiment(
                traces_dir, workloads, policy_list, seed_list, int(jobs), float(max_arrived_pct), out_dir,
                progress=(lambda done, total: bar.set_done(done)) if bar.enabled else None,
            )
        else:
            raw = _fgd_fanout(traces_dir, workloads, policy_list, seed_list, float(max_arrived_pct), out_dir,
                              executor, int(jobs), bar)
    result = FgdResult(
        curve=pd.DataFrame(raw["curve"]),
        summary=pd.DataFrame(raw["summary"]),
        runs=pd.DataFrame(raw["runs"]),
        wall_s=raw["wall_s"],
        threads=raw["threads"],
        info={k: raw[k] for k in ("workload", "workloads", "pod_source", "node_source", "nodes", "gpus", "trace_pods")},
    )
    if out is not None and plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return result
        result.plot(Path(out) / "fgd.png")
    return result


# One (policy, seed) run per task, for executors other than the built-in thread pool.

#: FgdInputs read in this process, by (traces, workload): a worker reads the traces once.
_INPUTS: Dict[Tuple[str, str], "_core.FgdInputs"] = {}
_INPUTS_LOCK = threading.Lock()


def _inputs(traces: str, workload: str) -> "_core.FgdInputs":
    key = (traces, workload)
    with _INPUTS_LOCK:
        found = _INPUTS.get(key)
        if found is None:
            found = _INPUTS[key] = _core.FgdInputs(traces, workload)
        return found


def _fgd_task(task: Tuple[str, str, str, int, float]) -> Dict[str, Any]:
    """One run of the protocol in a worker; plain picklable data (see _core.fgd_run)."""
    traces, workload, policy, seed, max_arrived_pct = task
    return _core.fgd_run(_inputs(traces, workload), policy, seed, max_arrived_pct)


def _fgd_fanout(traces_dir: Path, workloads: List[str], policies: List[str], seeds: List[int], max_arrived_pct: float,
                out: Optional[Path], executor: Any, jobs: int, bar: Progress) -> Dict[str, Any]:
    """The experiment with one task per (workload, policy, seed) on ``executor`` (see
    gpusched._fanout.run_tasks); assembled by the C++ of the built-in path (same medians, same
    files)."""
    check_executor(executor)
    t0 = time.monotonic()
    traces = str(traces_dir)
    # Checks the arguments and reads the traces here first: bad input fails before any fan-out.
    inputs = [_core.fgd_prepare(traces, w, policies, seeds, max_arrived_pct) for w in workloads]
    with _INPUTS_LOCK:
        for w, found in zip(workloads, inputs):
            _INPUTS.setdefault((traces, w), found)
    tasks = [(traces, w, p, int(s), max_arrived_pct) for w in workloads for p in policies for s in seeds]
    workers = jobs if jobs > 0 else None
    results = run_tasks(_fgd_task, tasks, executor, workers, bar, thread_name="gpusched-fgd")
    threads = parallelism(executor, workers, len(tasks))
    return _core.fgd_assemble(inputs, traces_dir, workloads, policies, seeds, max_arrived_pct, results,
                              time.monotonic() - t0, int(threads), out)


def read_fgd_outputs(out: PathLike) -> FgdResult:
    """Reads curve.csv, summary.csv and runs.csv written by ``gpusched experiment fgd``."""
    d = Path(out)
    from .result import read_csv  # header first; skips an older file's '# gpusched ...' line

    read = lambda name: read_csv(d / name)  # noqa: E731
    return FgdResult(curve=read("curve.csv"), summary=read("summary.csv"), runs=read("runs.csv"), wall_s=float("nan"), threads=0)


#: The policies of the Tiresias compat mode (docs/tiresias.md).
TIRESIAS_POLICIES: List[str] = list(_core.tiresias_engine_policies())
TIRESIAS_COMPAT_POLICIES: List[str] = list(_core.tiresias_compat_policies())


@dataclass
class TiresiasResult:
    """What ``tiresias`` returns.

    On gpusched's engine (``compat=False``): ``jobs`` has one row per (policy, job) with the
    columns of ``jobs.csv`` (job, submit_s, start_s, end_s, jct_s, state, placement, attained_s,
    attained_gpu_s, queue_level, preemptions, resumptions, overhead_s, ...) after ``policy``.
    In compat mode: policy, job_id, num_gpu, submit_time, start_time, end_time, jct, duration,
    pending_time, preempt, resume, promote, completed (start/end/jct NaN when it never started or
    completed), by submit time.

    ``summary``: per policy, over the completed jobs: jobs, completed, mean/median/p95 JCT,
    makespan, mean queueing time (s: waiting, all runs), preemptions, whether the run was left
    with jobs waiting (stuck), and GPU-hours spent on restart overheads."""

    jobs: pd.DataFrame
    summary: pd.DataFrame
    gpus: int
    compat: bool = False

    def plot_cdf(self, path: Optional[PathLike] = None, title: str = "") -> "Figure":
        """The CDF of JCT per policy (completed jobs; log time axis). Saves a PNG when ``path`` is given."""
        from matplotlib.figure import Figure

        fig = Figure(figsize=(6.4, 4.0))
        ax = fig.subplots()
        if self.compat:
            done, column = self.jobs[self.jobs["completed"]], "jct"
        else:
            done, column = self.jobs[self.jobs["state"] == "completed"], "jct_s"
        for policy, g in done.groupby("policy", sort=False):
            jct = g[column].sort_values().to_numpy()
            ax.step(jct, [(i + 1) / len(jct) for i in range(len(jct))], where="post", label=str(policy), linewidth=1.2)
        ax.set_xscale("log")
        from matplotlib.ticker import NullFormatter

        ax.xaxis.set_minor_formatter(NullFormatter())   # labels on powers of ten only: the minor ones overlap
        ax.set_xlabel("job completion time (s)")
        ax.set_ylabel("fraction of completed jobs")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
        mode = "Tiresias compat mode" if self.compat else "Tiresias policies on gpusched's engine"
        ax.set_title(title or (f"{mode}, {self.gpus} GPUs" if self.gpus else mode))
        fig.tight_layout()   # the axis labels inside the figure (the x label was cut off)
        if path is not None:
            fig.savefig(Path(path), dpi=100, metadata={"Software": None})
        return fig


def tiresias(
    traces: Optional[PathLike] = None,
    *,
    trace: Optional[PathLike] = None,
    cluster: Union[str, PathLike] = "cluster_spec",
    policies: Union[str, Iterable[str]] = "all",
    compat: bool = False,
    starvation: Optional[float] = None,
    thresholds: Union[str, Iterable[float], None] = None,
    placement: Optional[str] = None,
    restart_overhead: Optional[float] = None,
    within_queue: Optional[str] = None,
    quantum: Optional[float] = None,
    distribution: Optional[PathLike] = None,
) -> TiresiasResult:
    """Tiresias' training-job schedulers (fifo, fjf, sjf, srtf, srsf, las, 2d-las, gittins) on its
    job trace, as ``gpusched experiment tiresias`` runs them (docs/tiresias.md).

    By default on gpusched's engine: the preemptive queueing mode, jobs placed by the plugins of
    the built-in profile ``placement`` (``"count"``: GPUs counted only, as the simulator), a
    ``restart_overhead`` (s) at each resumption; ``within_queue`` and ``quantum`` /
    ``distribution`` (a file of service samples, GPU-seconds) tune las / 2d-las and gittins.
    ``compat=True``: the public Tiresias simulator's own rules (no gittins). Defaults: starvation 0,
    thresholds (3250, 7200), placement ``"binpack"``, restart_overhead 0, within_queue
    ``"running-first"``, quantum 3600. As on the command line, an option none of the chosen
    policies reads (or an engine option with ``compat=True``) is a ValueError.

    ``traces``: the folder with ``tiresias/`` (default ``$GPUSCHED_TRACES_DIR``, else
    ``../shared/traces``); ``trace``: a job list (default its ``60_job.csv``); ``cluster``: a
    cluster spec file or a spec name of that folder (``"n1g4"``, ``"n32g4"``, ...).

    >>> r = tiresias(cluster="n1g4", policies="srtf,2d-las")   # doctest: +SKIP
    >>> r.summary[["policy", "mean_jct_s"]]                     # doctest: +SKIP
    """
    folder = Path(traces) if traces is not None else default_traces_dir()
    if (folder / "tiresias").is_dir():
        folder = folder / "tiresias"
    trace_path = Path(trace) if trace is not None else folder / "60_job.csv"
    spec = Path(cluster)
    if not spec.exists():   # as the command line: a spec name (or relative path) of the traces folder
        spec = folder / (spec if spec.suffix == ".csv" else Path(str(spec) + ".csv"))
    known = TIRESIAS_COMPAT_POLICIES if compat else TIRESIAS_POLICIES
    names = list(known) if policies == "all" else (
        [p for p in policies.split(",") if p] if isinstance(policies, str) else list(policies))
    for n in names:
        if n not in known:
            hint = " (gittins runs on the engine only: compat=False)" if compat and n == "gittins" else ""
            raise ValueError(f"unknown policy {n!r} (one of {', '.join(known)}){hint}")
    names = list(dict.fromkeys(names))
    if not names:
        raise ValueError("no policy given")
    # As the command line: no option that would change nothing, and whole seconds.
    given = {"starvation": starvation, "thresholds": thresholds, "placement": placement, "restart_overhead": restart_overhead,
             "within_queue": within_queue, "quantum": quantum, "distribution": distribution}
    readers = {"starvation": ("las", "2d-las"), "thresholds": ("las", "2d-las"), "within_queue": ("las", "2d-las", "gittins"),
               "quantum": ("gittins",), "distribution": ("gittins",),
               "restart_overhead": tuple(p for p in TIRESIAS_POLICIES if p not in ("fifo", "fjf"))}
    for name, value in given.items():
        if value is None:
            continue
        if compat and name in ("placement", "restart_overhead", "within_queue", "quantum", "distribution"):
            raise ValueError(f"{name} applies to gpusched's engine only: the compat mode follows the simulator "
                             "(compat=False, or leave it out)")
        if name in readers and not any(n in readers[name] for n in names):
            raise ValueError(f"{name} applies to {', '.join(readers[name])}, which policies does not list")
    if thresholds is None:
        thresholds = (3250, 7200)
    if isinstance(thresholds, str):
        thresholds = [t for t in thresholds.split(",") if t.strip()]
    try:
        thresholds = [float(t) for t in thresholds]
    except (TypeError, ValueError):
        raise ValueError(f"thresholds: expected whole numbers of seconds, e.g. 3250,7200; got {thresholds!r}") from None
    if any(not (math.isfinite(t) and t >= 0 and t == int(t)) for t in thresholds):
        raise ValueError(f"thresholds: expected whole numbers of seconds, e.g. 3250,7200; got {thresholds!r}")
    within_queue = "running-first" if within_queue is None else within_queue
    if within_queue not in ("running-first", "fifo"):
        raise ValueError(f"within_queue must be 'running-first' or 'fifo', not {within_queue!r}")
    starvation = 0.0 if starvation is None else starvation
    placement = "binpack" if placement is None else placement
    restart_overhead = 0.0 if restart_overhead is None else restart_overhead
    quantum = 3600.0 if quantum is None else quantum
    if compat:
        return _tiresias_compat(trace_path, spec, names, starvation, thresholds)
    frames, rows, gpus = [], [], 0
    for policy in names:
        r = _core.tiresias_run(str(trace_path), str(spec), policy, thresholds, float(starvation),
                               within_queue, float(quantum), "" if distribution is None else str(distribution),
                               placement, float(restart_overhead))
        s = r.summary()
        gpus = int(s["cluster"]["gpus"])
        jobs = pd.DataFrame(r.jobs())
        jobs.insert(0, "policy", policy)
        frames.append(jobs)
        done = jobs[jobs["state"] == "completed"]
        rows.append(_summary_row(policy, len(jobs), done["jct_s"], done["end_s"],
                                 (done["jct_s"] - done["attained_s"]).clip(lower=0), int(jobs["preemptions"].sum()),
                                 bool(s["jobs"]["pending"] > 0), float(s["preemption"]["overhead_gpu_hours"])))
    return TiresiasResult(jobs=pd.concat(frames, ignore_index=True), summary=pd.DataFrame(rows), gpus=gpus, compat=False)


def read_tiresias_outputs(out: PathLike) -> TiresiasResult:
    """Reads summary.csv and jobs-<policy>.csv written by ``gpusched experiment tiresias`` (either
    mode: compat files have the simulator's columns). ``gpus`` is 0: the files do not say."""
    from .result import read_csv

    d = Path(out)
    summary = read_csv(d / "summary.csv")
    frames = []
    for policy in summary["policy"]:
        jobs = read_csv(d / f"jobs-{policy}.csv")
        jobs.insert(0, "policy", policy)
        frames.append(jobs)
    jobs = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    compat = "completed" in jobs.columns and "state" not in jobs.columns
    if compat:
        jobs["completed"] = jobs["completed"].astype(str).str.lower() == "true"
    return TiresiasResult(jobs=jobs, summary=summary, gpus=0, compat=compat)


def _summary_row(policy: str, jobs: int, jct: pd.Series, end: pd.Series, queueing: pd.Series, preemptions: int,
                 stuck: bool, overhead_gpu_hours: float) -> Dict[str, Any]:
    """One row of TiresiasResult.summary (summary.csv's columns) from the completed jobs' JCT, end
    and queueing time; the percentiles interpolate as the C++ summary does (numpy's default)."""
    return {
        "policy": policy,
        "jobs": jobs,
        "completed": len(jct),
        "mean_jct_s": jct.mean(),
        "median_jct_s": jct.median(),
        "p95_jct_s": jct.quantile(0.95),
        "makespan_s": end.max(),
        "mean_queueing_s": queueing.mean(),
        "preemptions": preemptions,
        "stuck": stuck,
        "overhead_gpu_hours": overhead_gpu_hours,
    }


def _tiresias_compat(trace_path: Path, spec: Path, names: List[str], starvation: float, thresholds) -> TiresiasResult:
    raw = _core.tiresias_compat(str(trace_path), str(spec), names, float(starvation), [int(t) for t in thresholds])
    jobs = pd.DataFrame(raw["jobs"])
    for col in ("start_time", "end_time"):
        jobs[col] = jobs[col].where(jobs[col] >= 0)
    jobs.insert(jobs.columns.get_loc("end_time") + 1, "jct", jobs["end_time"] - jobs["submit_time"])
    stuck = dict(zip(raw["runs"]["policy"], raw["runs"]["stuck"]))
    rows = []
    for policy in names:
        g = jobs[jobs["policy"] == policy]
        done = g[g["completed"]]
        rows.append(_summary_row(policy, len(g), done["jct"], done["end_time"], done["pending_time"],
                                 int(g["preempt"].sum()), bool(stuck[policy]), 0.0))
    return TiresiasResult(jobs=jobs, summary=pd.DataFrame(rows), gpus=int(raw["gpus"]), compat=True)


__all__ = ["FGD_POLICIES", "FGD_WORKLOADS", "FgdResult", "TIRESIAS_COMPAT_POLICIES", "TIRESIAS_POLICIES", "TiresiasResult", "default_traces_dir", "fgd",
           "read_fgd_outputs", "read_tiresias_outputs", "tiresias"]
