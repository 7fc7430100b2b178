"""Parameter sweeps: many runs of one scenario, in parallel, as one tidy DataFrame.

``gpusched.sweep`` runs scenario x parameter x seed combinations — on local threads, local
processes or a Dask cluster, with the same numbers whichever — and returns one row per run::

    import gpusched
    df = gpusched.sweep("examples/fill.json",
                        grid={"profile": ["best-fit", "fgd"], "workload.synthetic.jobs": [1500, 3000]},
                        seeds="1-5")
    df.groupby(["profile", "workload.synthetic.jobs"])["final_unallocated_pct"].agg(["mean", "std"])

    from dask.distributed import Client
    df = gpusched.sweep(base, grid=grid, seeds="1-100", executor=Client("tcp://scheduler:8786"))

This module imports neither pandas nor Dask nor tqdm until a sweep runs, so ``import gpusched``
stays fast.
"""

from __future__ import annotations

import copy
import json
import os
import re
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from . import _core
from ._fanout import run_tasks
from ._seeds import check_seed
from ._progress import Progress, want_progress

if TYPE_CHECKING:
    import pandas as pd

    from .api import ScenarioLike

PathLike = Union[str, "os.PathLike[str]"]
#: ``{path: [values]}`` (cartesian product, in key order) or ``[{path: value, ...}, ...]``.
Grid = Union[Mapping[str, Iterable[Any]], Sequence[Mapping[str, Any]]]
#: One seed, ``"42-51"`` / ``"1,5-7"``, or an iterable of seeds.
Seeds = Union[int, str, Iterable[int]]


class ParameterPathError(KeyError, ValueError):
    """A sweep parameter path that does not address the scenario (``.path`` holds it).

    A KeyError (a missing key) and a ValueError (a bad argument) at once, so either ``except``
    catches it; its message names the path, where it stopped and what is there instead."""

    def __init__(self, path: str, message: str) -> None:
        super().__init__(f"sweep parameter {path!r}: {message}")
        self.path = path

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


# --------------------------------------------------------------------------------------------
# Parameter paths: "workload.synthetic.load", "cluster.node_groups[0].count", "profile".

_TOKEN = re.compile(r"([^.\[\]]+)|\[(-?\d+)\]|(\.)")


def _parse_path(path: str) -> List[Union[str, int]]:
    """``"a.b[0].c"`` -> ``["a", "b", 0, "c"]``; ParameterPathError for malformed text."""
    if not isinstance(path, str) or not path:
        raise ParameterPathError(str(path), "a parameter path is a non-empty string like 'workload.synthetic.load'")
    steps: List[Union[str, int]] = []
    pos = 0
    expect_key = True   # at the start and after a dot, a key must follow
    while pos < len(path):
        m = _TOKEN.match(path, pos)
        if m is None:
            raise ParameterPathError(path, f"cannot parse it at character {pos + 1} (use keys.joined.by.dots and [index])")
        key, index, dot = m.groups()
        if dot is not None:
            if expect_key:
                raise ParameterPathError(path, f"empty key at character {pos + 1}")
            expect_key = True
        elif key is not None:
            if not expect_key:
                raise ParameterPathError(path, f"a key must follow a dot at character {pos + 1}")
            steps.append(key)
            expect_key = False
        else:
            if expect_key:
                raise ParameterPathError(path, f"an [index] must follow a key at character {pos + 1}")
            steps.append(int(index))
        pos = m.end()
    if expect_key:
        raise ParameterPathError(path, "it ends with a dot")
    return steps


def _where(steps: Sequence[Union[str, int]]) -> str:
    out = ""
    for s in steps:
        out += f"[{s}]" if isinstance(s, int) else (f".{s}" if out else s)
    return out or "the scenario"


def _plain(value: Any) -> Any:
    """A value as it goes into the scenario: builders' objects become dicts, numpy scalars
    Python numbers, containers are copied."""
    if hasattr(value, "to_dict") and not isinstance(value, Mapping):
        value = value.to_dict()
    if hasattr(value, "item") and type(value).__module__ == "numpy":
        value = value.item() if getattr(value, "ndim", 0) == 0 else value.tolist()
    return copy.deepcopy(value)


