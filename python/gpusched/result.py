"""The result of one run as pandas DataFrames, with outputs and a plot."""

from __future__ import annotations

import csv
import os
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Union

import numpy as np
import pandas as pd

from . import _core

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: Columns of Result.events (the events.csv header).
EVENT_COLUMNS = ("time_s", "event", "job", "node", "detail")


class Result:
    """Everything one run produced.

    Example::

        r = gpusched.run("examples/small.json")
        r.summary["jobs"]["completed"]  # summary.json as a dict
        r.jobs[r.jobs.state == "completed"].wait_s.mean()
        r.timeseries.plot(x="time_s", y="gpu_alloc_pct")
        r.write("out/small")            # the same files as the CLI
    """

    def __init__(self, raw: _core.RunResult) -> None:
        self._raw = raw

    @property
    def raw(self) -> _core.RunResult:
        """The compiled result object (gpusched._core.RunResult)."""
        return self._raw

    @cached_property
    def summary(self) -> Dict[str, Any]:
        """summary.json as a dict: "jobs" (total, completed, failed, running, pending, ...), "wait"
        and "jct" (count, mean_s, p50_s, p95_s, p99_s, max_s), "allocation", "time", "queue",
        "cluster", "engine", the stamp (scenario, seed, profile, version) and the resolved "inputs"."""
        return self._raw.summary()

    @cached_property
    def jobs(self) -> pd.DataFrame:
        """One row per job, in workload order (the jobs.csv columns). Times in seconds; start_s,
        end_s, wait_s and jct_s are NaN where they do not apply."""
        return pd.DataFrame(self._raw.jobs())

    @cached_property
    def timeseries(self) -> pd.DataFrame:
        """One row per sample interval: time_s, gpu_alloc_pct, gpus_busy_pct, cpu_alloc_pct,
        memory_alloc_pct, pending_jobs, running_jobs."""
        return pd.DataFrame(self._raw.timeseries())

    @cached_property
    def fragmentation(self) -> pd.DataFrame:
        """FGD's fragmentation after every decision (placement or failure): t_s, decisions,
        arrived_pct, unallocated_pct, frag_pct, frag_ratio_pct. The first row is the starting
        state. Empty unless some job shares a GPU (or outputs.fragmentation is "on")."""
        return pd.DataFrame(self._raw.fragmentation())

    @cached_property
    def events(self) -> pd.DataFrame:
        """Every submit / start / finish / fail / requeue / node event (time_s, event, job, node,
        detail). Empty unless the scenario's outputs.event_log is true."""
        rows = [(r + [""] * len(EVENT_COLUMNS))[: len(EVENT_COLUMNS)] for r in csv.reader(self._raw.event_log())]
        frame = pd.DataFrame(rows, columns=list(EVENT_COLUMNS))
        frame = frame.astype({name: str for name in EVENT_COLUMNS[1:]})
        frame["time_s"] = frame["time_s"].astype(np.float64)
        return frame

    @property
    def stamp(self) -> Dict[str, Any]:
        """What produced the run: version, scenario, source, digest, seed, comment_line."""
        return self._raw.stamp

    @property
    def profile(self) -> str:
        """The scheduling profile's name."""
        return self._raw.profile_name

    @property
    def event_log(self) -> List[str]:
        """The raw event-log lines ('time_s,event,job,node,detail'), as in events.csv."""
        return self._raw.event_log()

    def write(self, directory: Union[str, "os.PathLike[str]"]) -> List[Path]:
        """Writes summary.json, jobs.csv, timeseries.csv, report.md (and events.csv when the event
        log is on, fragmentation.csv when fragmentation is recorded) into ``directory`` (created); returns the paths. Raises OutputError."""
        return [Path(p) for p in self._raw.write_outputs(Path(directory))]

    def format_summary(self) -> str:
        """The few aligned lines the command line prints."""
        return self._raw.format_summary()

    def plot(self, path: Union[str, "os.PathLike[str]", None] = None) -> "Figure":
        """GPU allocation % and pending jobs over time (matplotlib, Agg canvas; pyplot untouched).
        Saves a PNG to ``path`` when given; returns the Figure. Needs the ``plot`` extra."""
        from .plotting import plot_timeseries

        st = self.stamp
        title = f"{st['scenario']} (seed {st['seed']}, profile {self.profile})"
        return plot_timeseries(self.timeseries, title=title, path=path)

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
