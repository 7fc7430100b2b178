"""An independent checker of a gpusched run: reads only the output files (events.csv, jobs.csv,
placements.csv) and the scenario input, never the library's internals.

The GPU catalog is read as data from libgpusched/data/gpu_models.json (the file the library
embeds), so memory sizes, MIG geometry and vGPU limits come from the documented catalog.

What is checked (each violation has a category, see ``Violation.kind``):

- ``overcommit``: at the end of every instant (all lines with one time), no node's CPU, memory,
  GPU compute (milli), GPU memory, replica count (time-slicing / MPS), vGPU count / profile or
  MIG slice is over-committed, and no grant names a GPU the node lacks;
- ``line-order``: the same, after every line of events.csv (README "Outputs": the log replays
  line by line; at one instant every release, a preemption victim's ``requeue`` included, comes
  before the acquisitions, ``placed`` / ``start`` / ``grow``, that use it);
- ``mig``: MIG instances at legal starts, within the GPU's slices, at most max_count per profile,
  on a static node only instances its layout has;
- ``down-node``: no start on a node that is down; after a node_down instant nothing runs there;
- ``before-submit``: no start before the job's submit time;
- ``duration``: a completed job ran its duration, slowed down as README says (time-slicing /
  MPS interference, vGPU / MIG / passthrough slowdowns), from its start (after a MIG
  reconfiguration delay when it got a new GPU instance), keeping checkpointed work across
  evictions with ``preemption.restart: checkpoint`` (none with ``from-zero``); each task on a
  time-sliced / MPS GPU is one sharer, and an elastic gang's tasks run in lockstep at the pace
  of the slowest (from a ``grow`` line on, with the grown tasks); reported as ``grow-shared-gpu``
  instead for jobs that shared a GPU where an elastic gang grew a task beside one of its own
  (a known engine finding, see ``Replay._duration_kind``);
- ``mig-start``: a job that takes a newly created dynamic-MIG instance is ``placed`` (it holds
  the placement from then) and ``start``s mig_reconfigure_s later on the same placement, at
  jobs.csv's start_s; one stopped before that has no ``start``; a job on existing instances
  (or with mig_reconfigure_s 0) ``start``s at once;
- ``jobs-csv`` / ``placements``: jobs.csv rows (state, attempts, evictions, start, end,
  placement) and placements.csv agree with the replayed log;
- ``elastic``: ``grow`` lines only for elastic gangs (min_available < tasks) that hold a
  placement, adding tasks up to ``tasks`` (they hold capacity from their line); a ``completed``
  job ran all its tasks; a ``partial`` one (jobs.csv) completed with fewer, its reason says
  "ran N of T tasks"; a running one with fewer says "running N of T tasks"; summary.json counts
  the partial jobs in ``jobs.partial`` and inside ``jobs.completed``;
- ``preemption``: a victim has a strictly lower priority than its preemptor; a job with
  preemption_policy Never preempts nobody;
- ``quota``: resource-quota limits hold (charge created: from submission until the job
  leaves; running: while it runs) and a job is refused only when it would exceed one;
- ``timeseries``: percentages within 0..100;
- ``sequence``: the log's per-job transitions are legal (submit, placed, start, grow,
  finish/requeue/fail).

Quota charges: the pod's nvidia.com/gpu (whole GPUs, HAMi shares: as written, HAMi's webhook
default 1), PCI passthrough aliases, gpu-milli 1000 (a whole GPU) times tasks, one job, CPUs times
tasks; with ``charge: running`` the tasks that run (an elastic gang's grown tasks from their
``grow`` line).
"""

from __future__ import annotations

import csv
import json
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Set, Tuple

REPO = Path(__file__).resolve().parents[3]
CATALOG_PATH = REPO / "libgpusched" / "data" / "gpu_models.json"

#: Work tolerance in seconds (outputs print microseconds; the engine rounds up per re-time).
WORK_TOL_S = 2e-4


@dataclass(frozen=True)
class Violation:
    kind: str
    time_s: float
    message: str

    def __str__(self) -> str:
        return f"[{self.kind}] t={self.time_s:.6f}: {self.message}"


# -- inputs ------------------------------------------------------------------------------------

_CATALOG: Optional[Dict[str, Dict[str, Any]]] = None


def catalog() -> Dict[str, Dict[str, Any]]:
    """GPU models by name and alias, from the catalog data file."""
    global _CATALOG
    if _CATALOG is None:
        doc = json.loads(CATALOG_PATH.read_text())
        out: Dict[str, Dict[str, Any]] = {}
        for m in doc["models"]:
            out[m["name"]] = m
            for a in m.get("aliases", []):
                out.setdefault(a, m)
        _CATALOG = out
    return _CATALOG


_SUFFIX = {"": 1, "k": 1000, "M": 1000**2, "G": 1000**3, "T": 1000**4, "P": 1000**5,
           "Ki": 1024, "Mi": 1024**2, "Gi": 1024**3, "Ti": 1024**4, "Pi": 1024**5}


def cpu_milli(q: Any) -> int:
    s = str(q)
    if s.endswith("m"):
        return int(round(float(s[:-1])))
    return int(round(float(s) * 1000))