def set_path(doc: Dict[str, Any], path: str, value: Any) -> bool:
    """Sets ``value`` at ``path`` in the scenario dict ``doc`` (in place); True when the last
    key was created.

    Every step must exist except the last key of a dict, which is created when missing (so a
    path can add ``outputs.sample_interval_s``). ParameterPathError names the path otherwise."""
    steps = _parse_path(path)
    node: Any = doc
    for i, step in enumerate(steps):
        last = i == len(steps) - 1
        here = _where(steps[:i])
        if isinstance(step, int):
            if not isinstance(node, list):
                raise ParameterPathError(path, f"{here} is a {type(node).__name__}, not a list, so [{step}] does not apply")
            if not -len(node) <= step < len(node):
                raise ParameterPathError(path, f"{here} has {len(node)} entries; there is no [{step}]")
        else:
            if not isinstance(node, dict):
                raise ParameterPathError(path, f"{here} is a {type(node).__name__}, not an object, so it has no key {step!r}")
            if step not in node and not last:
                keys = ", ".join(sorted(map(str, node))) or "none"
                raise ParameterPathError(path, f"{here} has no key {step!r} (its keys: {keys})")
        if last:
            created = isinstance(step, str) and step not in node
            node[step] = _plain(value)
            return created
        node = node[step]
    return False


def _label(value: Any) -> Any:
    """The value recorded in a swept column: scalars as they are; a profile (dict or
    gpusched.Profile) by its name; other containers as compact sorted JSON."""
    if hasattr(value, "to_dict") and not isinstance(value, Mapping):
        value = value.to_dict()
    if isinstance(value, Mapping):
        if isinstance(value.get("name"), str):
            return value["name"]
        return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str)
    if isinstance(value, (list, tuple)):
        return json.dumps(list(value), separators=(",", ":"), default=str)
    if hasattr(value, "item") and type(value).__module__ == "numpy" and getattr(value, "ndim", 0) == 0:
        return value.item()
    return value


def _check_created(doc: Dict[str, Any], base: "_Base", created: List[str]) -> None:
    """Validates a scenario in which a path created a key (a typo like ``...synthetic.lod``
    must fail here, before any run, not in a worker); the error names the path(s)."""
    try:
        _core.validate_json(json.dumps(doc, default=_json_default), source=base.source, base_dir=Path(base.base_dir))
    except _core.GpuschedError as e:
        _add_note(e, "sweep parameter(s) " + ", ".join(repr(p) for p in created) + " added key(s) the base scenario did not have")
        raise


def _add_note(error: BaseException, note: str) -> None:
    """``error.add_note(note)``, or its effect on Python < 3.11."""
    add_note = getattr(error, "add_note", None)
    if add_note is not None:
        add_note(note)
    else:
        error.__notes__ = list(getattr(error, "__notes__", [])) + [note]  # type: ignore[attr-defined]


def _json_default(value: Any) -> Any:
    from .api import _json_default as default

    return default(value)


# --------------------------------------------------------------------------------------------
# Inputs: the base scenario(s), the grid, the seeds.


@dataclass
class _Base:
    doc: Dict[str, Any]
    base_dir: str
    source: str
    label: str


def _load_base(base: Any, base_dir: Optional[PathLike]) -> _Base:
    from .api import _resolve, demo_scenario

    bdir = Path(base_dir).resolve() if base_dir is not None else Path.cwd()
    if hasattr(base, "to_dict") and not isinstance(base, Mapping):
        base = base.to_dict()
    if isinstance(base, Mapping):
        doc = copy.deepcopy(dict(base))
        return _Base(doc, str(bdir), "<python>", str(doc.get("name", "")))
    how = _resolve(base, None, base_dir)
    if how.kind == "demo":
        doc = demo_scenario()
        return _Base(doc, str(bdir), "<built-in demo>", str(doc.get("name", "demo")))
    if how.kind == "json":
        # Read as gpusched reads scenario files: ScenarioError (id, line) for bad JSON, deep nesting, 1e999.
        doc = _core.read_json(how.text.encode("utf-8"), "<string>")
        if not isinstance(doc, dict):
            raise TypeError("<string>: a scenario holds a JSON object")
        return _Base(doc, str(bdir), "<string>", str(doc.get("name", "")))
    path = Path(how.path)
    doc = _core.read_json(path)  # ScenarioError with the file and the line when it is not JSON
    if not isinstance(doc, dict):
        _core.validate_file(path)
        raise TypeError(f"{path}: a scenario file holds a JSON object")
    where = Path(base_dir).resolve() if base_dir is not None else path.resolve().parent
    return _Base(doc, str(where), str(path), str(doc.get("name", path.stem)))


