"""The result of one run: pandas DataFrames, the output files, plots; picklable.

pandas, numpy and matplotlib are imported only when a table or a plot is asked for, so
``import gpusched`` stays fast.
"""

from __future__ import annotations

import os
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Tuple, Union

from . import _core

if TYPE_CHECKING:
    import pandas as pd
    from matplotlib.figure import Figure

#: Columns of Result.events (the events.csv header).
EVENT_COLUMNS = ("time_s", "event", "job", "node", "detail")

#: Columns of Result.placements.
PLACEMENT_COLUMNS = (
    "job", "task", "node", "gpu", "share_milli", "gpu_memory_mib", "mig_profile", "mig_start",
    "vgpu_profile", "tpu_chips", "start_s", "end_s",
)

#: Version of the pickled state (Result.__getstate__).
_STATE_VERSION = 1

PathLike = Union[str, "os.PathLike[str]"]


def read_csv(path: PathLike, **kwargs: Any) -> "pd.DataFrame":
    """Reads a CSV file written by gpusched into a DataFrame. Files start with their header row;
    files from older versions start with a ``# gpusched ...`` stamp line, which is skipped."""
    import pandas as pd

    p = Path(path)
    with open(p, "rb") as f:
        first = f.read(1)
    if first == b"#":
        kwargs.setdefault("comment", "#")
    return pd.read_csv(p, **kwargs)