def memory_mib(q: Any) -> int:
    s = str(q)
    m = re.fullmatch(r"([0-9.eE+-]+)(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P)?", s)
    assert m, s
    return int(float(m.group(1)) * _SUFFIX[m.group(2) or ""] // (1024 * 1024))


@dataclass
class NodeInfo:
    name: str
    cpu_milli: int
    memory_mib: int
    gpus: int
    model: Optional[Dict[str, Any]]
    partition: Dict[str, Any]

    @property
    def mode(self) -> str:
        return str(self.partition.get("mode", "whole"))


def nodes_of(scenario: Dict[str, Any]) -> Dict[str, NodeInfo]:
    cat = catalog()
    out: Dict[str, NodeInfo] = {}

    def add(name: str, d: Dict[str, Any]) -> None:
        model = cat[d["gpu_model"]] if d.get("gpu_model") else None
        out[name] = NodeInfo(name, cpu_milli(d["cpu"]), memory_mib(d["memory"]), int(d.get("gpus", 0)), model,
                             dict(d.get("gpu_partition") or {}))

    cl = scenario["cluster"]
    for g in cl.get("node_groups", []):
        for i in range(int(g.get("count", 1))):
            add(f"{g['name']}-{i:04d}", g)
    for n in cl.get("nodes", []):
        add(n["name"], n)
    return out


# -- placement strings -------------------------------------------------------------------------


@dataclass(frozen=True)
class Grant:
    index: int
    milli: int
    memory_mib: int
    mig_profile: str = ""
    mig_start: int = -1
    vgpu_profile: str = ""

    @property
    def kind(self) -> str:
        return "mig" if self.mig_profile else "vgpu" if self.vgpu_profile else "share"


@dataclass(frozen=True)
class Task:
    node: str
    grants: Tuple[Grant, ...]
    tpu_chips: int = 0


_TASK_RE = re.compile(r"^(?P<node>[^\[{]+)(?:\{tpu:(?P<tpu>\d+)\})?(?:\[(?P<grants>[^\]]*)\])?$")


def parse_placement(text: str, nodes: Dict[str, NodeInfo]) -> List[Task]:
    """`n0[0,1];n1[3:250m];n2[2:mig-3g.40gb@4]` -> tasks. Raises ValueError on bad syntax."""
    tasks: List[Task] = []
    if not text:
        return tasks
    for part in text.split(";"):
        m = _TASK_RE.match(part)
        if not m:
            raise ValueError(f"bad task placement {part!r}")
        node = m.group("node")
        info = nodes.get(node)
        grants: List[Grant] = []
        if m.group("grants"):
            for gtext in m.group("grants").split(","):
                idx_s, _, suffix = gtext.partition(":")
                idx = int(idx_s)
                total_mem = int(info.model["memory_mib"]) if info and info.model else 0
                if not suffix:
                    grants.append(Grant(idx, 1000, total_mem))
                elif suffix.startswith("mig-"):
                    prof, _, start = suffix[4:].rpartition("@")
                    grants.append(Grant(idx, 0, 0, mig_profile=prof, mig_start=int(start)))
                elif suffix.startswith("vgpu-"):
                    grants.append(Grant(idx, 0, 0, vgpu_profile=suffix[5:]))
                else:
                    sm = re.fullmatch(r"(?:(\d+)m)?/?(?:(\d+)Mi)?", suffix)
                    if not sm or (sm.group(1) is None and sm.group(2) is None):
                        raise ValueError(f"bad GPU grant {gtext!r}")
                    grants.append(Grant(idx, int(sm.group(1) or 0), int(sm.group(2) or 0)))
        tasks.append(Task(node, tuple(grants), int(m.group("tpu") or 0)))
    return tasks


# -- the replay --------------------------------------------------------------------------------


@dataclass
class JobRun:
    """What the checker knows of one job while replaying."""

    name: str
    submit_s: float
    duration_s: Optional[float]
    tasks: int
    priority: int
    gpu_util: float
    cpu_milli: int
    memory_mib: int
    never_preempts: bool
    requests: Dict[str, Any]
    queue: str
    min_available: int = 1
    state: str = "not_arrived"
    ready: bool = True              # False between `placed` and its `start` (MIG instance being created)
    last_start_line: float = math.nan
    grow_shared: bool = False       # ran on a GPU where an elastic gang grew a second task (see _duration_kind)
    placement: List[Task] = field(default_factory=list)
    placement_text: str = ""
    placed_at: float = math.nan
    run_from: float = math.nan      # work starts (placement + MIG reconfiguration delay)
    work_left: float = 0.0          # nominal seconds
    kept: float = 0.0
    rate: float = 1.0
    last: float = 0.0
    starts: int = 0
    evictions: int = 0
    end_s: float = math.nan
    late_reported: bool = False


class Replay:
    def __init__(self, scenario: Dict[str, Any], jobs_rows: List[Dict[str, str]]) -> None:
        self.scenario = scenario
        self.nodes = nodes_of(scenario)
        self.fill = scenario.get("mode") == "fill"
        dev = scenario.get("devices", {})
        self.mig_delay = float(dev.get("mig_reconfigure_s", 0) or 0)
        self.ts_overhead = float(dev.get("time_slicing_overhead", 0) or 0)
        slow = dev.get("slowdown", {})
        self.slowdown = {"vgpu": float(slow.get("vgpu", 1)), "mig": float(slow.get("mig", 1)),
                         "passthrough": float(slow.get("passthrough", 1))}
        pre = scenario.get("preemption", {})
        self.checkpoint = pre.get("restart") == "checkpoint"
        self.checkpoint_s = float(pre.get("checkpoint_interval_s", 600))
        self.violations: List[Violation] = []
        self.rows = {r["job"]: r for r in jobs_rows}
        specs = {str(j["id"]): j for j in scenario["workload"]["jobs"]}
        self.jobs: Dict[str, JobRun] = {}
        for name, r in self.rows.items():
            spec = specs[name]
            dur = spec.get("duration")
            self.jobs[name] = JobRun(
                name=name, submit_s=float(spec["submit_time"]),
                duration_s=None if dur in (None, "", "inf") else float(dur),
                tasks=int(r["tasks"]), priority=int(r["priority"]), gpu_util=float(spec.get("gpu_util", 1.0)),
                cpu_milli=int(r["cpu_milli"]), memory_mib=int(r["memory_mib"]),
                never_preempts=spec.get("preemption_policy") == "Never", requests=dict(spec.get("requests", {})),
                queue=str(spec.get("queue", "default")),
                min_available=int(spec.get("min_available", r["tasks"])))
        # Usage.
        self.cpu: Dict[str, int] = {n: 0 for n in self.nodes}
        self.mem: Dict[str, int] = {n: 0 for n in self.nodes}
        #: per node: GPU index -> the grants on it (job, grant)
        self.gpu: Dict[str, Dict[int, List[Tuple[str, Grant]]]] = {n: {} for n in self.nodes}
        self.down: Set[str] = set()
        #: dynamic MIG: existing GPU instances per GPU: (profile, start) -> busy job or "".
        self.gis: Dict[Tuple[str, int], Dict[Tuple[str, int], str]] = {}
        self.touched: Set[str] = set()
        #: time-sliced / MPS GPUs where a job grew a task beside one of its own (held before or grown
        #: at once): (node, GPU) -> job.
        self.grown_beside: Dict[Tuple[str, int], str] = {}
        self.now = 0.0
        self._init_quota()

    # -- helpers ----------------------------------------------------------------------------------

    def v(self, kind: str, msg: str) -> None:
        self.violations.append(Violation(kind, self.now, msg))

    def acquire(self, j: JobRun, tasks: List[Task]) -> None:
        for t in tasks:
            info = self.nodes.get(t.node)
            if info is None:
                self.v("jobs-csv", f"{j.name} placed on unknown node {t.node}")
                continue
            if t.node in self.down:
                self.v("down-node", f"{j.name} started on {t.node}, which is down")
            self.cpu[t.node] += j.cpu_milli
            self.mem[t.node] += j.memory_mib
            for g in t.grants:
                self.gpu[t.node].setdefault(g.index, []).append((j.name, g))
            self.touched.add(t.node)

    def release(self, j: JobRun) -> None:
        for t in j.placement:
            if t.node not in self.nodes:
                continue
            self.cpu[t.node] -= j.cpu_milli
            self.mem[t.node] -= j.memory_mib
            for g in t.grants:
                lst = self.gpu[t.node][g.index]
                lst.remove((j.name, g))
                if g.mig_profile:
                    gis = self.gis.get((t.node, g.index))
                    if gis is not None and gis.get((g.mig_profile, g.mig_start)) == j.name:
                        gis[(g.mig_profile, g.mig_start)] = ""
            self.touched.add(t.node)

    def check_nodes(self, kind: str, names: Set[str]) -> List[str]:
        """Capacity problems on `names` now (messages)."""
        out: List[str] = []
        for n in sorted(names):
            info = self.nodes[n]
            if self.cpu[n] > info.cpu_milli:
                out.append(f"{n}: CPU {self.cpu[n]}m > {info.cpu_milli}m")
            if self.mem[n] > info.memory_mib:
                out.append(f"{n}: memory {self.mem[n]} MiB > {info.memory_mib} MiB")
            for idx, lst in sorted(self.gpu[n].items()):
                if lst:
                    out.extend(self._check_gpu(info, idx, lst))
        return out

    def _check_gpu(self, info: NodeInfo, idx: int, lst: List[Tuple[str, Grant]]) -> List[str]:
        out: List[str] = []
        where = f"{info.name} GPU {idx}"
        if idx < 0 or idx >= info.gpus or info.model is None:
            return [f"{where}: the node has {info.gpus} GPUs"]
        model = info.model
        mode = info.mode
        kinds = {g.kind for _, g in lst}
        expected = {"mig": "mig", "vgpu": "vgpu"}.get(mode, "share")
        if kinds != {expected}:
            out.append(f"{where}: {mode} GPU holds grants of kind {sorted(kinds)}")
            return out
        if expected == "share":
            milli = sum(g.milli for _, g in lst)
            mem = sum(g.memory_mib for _, g in lst)
            if milli > 1000:
                out.append(f"{where}: compute {milli}m > 1000m ({[j for j, _ in lst]})")
            if mem > int(model["memory_mib"]):
                out.append(f"{where}: GPU memory {mem} MiB > {model['memory_mib']} MiB ({[j for j, _ in lst]})")
            if mode in ("time-slicing", "mps"):
                reps = int(info.partition.get("replicas", 1))
                if len(lst) > reps:
                    out.append(f"{where}: {len(lst)} sharers > {reps} replicas")
        elif expected == "vgpu":
            profs = {g.vgpu_profile for _, g in lst}
            if len(profs) > 1:
                out.append(f"{where}: vGPU profiles mixed {sorted(profs)}")
            cat = {p["name"]: p for p in model.get("vgpu", [])}
            for p in profs:
                if p not in cat:
                    out.append(f"{where}: unknown vGPU profile {p}")
                    continue
                if len(lst) > int(cat[p]["max_per_gpu"]):
                    out.append(f"{where}: {len(lst)} vGPUs {p} > max_per_gpu {cat[p]['max_per_gpu']}")
                if len(lst) * int(cat[p]["framebuffer_mib"]) > int(model["memory_mib"]):
                    out.append(f"{where}: vGPU framebuffers exceed GPU memory")
            fixed = info.partition.get("vgpu_profile")
            if fixed and profs != {fixed}:
                out.append(f"{where}: vGPU profile {sorted(profs)} on a GPU fixed to {fixed}")
        else:
            geo = model["mig"]
            profs = {p["name"]: p for p in geo["profiles"]}
            used: Dict[int, str] = {}
            compute = 0
            counts: Dict[str, int] = {}
            media = 0
            for j, g in lst:
                p = profs.get(g.mig_profile)
                if p is None:
                    out.append(f"{where}: unknown MIG profile {g.mig_profile} ({j})")
                    continue
                if g.mig_start not in p["starts"]:
                    out.append(f"{where}: {g.mig_profile}@{g.mig_start} is not a legal start ({j})")
                for s in range(g.mig_start, g.mig_start + int(p["memory_slices"])):
                    if s >= int(geo["memory_slices"]):
                        out.append(f"{where}: {g.mig_profile}@{g.mig_start} passes the last memory slice ({j})")
                    if s in used:
                        out.append(f"{where}: memory slice {s} held by {used[s]} and {j}")
                    used[s] = j
                compute += int(p["compute_slices"])
                counts[g.mig_profile] = counts.get(g.mig_profile, 0) + 1
                if int(p.get("max_count", 99)) < counts[g.mig_profile]:
                    out.append(f"{where}: {counts[g.mig_profile]} x {g.mig_profile} > max_count {p['max_count']}")
                media += 1 if p.get("media_extensions") else 0
            if compute > int(geo["compute_slices"]):
                out.append(f"{where}: {compute} compute slices > {geo['compute_slices']}")
            if media > int(geo.get("max_media_instances", 99)):
                out.append(f"{where}: {media} media-extension instances > {geo['max_media_instances']}")
        return out

    # -- MIG instances (dynamic nodes) --------------------------------------------------------------

    def _static_layout_ok(self, info: NodeInfo, g: Grant) -> bool:
        layout = info.partition.get("layout")
        if layout is None:
            return True
        for e in layout:
            prof = e if isinstance(e, str) else e["profile"]
            start = None if isinstance(e, str) else e.get("start")
            if prof == g.mig_profile and (start is None or int(start) == g.mig_start):
                return True
        return False

    def _mig_created(self, j: JobRun, tasks: List[Task]) -> bool:
        """Did `j`'s `tasks` need a new GPU instance (dynamic MIG)? Updates the instances."""
        created = False
        geo_cache: Dict[str, Dict[str, Any]] = {}
        for t in tasks:
            info = self.nodes.get(t.node)
            if info is None or info.mode != "mig":
                continue
            for g in t.grants:
                if not g.mig_profile:
                    continue
                if not info.partition.get("dynamic"):
                    if not self._static_layout_ok(info, g):
                        self.v("mig", f"{j.name}: {t.node} GPU {g.index} {g.mig_profile}@{g.mig_start} "
                                      f"is not in the node's static layout")
                    continue
                gis = self.gis.setdefault((t.node, g.index), {})
                key = (g.mig_profile, g.mig_start)
                if key in gis and gis[key] == "":
                    gis[key] = j.name
                    continue
                created = True
                geo = info.model["mig"] if info.model else {"profiles": []}
                geo_cache.setdefault(t.node, {p["name"]: p for p in geo["profiles"]})
                profs = geo_cache[t.node]
                p = profs.get(g.mig_profile)
                if p is None:
                    continue
                mine = set(range(g.mig_start, g.mig_start + int(p["memory_slices"])))
                for (op, os_), busy in list(gis.items()):
                    q = profs.get(op)
                    if q is None:
                        continue
                    theirs = set(range(os_, os_ + int(q["memory_slices"])))
                    if mine & theirs and busy == "":
                        del gis[(op, os_)]   # destroyed to make room
                gis[key] = j.name
        return created

    # -- rates ------------------------------------------------------------------------------------

    def _rate(self, j: JobRun) -> float:
        slowdown = 1.0
        share = 1.0
        for t in j.placement:
            info = self.nodes.get(t.node)
            if info is None:
                continue
            if t.grants and info.mode in self.slowdown:
                slowdown = max(slowdown, self.slowdown[info.mode])
            if info.mode not in ("time-slicing", "mps"):
                continue
            for g in t.grants:
                sharers = self.gpu[t.node].get(g.index, [])
                demand = sum(min(1.0, max(1e-6, self.jobs[o].gpu_util)) for o, _ in sharers)
                r = min(1.0, 1.0 / max(demand, 1e-12))
                if info.mode == "time-slicing":
                    if len(sharers) > 1:
                        r /= 1.0 + self.ts_overhead
                else:
                    reps = int(info.partition.get("replicas", 1))
                    r = min(r, 1.0 / (reps * min(1.0, max(1e-6, j.gpu_util))))
                share = min(share, r)
        return share / slowdown

    def advance(self, t: float) -> None:
        for j in self.jobs.values():
            if j.state != "running" or j.duration_s is None or self.fill:
                continue
            since = max(j.last, j.run_from)
            if t > since:
                j.work_left -= (t - since) * j.rate
            j.last = max(j.last, t)
            if j.work_left < -WORK_TOL_S and not j.late_reported:
                j.late_reported = True
                self.v(self._duration_kind(j), f"{j.name} is still running at t={t:.6f} though its work ran out "
                                   f"{-j.work_left / max(j.rate, 1e-12):.6f} s earlier")
        self.now = t

    def retime_all(self) -> None:
        for (node, idx), grower in list(self.grown_beside.items()):
            holders = {o for o, _ in self.gpu[node].get(idx, [])}
            if grower not in holders:
                del self.grown_beside[(node, idx)]
                continue
            for o in holders:
                self.jobs[o].grow_shared = True
        for j in self.jobs.values():
            if j.state == "running":
                j.rate = self._rate(j)

    @staticmethod
    def _duration_kind(j: JobRun) -> str:
        """``grow-shared-gpu`` for a job that ran on a time-sliced / MPS GPU where an elastic gang
        grew a task beside one of its own (held before, or grown with it): the engine once counted
        such a grown task as no extra sharer (fixed; the kind is kept apart so a regression says
        where to look); ``duration`` otherwise."""
        return "grow-shared-gpu" if j.grow_shared else "duration"

    # -- quota ------------------------------------------------------------------------------------

    def _init_quota(self) -> None:
        self.quotas: Dict[str, Dict[str, float]] = {}
        self.charge = "created"
        prof = self.scenario.get("profile")
        if not isinstance(prof, dict):
            return
        for entry in prof.get("pre_filter", []):
            if isinstance(entry, dict) and entry.get("name") == "resource-quota":
                args = entry.get("args", {})
                self.charge = args.get("charge", "created")
                for ns, lim in args.get("quotas", {}).items():
                    q: Dict[str, float] = {}
                    for k, val in lim.items():
                        if k == "requests.nvidia.com/gpu":
                            q[k] = float(val)
                        elif k == "count/jobs":
                            q[k] = float(val)
                        elif k == "requests.cpu":
                            q[k] = float(cpu_milli(val))
                    self.quotas[ns] = q
        self.quota_used: Dict[str, Dict[str, float]] = {ns: {k: 0.0 for k in q} for ns, q in self.quotas.items()}

    @staticmethod
    def _is_hami(j: JobRun) -> bool:
        return "nvidia.com/gpumem" in j.requests or "nvidia.com/gpucores" in j.requests

    def _cost(self, j: JobRun) -> Dict[str, float]:
        """The quota charge of `j`: the nvidia.com/gpu its pods request (whole GPUs; a HAMi share's
        nvidia.com/gpu as written, 1 when absent as HAMi's webhook adds it), PCI passthrough GPUs,
        of all its tasks; one job; its CPUs."""
        gpus = int(j.requests.get("nvidia.com/gpu", 0) or 0)
        if self._is_hami(j) and "nvidia.com/gpu" not in j.requests:
            gpus = 1
        alias = str(j.requests.get("pci_passthrough:alias", ""))
        if alias:
            gpus += int(alias.rpartition(":")[2])
        if int(j.requests.get("gpusched.io/gpu-milli", 0) or 0) == 1000:
            gpus += 1   # 1000 milli is one whole GPU (README)
        # charge "running": the tasks that run (an elastic gang may run fewer than it asked for).
        tasks = len(j.placement) if self.charge == "running" and j.placement else j.tasks
        return {"requests.nvidia.com/gpu": float(gpus * tasks), "count/jobs": 1.0,
                "requests.cpu": float(j.cpu_milli * tasks)}

    def _quota_add(self, j: JobRun, sign: int) -> None:
        if j.queue not in self.quotas:
            return
        cost = self._cost(j)
        used = self.quota_used[j.queue]
        for k in used:
            used[k] += sign * cost[k]

    def _quota_check(self, j: JobRun) -> None:
        if j.queue not in self.quotas:
            return
        used = self.quota_used[j.queue]
        for k, lim in self.quotas[j.queue].items():
            if used[k] > lim + 1e-9:
                self.v("quota", f"namespace {j.queue}: {k} used {used[k]:g} > hard {lim:g} after {j.name}")

    def _would_exceed(self, j: JobRun) -> bool:
        if j.queue not in self.quotas:
            return False
        cost = self._cost(j)
        used = self.quota_used[j.queue]
        return any(used[k] + cost[k] > lim + 1e-9 for k, lim in self.quotas[j.queue].items())

    # -- the log ----------------------------------------------------------------------------------

    def run(self, events: List[Dict[str, str]]) -> None:
        i = 0
        n = len(events)
        while i < n:
            t_text = events[i]["time_s"]
            t = float(t_text)
            if t < self.now - 1e-9:
                self.v("sequence", f"events.csv goes back in time to {t_text}")
            self.advance(t)
            k = i
            while k < n and events[k]["time_s"] == t_text:
                k += 1
            self.touched = set()
            line_problems: List[str] = []
            self._check_preemption_order(events, i, k)
            for li in range(i, k):
                self._line(events[li])
                problems = self.check_nodes("line", self.touched_line)
                if problems:
                    line_problems.extend(f"after line {li + 2} ({events[li]['event']} {events[li]['job']}): {p}"
                                         for p in problems)
            end_problems = self.check_nodes("instant", self.touched)
            for p in end_problems:
                self.v("overcommit", p)
            if line_problems and not end_problems:
                for p in line_problems[:3]:
                    self.v("line-order", p)
            for name, j in self.jobs.items():
                if j.state == "running" and any(tk.node in self.down for tk in j.placement):
                    self.v("down-node", f"{name} still runs on a down node at the end of the instant")
            if self.charge == "running":
                for ns in self.quotas:
                    for key, lim in self.quotas[ns].items():
                        if self.quota_used[ns][key] > lim + 1e-9:
                            self.v("quota", f"namespace {ns}: {key} of running jobs {self.quota_used[ns][key]:g} > {lim:g}")
            self.retime_all()
            i = k

    def _check_preemption_order(self, events: List[Dict[str, str]], i: int, k: int) -> None:
        """At one instant a preemption victim's requeue (or fail) comes before its preemptor's
        ``placed`` / ``start`` (README "Outputs": every release before the acquisitions that use
        it), so that the log replays line by line."""
        start_at: Dict[str, int] = {}
        for li in range(i, k):
            e = events[li]
            if e["event"] in ("start", "placed"):
                start_at.setdefault(e["job"], li)
            elif e["event"] in ("requeue", "fail"):
                m = re.match(r"preempted by (.+)$", e["detail"])
                if m and m.group(1) in start_at:
                    self.v("line-order", f"line {li + 2}: {e['job']} is evicted after its preemptor "
                                         f"{m.group(1)} started (line {start_at[m.group(1)] + 2})")

    def _line(self, e: Dict[str, str]) -> None:
        ev = e["event"]
        self.touched_line: Set[str] = set()
        if ev in ("node_down", "node_up"):
            node = e["node"]
            if node not in self.nodes:
                self.v("sequence", f"{ev} of unknown node {node}")
            elif ev == "node_down":
                self.down.add(node)
            else:
                self.down.discard(node)
            return
        name = e["job"]
        j = self.jobs.get(name)
        if j is None:
            self.v("sequence", f"{ev} of unknown job {name}")
            return
        if ev == "submit":
            if j.state != "not_arrived":
                self.v("sequence", f"{name} submitted twice")
            if abs(self.now - j.submit_s) > 1e-6:
                self.v("sequence", f"{name} submitted at {self.now} but its submit_time is {j.submit_s}")
            j.state = "pending"
            if self.charge == "created" and j.queue in self.quotas:
                row = self.rows[name]
                refused = row["state"] == "failed" and "exceeded quota" in row["reason"] and int(row["attempts"]) == 0
                if refused:
                    if not self._would_exceed(j):
                        self.v("quota", f"{name} refused though it fits its namespace's quota {self.quota_used[j.queue]}")
                else:
                    self._quota_add(j, +1)
                    self._quota_check(j)
            return
        if ev == "start" and j.state == "running" and not j.ready:
            # The MIG instances of a `placed` job are ready: it runs from now, nothing new is held.
            if e["detail"] != j.placement_text:
                self.v("mig-start", f"{name} starts on {e['detail']!r} but was placed on {j.placement_text!r}")
            if abs(self.now - j.run_from) > 1e-6:
                self.v("mig-start", f"{name} placed at {j.placed_at:.6f} starts at {self.now:.6f}, not after "
                                    f"mig_reconfigure_s {self.mig_delay:g} ({j.run_from:.6f})")
            j.run_from = self.now
            j.ready = True
            j.last_start_line = self.now
            return
        if ev in ("start", "placed"):
            if j.state != "pending":
                self.v("sequence", f"{name} {ev} while {j.state}")
                if j.state == "running":
                    self.release(j)
            if self.now < j.submit_s - 1e-9:
                self.v("before-submit", f"{name} started at {self.now} before its submit time {j.submit_s}")
            try:
                j.placement = parse_placement(e["detail"], self.nodes)
            except ValueError as err:
                self.v("sequence", f"{name}: {err}")
                j.placement = []
            j.placement_text = e["detail"]
            if len(j.placement) > j.tasks or not j.placement:
                self.v("sequence", f"{name} started {len(j.placement)} tasks of {j.tasks}")
            elif len(j.placement) < min(j.min_available, j.tasks):
                self.v("elastic", f"{name} started {len(j.placement)} tasks, fewer than min_available {j.min_available}")
            j.state = "running"
            j.starts += 1
            j.placed_at = self.now
            created = self._mig_created(j, j.placement) and self.mig_delay > 0
            if ev == "placed" and not created:
                self.v("mig-start", f"{name} placed (not started) though it takes no new MIG instance "
                                    f"(mig_reconfigure_s {self.mig_delay:g})")
            if ev == "start" and created:
                self.v("mig-start", f"{name} starts at once on a newly created MIG instance "
                                    f"(mig_reconfigure_s {self.mig_delay:g}): it should be placed first")
            j.ready = ev == "start"
            if j.ready:
                j.last_start_line = self.now
            j.run_from = self.now + (self.mig_delay if ev == "placed" else 0.0)
            j.last = self.now
            if j.duration_s is not None:
                j.work_left = j.duration_s - j.kept
            self.acquire(j, j.placement)
            self.touched_line = {t.node for t in j.placement if t.node in self.nodes}
            if self.charge == "running":
                self._quota_add(j, +1)
                self._quota_check(j)
            return
        if ev == "grow":
            if j.state != "running":
                self.v("sequence", f"{name} grows while {j.state}")
                return
            if j.min_available >= j.tasks:
                self.v("elastic", f"{name} grows but is no elastic gang (min_available {j.min_available}, tasks {j.tasks})")
            try:
                added = parse_placement(e["detail"], self.nodes)
            except ValueError as err:
                self.v("sequence", f"{name}: {err}")
                return
            if not added:
                self.v("elastic", f"{name} grows by no task")
                return
            if len(j.placement) + len(added) > j.tasks:
                self.v("elastic", f"{name} grows to {len(j.placement) + len(added)} tasks of {j.tasks}")
            if self.charge == "running":
                self._quota_add(j, -1)
            self._mig_created(j, added)   # instances made for grown tasks: no start line, no delay
            j.placement = j.placement + added
            j.placement_text = j.placement_text + ";" + e["detail"]
            self.acquire(j, added)
            for t in added:
                info = self.nodes.get(t.node)
                if info is not None and info.mode in ("time-slicing", "mps"):
                    for g in t.grants:
                        if sum(o == name for o, _ in self.gpu[t.node].get(g.index, [])) > 1:
                            self.grown_beside[(t.node, g.index)] = name
            self.touched_line = {t.node for t in added if t.node in self.nodes}
            if self.charge == "running":
                self._quota_add(j, +1)
                self._quota_check(j)
            return
        if ev in ("finish", "requeue", "fail"):
            was_running = j.state == "running"
            if ev == "finish" and not was_running:
                self.v("sequence", f"{name} finished while {j.state}")
            if ev == "requeue" and not was_running:
                self.v("sequence", f"{name} requeued while {j.state}")
            if was_running:
                self.release(j)
                if self.charge == "running":
                    self._quota_add(j, -1)
            if ev == "finish" and was_running:
                if self.fill or j.duration_s is None:
                    self.v("duration", f"{name} finished though it never ends (fill mode or no duration)")
                elif abs(j.work_left) > WORK_TOL_S:
                    self.v(self._duration_kind(j), f"{name} finished with {j.work_left:.6f} s of nominal work left "
                                       f"(duration {j.duration_s}, kept {j.kept}, started {j.run_from:.6f}, "
                                       f"rate {j.rate:.6f})")
                j.end_s = self.now
                j.state = "completed"
            elif ev == "requeue":
                if was_running:
                    j.evictions += 1
                    self._evicted(j, e["detail"])
                j.state = "pending"
            elif ev == "fail":
                if was_running:
                    # A node failure with requeue_on_node_down false stops the job without an
                    # eviction; every other stop of a running job that is not a finish is one.
                    if not (self.scenario.get("requeue_on_node_down") is False and "went down" in e["detail"]):
                        j.evictions += 1
                    self._evicted(j, e["detail"])
                j.state = "failed"
                j.end_s = self.now
            if ev in ("finish", "fail") and self.charge == "created" and j.queue in self.quotas:
                row = self.rows[name]
                refused = row["state"] == "failed" and "exceeded quota" in row["reason"] and int(row["attempts"]) == 0
                if not refused:
                    self._quota_add(j, -1)
            return
        if ev == "backoff":
            return
        self.v("sequence", f"unknown event {ev!r}")

    def _evicted(self, j: JobRun, why: str) -> None:
        m = re.match(r"preempted by (.+)$", why)
        if m:
            pre = self.jobs.get(m.group(1))
            if pre is None:
                self.v("preemption", f"{j.name} preempted by unknown job {m.group(1)}")
            else:
                if pre.priority <= j.priority:
                    self.v("preemption", f"{j.name} (priority {j.priority}) preempted by {pre.name} "
                                         f"(priority {pre.priority})")
                if pre.never_preempts:
                    self.v("preemption", f"{pre.name} has preemption_policy Never but preempted {j.name}")
        if j.duration_s is None or self.fill:
            j.kept = 0.0
            return
        done = j.duration_s - j.work_left
        if self.checkpoint and self.checkpoint_s > 0:
            j.kept = math.floor((done + 1e-7) / self.checkpoint_s) * self.checkpoint_s
        else:
            j.kept = 0.0

    # -- end -----------------------------------------------------------------------------------------

    def final(self, placements: List[Dict[str, str]]) -> None:
        by_job: Dict[str, List[Dict[str, str]]] = {}
        for p in placements:
            by_job.setdefault(p["job"], []).append(p)
        for name, j in self.jobs.items():
            row = self.rows[name]
            state = row["state"]
            # "partial" is a completed elastic gang that ran fewer than its tasks (README "Outputs").
            if (state if state != "partial" else "completed") != j.state:
                self.v("jobs-csv", f"{name}: jobs.csv state {state}, the log says {j.state}")
            if int(row["attempts"]) != j.starts:
                self.v("jobs-csv", f"{name}: jobs.csv attempts {row['attempts']}, the log has {j.starts} starts")
            if int(row["evictions"]) != j.evictions:
                self.v("jobs-csv", f"{name}: jobs.csv evictions {row['evictions']}, the log has {j.evictions}")
            if j.starts and row["start_s"]:
                # start_s is when the last placement runs: its `start` line, or (stopped while its
                # MIG instance was created) the placement + mig_reconfigure_s.
                start = float(row["start_s"])
                if abs(start - j.run_from) > 1e-6:
                    self.v("jobs-csv", f"{name}: jobs.csv start {row['start_s']}, the log's last placement at "
                                       f"{j.placed_at:.6f} runs from {j.run_from:.6f}")
                if state in ("running", "completed", "partial") and abs(start - j.last_start_line) > 1e-6:
                    self.v("mig-start", f"{name}: jobs.csv start {row['start_s']}, events.csv's last start line "
                                        f"at {j.last_start_line:.6f}")
                if start < j.submit_s - 1e-9:
                    self.v("before-submit", f"{name}: jobs.csv start {start} < submit {j.submit_s}")
            elif state in ("running", "completed", "partial"):
                self.v("jobs-csv", f"{name}: jobs.csv state {state} without start_s")
            if state in ("completed", "partial", "failed") and j.end_s == j.end_s:
                if not row["end_s"] or abs(float(row["end_s"]) - j.end_s) > 1e-6:
                    self.v("jobs-csv", f"{name}: jobs.csv end {row['end_s']}, the log ends it at {j.end_s:.6f}")
            if state in ("running", "completed", "partial"):
                if row["placement"] != j.placement_text:
                    self.v("jobs-csv", f"{name}: jobs.csv placement {row['placement']!r} != the log's "
                                       f"{j.placement_text!r} (last start and its grows)")
                self._check_placement_rows(j, by_job.get(name, []), row)
                self._check_task_count(j, state, row.get("reason", ""))
            elif by_job.get(name):
                self.v("placements", f"{name} ({state}) has placement rows")

    def _check_task_count(self, j: JobRun, state: str, reason: str) -> None:
        """A completed job ran all its tasks; a partial one fewer, and says how many (README
        "Outputs", docs/policies.md "Gangs"); a running one with fewer says so too."""
        held = len(j.placement)
        counts = f"{held} of {j.tasks} tasks (min_available {j.min_available})"
        if state == "completed" and held != j.tasks:
            self.v("elastic", f"{j.name}: completed with {held} of {j.tasks} tasks placed")
        elif state == "partial":
            if held >= j.tasks:
                self.v("elastic", f"{j.name}: partial though it ran all {j.tasks} tasks")
            if not reason.startswith(f"ran {counts}"):
                self.v("elastic", f"{j.name}: partial with {held} of {j.tasks} tasks, reason {reason!r}")
        elif state == "running" and held < j.tasks and not reason.startswith(f"running {counts}"):
            self.v("elastic", f"{j.name}: running {held} of {j.tasks} tasks, reason {reason!r}")

    def _check_placement_rows(self, j: JobRun, rows: List[Dict[str, str]], jrow: Dict[str, str]) -> None:
        want: List[Tuple[Any, ...]] = []
        for ti, t in enumerate(j.placement):
            if not t.grants:
                want.append((ti, t.node, "", "", "", "", ""))
            for g in sorted(t.grants, key=lambda g: g.index):
                want.append((ti, t.node, str(g.index), g.mig_profile, str(g.mig_start) if g.mig_profile else "",
                             g.vgpu_profile, str(g.milli) if g.kind == "share" else ""))
        got: List[Tuple[Any, ...]] = []
        for r in rows:
            gi = r["gpu"]
            kind_share = gi != "" and not r["mig_profile"] and not r["vgpu_profile"]
            got.append((int(r["task"]), r["node"], gi, r["mig_profile"], r["mig_start"], r["vgpu_profile"],
                        str(int(float(r["share_milli"]))) if kind_share else ""))
            if jrow["start_s"] and abs(float(r["start_s"]) - float(jrow["start_s"])) > 1e-6:
                self.v("placements", f"{j.name}: placements start_s {r['start_s']} != jobs.csv {jrow['start_s']}")
        if sorted(want) != sorted(got):
            self.v("placements", f"{j.name}: placements.csv rows {sorted(got)} != last start {sorted(want)}")


def read_csv_rows(path: Path) -> List[Dict[str, str]]:
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def check_outputs(scenario: Dict[str, Any], out: Path) -> List[Violation]:
    """Every invariant the files in `out` break (see the module docstring)."""
    jobs = read_csv_rows(out / "jobs.csv")
    events = read_csv_rows(out / "events.csv")
    placements = read_csv_rows(out / "placements.csv")
    rep = Replay(scenario, jobs)
    rep.run(events)
    rep.final(placements)
    # summary.json counts partial jobs apart and inside completed.
    summary_path = out / "summary.json"
    if summary_path.exists():
        counts = json.loads(summary_path.read_text()).get("jobs", {})
        states = [r["state"] for r in jobs]
        want = {"partial": states.count("partial"), "completed": states.count("completed") + states.count("partial")}
        for key, n in want.items():
            if counts.get(key) != n:
                rep.violations.append(Violation("elastic", 0.0, f"summary.json jobs.{key} {counts.get(key)}, jobs.csv has {n}"))
    else:
        rep.violations.append(Violation("sequence", 0.0, "no summary.json"))
    # Scheduled node events are all in the log.
    logged = {(float(e["time_s"]), e["node"], e["event"]) for e in events if e["event"] in ("node_down", "node_up")}
    for ne in scenario.get("events", []):
        if ne["type"] in ("node_down", "node_up"):
            key = (float(ne["time_s"]), ne["node"], ne["type"])
            if key not in logged and not _after_end(events, float(ne["time_s"])):
                rep.violations.append(Violation("sequence", key[0], f"scenario event {key} missing from events.csv"))
    # Time series: percentages within 0..100, counts within the job count.
    for r in read_csv_rows(out / "timeseries.csv"):
        for k in ("gpu_alloc_pct", "gpus_busy_pct", "cpu_alloc_pct", "memory_alloc_pct"):
            if not -1e-9 <= float(r[k]) <= 100 + 1e-9:
                rep.violations.append(Violation("timeseries", float(r["time_s"]), f"{k} = {r[k]}"))
        if int(r["running_jobs"]) + int(r["pending_jobs"]) > len(jobs):
            rep.violations.append(Violation("timeseries", float(r["time_s"]), "more running + pending jobs than jobs"))
    return rep.violations


def _after_end(events: List[Dict[str, str]], t: float) -> bool:
    return not events or t > float(events[-1]["time_s"]) + 1e-9