def _overrides(grid: Optional[Grid]) -> Tuple[List[str], List[Dict[str, Any]]]:
    """The swept paths (column order) and one {path: value} per grid point, in order."""
    if grid is None:
        return [], [{}]
    if isinstance(grid, Mapping):
        import itertools

        paths = list(grid)
        values: List[List[Any]] = []
        for p in paths:
            v = grid[p]
            if isinstance(v, (str, bytes, Mapping)) or not hasattr(v, "__iter__"):
                raise ValueError(f"grid[{p!r}] must be a list of values (got {type(v).__name__}); "
                                 f"for one value use [{v!r}]")
            vals = list(v)
            if not vals:
                raise ValueError(f"grid[{p!r}] is empty: a sweep over no values has no runs")
            values.append(vals)
        for p in paths:
            _parse_path(p)
        return paths, [dict(zip(paths, combo)) for combo in itertools.product(*values)]
    if isinstance(grid, (str, bytes)) or not hasattr(grid, "__iter__"):
        raise TypeError("grid is a dict {path: [values]} or a list of override dicts [{path: value}, ...]")
    points = []
    paths = []
    for i, point in enumerate(grid):
        if not isinstance(point, Mapping):
            raise TypeError(f"grid[{i}] must be a dict {{path: value}}, got {type(point).__name__}")
        for p in point:
            _parse_path(p)
            if p not in paths:
                paths.append(p)
        points.append(dict(point))
    if not points:
        raise ValueError("grid is an empty list: a sweep over no points has no runs")
    return paths, points


def _seeds(seeds: Optional[Seeds]) -> List[Optional[int]]:
    if seeds is None:
        return [None]
    if isinstance(seeds, str):
        return [int(s) for s in _core.parse_seeds(seeds)]
    if isinstance(seeds, bool):
        raise TypeError("seeds is an int, a string like '42-51' or '1,2,3', or a list of ints")
    if isinstance(seeds, int) or (type(seeds).__module__ == "numpy" and getattr(seeds, "ndim", 1) == 0):
        out = [check_seed(seeds, "seeds")]
    else:
        out = [check_seed(s, "seeds") for s in seeds]   # 0..2**64-1, else ScenarioError
    if not out:
        raise ValueError("seeds is empty: a sweep over no seeds has no runs")
    return out


# --------------------------------------------------------------------------------------------
# One run (executes in a worker: a thread, a process or a Dask worker).


@dataclass
class _Task:
    run: int
    doc: Dict[str, Any]
    seed: Optional[int]
    base_dir: str
    source: str
    jobs: bool
    timeseries: bool
    plugins: Optional[bytes]   # cloudpickled gpusched.policy.registrations(), or None


#: Summary figures that get a shorter name; the rest flatten to section_key.
_RENAMES = {
    ("allocation", "gpu_pct_time_weighted"): "gpu_alloc_pct",
    ("allocation", "cpu_pct_time_weighted"): "cpu_alloc_pct",
    ("allocation", "gpu_pct_peak"): "gpu_alloc_peak_pct",
    ("allocation", "gpu_pct_while_arriving"): "gpu_alloc_arriving_pct",
    ("allocation", "gpu_hours"): "gpu_hours",
    ("time", "makespan_s"): "makespan_s",
    ("time", "end_s"): "end_s",
    ("time", "first_submit_s"): "first_submit_s",
    ("time", "last_submit_s"): "last_submit_s",
    ("queue", "peak_pending"): "peak_pending_jobs",
    ("preemption", "preemptions"): "preemptions",
    ("preemption", "evictions"): "evictions",
    ("preemption", "lost_gpu_hours"): "lost_gpu_hours",
    ("cluster", "nodes"): "nodes",
    ("cluster", "gpus"): "gpus",
    ("engine", "events"): "events",
    ("engine", "schedule_attempts"): "schedule_attempts",
    ("fragmentation", "samples"): "frag_samples",
    ("fragmentation", "peak_frag_pct"): "peak_frag_pct",
    ("fragmentation", "final", "arrived_pct"): "final_arrived_pct",
    ("fragmentation", "final", "unallocated_pct"): "final_unallocated_pct",
    ("fragmentation", "final", "frag_pct"): "final_frag_pct",
    ("fragmentation", "final", "frag_ratio_pct"): "final_frag_ratio_pct",
}
#: Column order of the figures in the runs frame (others follow in summary order).
_ORDER = (
    "jobs_total", "jobs_completed", "jobs_failed", "jobs_pending", "jobs_running", "jobs_requeued", "jobs_not_arrived",
    "wait_mean_s", "wait_p50_s", "wait_p95_s", "wait_p99_s", "wait_max_s", "wait_count",
    "jct_mean_s", "jct_p50_s", "jct_p95_s", "jct_p99_s", "jct_max_s", "jct_count",
    "gpu_alloc_pct", "cpu_alloc_pct", "gpu_alloc_peak_pct", "gpu_alloc_arriving_pct", "gpu_hours",
    "makespan_s", "first_submit_s", "last_submit_s", "end_s", "peak_pending_jobs",
    "preemptions", "evictions", "lost_gpu_hours",
    "final_unallocated_pct", "final_frag_pct", "final_frag_ratio_pct", "final_arrived_pct", "peak_frag_pct",
    "frag_samples", "nodes", "gpus", "events", "schedule_attempts",
)
#: Summary parts that are not figures (the stamp and the resolved inputs).
_SKIP = {"inputs", "scenario", "kind", "schema_version", "gpusched_version", "seed", "profile"}