def _output_files(raw: _core.RunResult) -> List[Tuple[str, bytes]]:
    """The files write_outputs writes, as (name, bytes) in its order: written by the same C++
    writer into a temporary folder and read back, so they are byte-identical by construction."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="gpusched-pickle-") as tmp:
        return [(Path(p).name, Path(p).read_bytes()) for p in raw.write_outputs(Path(tmp))]


class Result:
    """Everything one run produced.

    Example::

        r = gpusched.run("examples/small.json")
        r.summary["jobs"]["completed"]  # summary.json as a dict
        r.jobs[r.jobs.state == "completed"].wait_s.mean()
        r.placements                    # one row per (job, task, GPU): node, GPU index, share
        r.timeseries.plot(x="time_s", y="gpu_alloc_pct")
        r.plot_cdf("wait.png", metric="wait"); r.plot_heatmap("heatmap.png")
        r.write("out/small")            # the same files as the CLI

    A Result pickles (process pools, Dask): the copy carries the summary, stamp, profile, every
    table and the output files' bytes, so its ``write()`` writes byte-identical files. Its
    ``raw`` is None.
    """

    def __init__(self, raw: _core.RunResult) -> None:
        self._raw: Optional[_core.RunResult] = raw
        #: The pickled state once unpickled (then _raw is None).
        self._state: Optional[Dict[str, Any]] = None

    # -- access to the compiled result or to the unpickled state -------------------------------

    def _get(self, key: str) -> Any:
        """What ``raw.<key>()`` returns, from the compiled result or the unpickled state."""
        if self._state is not None:
            return self._state[key]
        assert self._raw is not None
        return getattr(self._raw, key)()

    def __getstate__(self) -> Dict[str, Any]:
        if self._state is not None:
            return self._state
        raw = self._raw
        assert raw is not None
        return {
            "version": _STATE_VERSION,
            "summary": raw.summary(),
            "stamp": raw.stamp,
            "profile_name": raw.profile_name,
            "format_summary": raw.format_summary(),
            "jobs": raw.jobs(),
            "timeseries": raw.timeseries(),
            "fragmentation": raw.fragmentation(),
            "event_log": raw.event_log(),
            "placements": raw.placements(),
            "claims": raw.claims(),
            "files": _output_files(raw),
        }

    def __setstate__(self, state: Dict[str, Any]) -> None:
        if state.get("version") != _STATE_VERSION:
            raise ValueError(
                f"cannot unpickle a gpusched.Result of state version {state.get('version')!r} "
                f"(this gpusched reads version {_STATE_VERSION})"
            )
        self._raw = None
        self._state = state

    # -- what a run produced -------------------------------------------------------------------

    @property
    def raw(self) -> Optional[_core.RunResult]:
        """The compiled result object (gpusched._core.RunResult); None in an unpickled Result."""
        return self._raw

    @cached_property
    def summary(self) -> Dict[str, Any]:
        """summary.json as a dict: "jobs" (total, completed, failed, running, pending, ...), "wait"
        and "jct" (count, mean_s, p50_s, p95_s, p99_s, max_s), "allocation", "time", "queue",
        "cluster", "engine", the stamp (scenario, seed, profile, version) and the resolved "inputs"."""
        return self._get("summary")

    @cached_property
    def jobs(self) -> "pd.DataFrame":
        """One row per job, in workload order (the jobs.csv columns). Times in seconds; start_s,
        end_s, wait_s and jct_s are NaN where they do not apply."""
        import pandas as pd

        return pd.DataFrame(self._get("jobs"))

    @cached_property
    def timeseries(self) -> "pd.DataFrame":
        """One row per sample interval: time_s, gpu_alloc_pct, gpus_busy_pct, cpu_alloc_pct,
        memory_alloc_pct, pending_jobs, running_jobs."""
        import pandas as pd

        return pd.DataFrame(self._get("timeseries"))

    @cached_property
    def fragmentation(self) -> "pd.DataFrame":
        """FGD's fragmentation after every decision (placement or failure): t_s, decisions,
        arrived_pct, unallocated_pct, frag_pct, frag_ratio_pct. The first row is the starting
        state. Empty unless some job shares a GPU (or outputs.fragmentation is "on")."""
        import pandas as pd

        return pd.DataFrame(self._get("fragmentation"))

    @cached_property
    def events(self) -> "pd.DataFrame":
        """Every submit / start / finish / fail / requeue / node event (time_s, event, job, node,
        detail). Empty unless the scenario's outputs.event_log is true."""
        import csv

        import pandas as pd

        width = len(EVENT_COLUMNS)
        rows = [(r + [""] * width)[:width] for r in csv.reader(self.event_log)]
        frame = pd.DataFrame(rows, columns=list(EVENT_COLUMNS))
        frame = frame.astype({name: str for name in EVENT_COLUMNS[1:]})
        frame["time_s"] = frame["time_s"].astype("float64")
        return frame

    @cached_property
    def placements(self) -> "pd.DataFrame":
        """Where each running or completed job ran (its last attempt), long form: one row per
        (job, task, GPU grant), one row for a task without GPUs. Columns: job, task, node, gpu
        (GPU index on the node, <NA> for a task without GPUs), share_milli (the GPU's compute
        share: 1000 = whole GPU, 0 for a memory-only share), gpu_memory_mib, mig_profile and
        mig_start (the MIG instance, None / <NA> when not MIG), vgpu_profile (None when not vGPU),
        tpu_chips, start_s, end_s (NaN while running). Sorted in workload order, then task, then
        GPU."""
        import pandas as pd

        cols = self._get("placements") if self._state is not None else self._raw_placements()
        if cols is None:
            raise NotImplementedError("this Result was pickled by a gpusched without RunResult.placements()")
        frame = pd.DataFrame(
            {
                "job": cols["job"],
                "task": cols["task"],
                "node": cols["node"],
                "gpu": pd.array(cols["gpu"], dtype="Int64"),
                "share_milli": cols["milli"],
                "gpu_memory_mib": cols["memory_mib"],
                "mig_profile": pd.Series([s or None for s in cols["mig_profile"]], dtype=object),
                "mig_start": pd.array(cols["mig_start"], dtype="Int64"),
                "vgpu_profile": pd.Series([s or None for s in cols["vgpu_profile"]], dtype=object),
                "tpu_chips": cols["tpu_chips"],
                "start_s": cols["start_s"],
                "end_s": cols["end_s"],
            }
        )
        for name in ("gpu", "mig_start"):
            frame.loc[frame[name] < 0, name] = pd.NA
        return frame

    @cached_property
    def claims(self) -> "pd.DataFrame":
        """The DRA devices each running or completed job's claims hold (its last attempt; the
        claims.csv columns): job, task, node, claim_template, request (the claim's request, or
        "request/alternative" for a firstAvailable one), driver, pool, device, admin_access (True:
        the device is monitored, not taken, and is not among the job's GPUs). A shared claim
        (resource_claim) is listed under each job that held its devices, with the claim's name in
        claim_template. Empty when no job has a claim (docs/dra.md)."""
        import pandas as pd

        columns = ["job", "task", "node", "claim_template", "request", "driver", "pool", "device", "admin_access"]
        if self._state is not None and "claims" not in self._state:
            raise NotImplementedError("this Result was pickled by a gpusched without RunResult.claims()")
        cols = self._get("claims")
        frame = pd.DataFrame({c: cols[c] for c in columns}, columns=columns)
        return frame.astype({"admin_access": bool})

    def _raw_placements(self) -> Dict[str, Any]:
        assert self._raw is not None
        return self._raw.placements()

    @property
    def stamp(self) -> Dict[str, Any]:
        """What produced the run: version, scenario, source, digest, seed."""
        if self._state is not None:
            return dict(self._state["stamp"])
        assert self._raw is not None
        return self._raw.stamp

    @property
    def profile(self) -> str:
        """The scheduling profile's name."""
        if self._state is not None:
            return str(self._state["profile_name"])
        assert self._raw is not None
        return self._raw.profile_name

    @property
    def event_log(self) -> List[str]:
        """The raw event-log lines ('time_s,event,job,node,detail'), as in events.csv."""
        return list(self._get("event_log"))

    @property
    def end_s(self) -> float:
        """When the simulation stopped (seconds): summary["time"]["end_s"]."""
        return float(self.summary["time"]["end_s"])

    def write(self, directory: PathLike) -> List[Path]:
        """Writes summary.json, meta.json, jobs.csv, timeseries.csv, report.md (and events.csv when
        the event log is on, fragmentation.csv when fragmentation is recorded) into ``directory``
        (created); returns the paths. An unpickled Result writes the same bytes. Raises
        OutputError.

        Atomic: the files go into a staging folder inside ``directory`` first and are moved into
        place at the end, ``summary.json`` last; files an earlier run left there under gpusched's
        own names (e.g. ``events.csv``) that this run does not write are removed, other files are
        left alone. On an error nothing that looks complete is left (no ``summary.json``); on
        Ctrl-C (KeyboardInterrupt) the folder is as it was."""
        if self._state is None:
            assert self._raw is not None
            return [Path(p) for p in self._raw.write_outputs(Path(directory))]
        return [Path(p) for p in _core.write_output_files(Path(directory), list(self._state["files"]))]

    def format_summary(self) -> str:
        """The few aligned lines the command line prints."""
        return self._get("format_summary")

    # -- plots ---------------------------------------------------------------------------------

    def _title(self) -> str:
        st = self.stamp
        return f"{st['scenario']} (seed {st['seed']}, profile {self.profile})"

    def plot(self, path: Optional[PathLike] = None) -> "Figure":
        """GPU allocation % and pending jobs over time (matplotlib, Agg canvas; pyplot untouched).
        Saves a PNG to ``path`` when given; returns the Figure. Needs the ``plot`` extra."""
        from .plotting import plot_timeseries

        return plot_timeseries(self.timeseries, title=self._title(), path=path)

    def plot_cdf(self, path: Optional[PathLike] = None, metric: str = "jct", logx: bool = False) -> "Figure":
        """The empirical CDF of job completion time (``metric="jct"``) or queueing wait
        (``"wait"``), over the jobs that have one. Saves a PNG to ``path`` when given; returns the
        Figure. See ``gpusched.plotting.cdf`` to put several runs on one plot."""
        from .plotting import cdf

        return cdf({self.profile: self}, metric=metric, logx=logx, title=self._title(), path=path)

    def allocation_matrix(self, bins: int = 120, max_nodes: int = 64) -> "pd.DataFrame":
        """GPUs allocated per node over time, the data of ``plot_heatmap``: one row per node (or
        group of nodes, see ``gpusched.plotting.allocation_matrix``), one column per time bin
        (labelled by its start, seconds), values the mean GPUs allocated during the bin."""
        from .plotting import allocation_matrix

        return allocation_matrix(self.placements, end_s=self.end_s, bins=bins, max_nodes=max_nodes)

    def plot_heatmap(self, path: Optional[PathLike] = None, bins: int = 120, max_nodes: int = 64) -> "Figure":
        """A node x time heatmap of GPUs allocated (nodes by name on y; beyond ``max_nodes``
        nodes, neighbours are summed into groups). Saves a PNG to ``path`` when given; returns the
        Figure."""
        from .plotting import plot_heatmap

        return plot_heatmap(self.allocation_matrix(bins=bins, max_nodes=max_nodes), title=self._title(), path=path)

    def __str__(self) -> str:
        return self.format_summary()

    def __repr__(self) -> str:
        s = self.summary
        st = self.stamp
        jobs = s["jobs"]
        return (
            f"<gpusched.Result {st['scenario']!r} seed={st['seed']} profile={self.profile!r}: "
            f"{jobs['total']} jobs, {jobs['completed']} completed, {jobs['failed']} failed, "
            f"{jobs['pending']} pending; GPU {s['allocation']['gpu_pct_time_weighted']:.1f}% allocated; "
            f"makespan {s['time']['makespan_s']:.0f} s>"
        )
