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
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Optional, Union

import pandas as pd

from . import _core

if TYPE_CHECKING:
    from matplotlib.figure import Figure

PathLike = Union[str, "os.PathLike[str]"]

#: The policies of the paper, in its table order.
FGD_POLICIES: List[str] = list(_core.fgd_policy_names())


def default_traces_dir() -> Path:
    """``$GPUSCHED_TRACES_DIR`` when set, else ``../shared/traces`` from the working directory."""
    env = os.environ.get("GPUSCHED_TRACES_DIR")
    return Path(env) if env else Path("..") / "shared" / "traces"


@dataclass
class FgdResult:
    """What ``fgd`` returns. ``curve``: policy, seed, arrived_pct, unallocated_pct, frag_pct,
    frag_ratio_pct (one row per integer arrived %). ``summary``: per policy, the median over
    seeds at 100% and 130% arrived and fragmentation at 80%, with the paper's figures for the
    default workload. ``runs``: pods submitted and failed, wall time per run."""

    curve: pd.DataFrame
    summary: pd.DataFrame
    runs: pd.DataFrame
    wall_s: float
    threads: int
    info: Dict[str, Any] = field(default_factory=dict)

    def bands(self) -> pd.DataFrame:
        """Median and interquartile range over seeds of unallocated GPU %, per policy and
        arrived % (the plotted lines and bands)."""
        g = self.curve.groupby(["policy", "arrived_pct"], sort=False)["unallocated_pct"]
        out = pd.DataFrame({"median": g.median(), "q25": g.quantile(0.25), "q75": g.quantile(0.75)})
        return out.reset_index()

    def plot(self, path: Optional[PathLike] = None, title: str = "") -> "Figure":
        """Unallocated GPU % against arrived demand, one line per policy (median over seeds)
        with an interquartile band. Saves a PNG when ``path`` is given."""
        from .plotting import plot_fgd_curve

        if not title:
            title = f"FGD experiment, workload {self.info.get('workload', '?')}, {self.curve['seed'].nunique()} seeds"
        return plot_fgd_curve(self.bands(), title=title, path=path)


def fgd(
    traces: Optional[PathLike] = None,
    workload: str = "default",
    policies: Union[str, Iterable[str]] = "all",
    seeds: Union[str, int, Iterable[int]] = "42-51",
    out: Optional[PathLike] = None,
    jobs: int = 0,
    max_arrived_pct: float = 130.0,
    plot: bool = True,
) -> FgdResult:
    """Runs the FGD paper's experiment and returns DataFrames (see ``FgdResult``).

    traces: the folder holding ``alibaba-gpu-v2023-openb`` (or that folder itself); default
    ``default_traces_dir()``. workload: a variant name (``default``, ``gpushare80``, ...) or a
    pod-list path. policies: ``"all"``, a comma list or a list of ``FGD_POLICIES``. seeds: one
    seed, ``"42-51"``, a comma list or a list. out: also write curve.csv, summary.csv, runs.csv,
    report.md (and fgd.png when ``plot`` and matplotlib is installed) there. jobs: parallel
    runs (0 = one per core). Bad input raises the gpusched error naming what was wrong."""
    traces_dir = Path(traces) if traces is not None else default_traces_dir()
    policy_list = list(_core.parse_fgd_policies(policies if isinstance(policies, str) else ",".join(policies)))
    if isinstance(seeds, str):
        seed_list = list(_core.parse_seeds(seeds))
    elif isinstance(seeds, int):
        seed_list = [seeds]
    else:
        seed_list = [int(s) for s in seeds]
    raw = _core.fgd_experiment(
        traces_dir, workload, policy_list, seed_list, int(jobs), float(max_arrived_pct),
        None if out is None else Path(out),
    )
    result = FgdResult(
        curve=pd.DataFrame(raw["curve"]),
        summary=pd.DataFrame(raw["summary"]),
        runs=pd.DataFrame(raw["runs"]),
        wall_s=raw["wall_s"],
        threads=raw["threads"],
        info={k: raw[k] for k in ("workload", "pod_source", "node_source", "nodes", "gpus", "trace_pods")},
    )
    if out is not None and plot:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            return result
        result.plot(Path(out) / "fgd.png")
    return result


def read_fgd_outputs(out: PathLike) -> FgdResult:
    """Reads curve.csv, summary.csv and runs.csv written by ``gpusched experiment fgd``."""
    d = Path(out)
    read = lambda name: pd.read_csv(d / name, comment="#")  # noqa: E731
    return FgdResult(curve=read("curve.csv"), summary=read("summary.csv"), runs=read("runs.csv"), wall_s=float("nan"), threads=0)


__all__ = ["FGD_POLICIES", "FgdResult", "default_traces_dir", "fgd", "read_fgd_outputs"]