def flatten_summary(summary: Mapping[str, Any]) -> Dict[str, Any]:
    """The numeric figures of a run's summary as one flat dict, units in the names.

    ``jobs.completed`` -> ``jobs_completed``; ``wait.mean_s`` -> ``wait_mean_s``;
    ``allocation.gpu_pct_time_weighted`` -> ``gpu_alloc_pct`` (see the table in ``sweep``);
    sections without a rename flatten to ``section_key`` (``autoscaler_...``). Strings, the
    stamp and the resolved inputs are left out."""
    out: Dict[str, Any] = {}

    def walk(prefix: Tuple[str, ...], value: Any) -> None:
        if isinstance(value, Mapping):
            for k in value:
                walk(prefix + (str(k),), value[k])
            return
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return
        name = _RENAMES.get(prefix)
        if name is None:
            if prefix[0] in ("wait", "jct") and prefix[-1] == "count":
                name = f"{prefix[0]}_count"
            else:
                name = "_".join(prefix)
        out[name] = value

    for key in summary:
        if key not in _SKIP:
            walk((str(key),), summary[key])
    return out


def _load_plugins(blob: Optional[bytes]) -> None:
    if not blob:
        return
    import pickle

    from . import policy

    policy.ensure_registered(pickle.loads(blob))


def _run_task(task: _Task) -> Dict[str, Any]:
    """Runs one sweep point; returns plain picklable data (no _core objects)."""
    from .api import run

    _load_plugins(task.plugins)
    r = run(task.doc, seed=task.seed, source=task.source, base_dir=task.base_dir)
    summary = r.summary
    out: Dict[str, Any] = {"seed": int(summary["seed"]), "figures": flatten_summary(summary)}
    if task.jobs:
        out["jobs"] = r.jobs
    if task.timeseries:
        out["timeseries"] = r.timeseries
    return out


def _plugin_blob() -> Optional[bytes]:
    """This process's Python plugin registrations, cloudpickled (None when there are none)."""
    from . import policy

    specs = policy.registrations()
    if not specs:
        return None
    try:
        import cloudpickle
    except ImportError:
        import pickle

        return pickle.dumps(specs)
    return cloudpickle.dumps(specs)


# --------------------------------------------------------------------------------------------
# Failures (the runs themselves go out through gpusched._fanout.run_tasks).


def _annotate(error: BaseException, task: _Task, params: Mapping[str, Any]) -> BaseException:
    what = ", ".join(f"{k}={v!r}" for k, v in params.items())
    _add_note(error, f"in sweep run {task.run} ({what + ', ' if what else ''}seed={task.seed if task.seed is not None else 'scenario'})")
    return error


# --------------------------------------------------------------------------------------------
# The public function and its result.


@dataclass
class SweepResult:
    """What ``sweep(..., jobs=True)`` and/or ``timeseries=True`` return.

    ``runs``: one row per run (what ``sweep`` returns without those flags). ``jobs`` /
    ``timeseries``: every run's Result.jobs / Result.timeseries stacked (long form), each row
    prefixed with the run's ``run``, ``scenario`` (several bases only), swept columns and
    ``seed``; None unless asked for. ``parameters``: the swept columns, in order. ``wall_s``:
    the sweep's wall time."""

    runs: "pd.DataFrame"
    jobs: Optional["pd.DataFrame"] = None
    timeseries: Optional["pd.DataFrame"] = None
    parameters: List[str] = field(default_factory=list)
    wall_s: float = 0.0


def sweep(
    base: Union["ScenarioLike", Sequence["ScenarioLike"]],
    grid: Optional[Grid] = None,
    seeds: Optional[Seeds] = None,
    *,
    executor: Any = None,
    max_workers: Optional[int] = None,
    progress: Optional[bool] = None,
    jobs: bool = False,
    timeseries: bool = False,
    base_dir: Optional[PathLike] = None,
) -> Union["pd.DataFrame", SweepResult]:
    """Runs ``base`` at every grid point and seed; returns one row per run (a DataFrame).

    **base**: what ``gpusched.run`` accepts — a scenario dict, a ``gpusched.Scenario``, a path
    to a scenario file, JSON text or ``"demo"`` — loaded once. Relative trace paths in a file
    resolve from the file's folder (``base_dir`` overrides; for dicts it defaults to the current
    folder). A list of those sweeps each of them (adds a ``scenario`` column: each scenario's
    name, made unique with ``#i``).

    **grid**: ``{path: [values]}`` runs the cartesian product in key order (the last key varies
    fastest), or a list of override dicts ``[{path: value, ...}, ...]`` runs exactly those
    points; None runs the base as it is. A path addresses the scenario with dotted keys and
    ``[i]`` indexes: ``"workload.synthetic.load"``, ``"cluster.node_groups[0].count"``,
    ``"profile"`` (a built-in profile name, a profile dict or a ``gpusched.Profile``). Every
    step must exist, except the last key of an object, which is created; otherwise
    ``ParameterPathError`` (a KeyError and a ValueError) names the path and what is there.

    **seeds**: one seed, an iterable, or text like ``"42-51"`` / ``"1,5-7"``. None: the
    scenario's own seed (a grid may also sweep ``"seed"``).

    **executor**: where the runs go. None or ``"threads"`` (the default): a thread pool of
    ``max_workers`` (default: every core this process may use). The simulation runs in C++ with
    the GIL released, so threads are truly parallel, start instantly, share the loaded
    scenario without pickling and see this process's Python plugins; that makes them the
    fastest and most robust local choice (2 cores: 16 runs of 20,000 jobs take 2.68 s on one
    thread, 1.38 s on two threads, 1.41 s on two processes; 12 runs of 1,000 jobs 0.12 s on
    threads, 1.2 s on processes, which pay for starting Python). ``"processes"``: a ProcessPoolExecutor (forkserver)
    of ``max_workers``, for Python plugins heavy enough to contend for the GIL. Any
    ``concurrent.futures.Executor`` is used as given (and left open). A
    ``dask.distributed.Client`` fans the runs out to its workers (on any machines: they need
    gpusched installed and, for traces, the same paths); the call is otherwise unchanged.
    Python plugins registered here (``gpusched.register_plugin``) travel with every task and
    are registered in the worker before its run. Results are identical whatever the executor:
    each run depends only on its scenario and seed, and rows come back in run order.

    **progress**: None (default) shows a bar with an ETA (tqdm; a widget in notebooks) only
    when stderr is a terminal or in a Jupyter notebook; True forces it (also into logs);
    False never.

    **jobs** / **timeseries**: also collect every run's jobs / time series in long form; then
    a ``SweepResult`` (``.runs``, ``.jobs``, ``.timeseries``) is returned instead of the frame.

    Columns of the runs frame, in order:

    - ``run``: 0, 1, ... in scenario, then grid, then seed order;
    - ``scenario`` (several bases only); one column per swept path, named by the path, holding
      the value (a profile dict or Profile: its name; other lists/dicts: compact JSON);
    - ``seed``: the seed the run used;
    - counts: ``jobs_total``, ``jobs_completed``, ``jobs_failed``, ``jobs_pending``,
      ``jobs_running``, ``jobs_requeued``, ``jobs_not_arrived``, ``wait_count``, ``jct_count``,
      ``peak_pending_jobs``, ``preemptions``, ``evictions``, ``nodes``, ``gpus``, ``events``,
      ``schedule_attempts``;
    - seconds: ``wait_mean_s``, ``wait_p50_s``, ``wait_p95_s``, ``wait_p99_s``, ``wait_max_s``,
      the same for ``jct_*_s`` (job completion time), ``makespan_s``, ``end_s``,
      ``first_submit_s``, ``last_submit_s``;
    - percent: ``gpu_alloc_pct`` (GPU allocation, time-weighted over the run),
      ``cpu_alloc_pct``, ``gpu_alloc_peak_pct``, ``gpu_alloc_arriving_pct`` (time-weighted while
      jobs still arrive);
    - GPU-hours: ``gpu_hours`` (allocated), ``lost_gpu_hours`` (work lost to preemption);
    - with GPU sharing or fill mode: ``final_unallocated_pct``, ``final_frag_pct``,
      ``final_frag_ratio_pct``, ``final_arrived_pct``, ``peak_frag_pct``, ``frag_samples``;
    - any other numeric summary figure as ``section_key`` (e.g. ``autoscaler_...``).

    Errors: a bad path or grid raises before anything runs; a run that fails raises the
    original gpusched exception (ScenarioError, TraceError, ...) with a note naming the run and
    its parameters, after cancelling the runs not yet started.

    Example::

        df = gpusched.sweep("examples/fill.json", {"profile": ["best-fit", "fgd"]}, seeds="1-10")
        df.groupby("profile")[["final_unallocated_pct", "gpu_alloc_pct"]].agg(["mean", "std"])
        r = gpusched.sweep(sc, {"workload.synthetic.load": [0.5, 1.0]}, jobs=True)
        r.jobs.groupby("workload.synthetic.load")["wait_s"].describe()
    """
    import pandas as pd

    t0 = time.monotonic()
    many = isinstance(base, (list, tuple))
    bases = [_load_base(b, base_dir) for b in (base if many else [base])]  # type: ignore[union-attr]
    if not bases:
        raise ValueError("base is an empty list: nothing to sweep")
    labels = [b.label or str(i) for i, b in enumerate(bases)]
    labels = [lab if labels.count(lab) == 1 else f"{lab}#{i}" for i, lab in enumerate(labels)]
    paths, points = _overrides(grid)
    seed_list = _seeds(seeds)
    for reserved in ("run", "scenario"):
        if reserved in paths:
            raise ParameterPathError(reserved, f"{reserved!r} names a column of the result; it is not a parameter")
    if "seed" in paths and seeds is not None:
        raise ValueError("the grid sweeps 'seed' and seeds=... is given too: use one of them")
    plugins = _plugin_blob()

    tasks: List[_Task] = []
    params: List[Dict[str, Any]] = []
    for b, label in zip(bases, labels):
        checked: set = set()
        for point in points:
            doc = copy.deepcopy(b.doc)
            created = [p for p, v in point.items() if set_path(doc, p, v)]
            if any(p not in checked for p in created):
                _check_created(doc, b, created)
                checked.update(created)
            shown = {p: _label(point[p]) if p in point else None for p in paths}
            for s in seed_list:
                tasks.append(_Task(len(tasks), doc, s, b.base_dir, b.source, jobs, timeseries, plugins))
                params.append(({"scenario": label} if many else {}) | shown)

    with Progress(len(tasks), "gpusched sweep", want_progress(progress)) as bar:
        results = run_tasks(_run_task, tasks, executor, max_workers, bar, thread_name="gpusched-sweep",
                            annotate=lambda i, error: _annotate(error, tasks[i], params[i]))

    head_cols = ["run"] + (["scenario"] if many else []) + paths + ([] if "seed" in paths else ["seed"])
    rows = []
    for t, p, r in zip(tasks, params, results):
        rows.append({"run": t.run, **p, "seed": r["seed"], **r["figures"]})
    runs = pd.DataFrame(rows)
    figures = [c for c in _ORDER if c in runs.columns]
    figures += [c for c in runs.columns if c not in head_cols and c not in figures]
    runs = runs[head_cols + figures]
    if not (jobs or timeseries):
        return runs

    def stack(key: str) -> "pd.DataFrame":
        frames = []
        for i, r in enumerate(results):
            frame = r[key].copy()
            for j, col in enumerate(head_cols):
                frame.insert(j, col, runs[col].iloc[i])
            frames.append(frame)
        out = pd.concat(frames, ignore_index=True)
        return out.astype({col: runs[col].dtype for col in head_cols})

    return SweepResult(
        runs=runs,
        jobs=stack("jobs") if jobs else None,
        timeseries=stack("timeseries") if timeseries else None,
        parameters=list(paths),
        wall_s=time.monotonic() - t0,
    )


__all__ = ["Grid", "ParameterPathError", "Seeds", "SweepResult", "flatten_summary", "set_path", "sweep"]
