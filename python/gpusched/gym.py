"""A Gymnasium environment: an agent places jobs, gpusched simulates everything else.

::

    from gpusched.gym import SchedulingEnv

    env = SchedulingEnv("examples/small.json", reward="slowdown")
    obs, info = env.reset(seed=1)
    done = False
    while not done:
        action = env.action_space.sample(mask=obs["action_mask"])   # a node index, or N = wait
        obs, reward, terminated, truncated, info = env.step(action)
        done = terminated or truncated
    print(env.result.summary["jobs"])        # the finished run: a gpusched.Result
    env.close()

How it works. The simulation runs in ``gpusched.run`` on a worker thread (the C++ engine, the
GIL released). The environment registers a Python plugin and runs the scenario with a profile
that extends the scenario's own (or ``profile=``) with that plugin in its filter list. Each time
the engine asks where a task goes, the plugin's ``place`` hands the task, its candidate nodes
and the state of the whole cluster (``nodes.cluster()``) to the environment and blocks until
``step()`` brings the agent's answer; its ``job_started`` and ``job_stopped`` hear every start
and every stop (a finish, an eviction by a node failure or a NoExecute taint), whoever caused
it. Queue order, the built-in filters (resources, taints, affinity), device selection inside
the chosen node, events and metrics stay gpusched's. Every decision is one step: one task of
one job (a gang of k tasks is k steps; it starts if at least ``min_available`` tasks were
placed). A job the agent makes wait is offered again when capacity frees (replay mode) or fails
(fill mode, where jobs are not retried).

Spaces (N = nodes in the cluster, in cluster order, autoscaled nodes included: a node that is
down or not provisioned shows its capacity but is never a candidate; every value is normalised
to [0, 1]):

- action: ``Discrete(N + 1)``: a node index, or ``N`` to wait. A node that is not a candidate
  for the task (``action_mask`` 0) counts as wait, and ``invalid_action_penalty`` is
  subtracted from the reward (``info["invalid_action"]`` is True).
- observation: ``Dict`` of

  - ``"job"`` (``JOB_FEATURES``): the task's CPU, memory (/ the largest node's), GPUs (/ most
    GPUs on a node), share of each GPU (1 = whole), GPU memory (/ the largest GPU's), ``1 -
    1/tasks``, ``task_index/tasks``, time waited ``w/(w+time_scale_s)``, duration
    ``d/(d+time_scale_s)`` (1: never ends);
  - ``"nodes"`` (N x ``NODE_FEATURES``): candidate flag, free CPU, memory, GPU milli, their
    totals (/ the largest node's), whole free GPUs (/ most GPUs) and the largest free share on
    one GPU: the engine's state of every node at the decision;
  - ``"cluster"`` (``CLUSTER_FEATURES``): allocated share of GPU milli, CPU and memory (the
    engine's), waiting and running jobs (/ jobs in the workload; waiting: the jobs offered at
    least once, see below);
  - ``"action_mask"``: ``MultiBinary(N + 1)``, 1 for candidate nodes and for wait (also
    :meth:`SchedulingEnv.action_masks` and ``info["action_mask"]``).

  When the run has ended there is no decision: the job row is 0, no node is a candidate, and
  the node rows and allocated shares are those of the last decision.

Rewards (``reward=``), for the step that answers the decision at time ``t`` and ends at the
next decision (or the end of the run) at ``t'``, all integrals over ``(t, t']`` of what the
engine reported:

- ``"slowdown"`` (default): ``-∫ Σ_{jobs in the system} 1/duration_j dt``: each job costs
  1/duration per second from its arrival until it finishes or fails (DeepRM's reward; an
  evicted job stays in the system). Over an episode the return is minus the sum of the jobs'
  slowdowns ``(end - submit) / duration``, and jobs still waiting or running at the end count
  their time so far. Jobs that never end cost nothing; in fill mode placed jobs never end
  either, so they are charged until the run stops: use ``"utilisation"`` there.
- ``"utilisation"`` (or ``"utilization"``): ``∫ allocated GPU milli / cluster GPU milli dt /
  time_scale_s``: GPU-share-hours with the default ``time_scale_s`` of 3600; the return is the
  cluster's GPU-hours of the episode divided by its GPU count. A running job holds what it
  requested (whole GPUs count 1000 milli each): on whole and fractionally shared GPUs that is
  what the engine counts; on GPUs split into time-slicing or MPS replicas, vGPUs or MIG
  instances the engine counts the slice it granted, which is less.
- ``"wait"``: ``-∫ waiting jobs dt / time_scale_s``: minus the job-hours spent in the queue
  (the job being decided is waiting; an evicted job waits again until it restarts; a job
  whose MIG instance is being set up holds its resources and counts as running, while the
  run's job table starts it after the reconfiguration delay).
- a callable ``f(info) -> float`` reading ``info`` (below).

What the engine does not announce is learned late (``gpusched._gym_jobs``) and charged to the
step that learns it, so an episode's return stays exact. Arrivals: a job is known from its
first offer, and its waiting since ``submit_s`` is charged then. The engine offers a job when
it arrives only if some node passes the profile's pre-filters and other filters, and a
waiting one again only when capacity frees (with ``strict-fifo``, only up to the first job that
does not fit), so a job can wait unseen while nothing fits it. Requeues: a stop counts as
leaving the system until the same job is offered again (evicted and requeued; usually at the
same instant). The last step settles with the finished run's job table: jobs never offered add
their waiting time to ``"wait"`` (not to ``"slowdown"``: their duration is unknown), a job
requeued and never offered again adds its time since the stop to both, and
``info["settled"]`` says what was added.

Each step's ``info``: ``time_s`` and ``interval_s`` (``t'`` and ``t' - t``), ``gpu_share_s``,
``slowdown_accrued`` and ``waiting_job_s`` (the three integrals), ``placed`` and
``invalid_action`` (what the last action did), ``job_id``, ``job``, ``task_index`` and
``candidates`` (of the new decision; -1 / "" / 0 at the end), ``waiting_jobs``,
``running_jobs`` and ``action_mask``; when the run has ended (``terminated``), also
``summary`` (the run's summary without its inputs) and ``settled`` (``waiting_job_s`` and
``slowdown`` added from the job table, ``jobs`` they concern, ``unseen_jobs``: jobs never
offered that waited). The episode terminates when the run ends (every event processed or the
scenario's ``horizon_s`` reached); it is truncated after ``max_steps`` decisions. Same
scenario, seed and actions give identical observations and rewards.

Limits: the environment's profile drops the base profile's post-filters (preemption would ask
the agent about what-if placements and evict behind its back) and refuses ``easy-backfill``
queueing (its what-if placements would ask the agent about jobs that are not placed). TPU
slices spanning several hosts are not supported: the agent picks one host, and a slice needs a
block of them, so such a job only ever waits.
"""

from __future__ import annotations

import copy
import itertools
import json
import math
import os
import queue
import threading
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

import gymnasium
import numpy as np
from gymnasium import spaces

from . import _core
from ._gym_jobs import STARTED, STOPPED, JobEvent, JobRecord
from .api import ScenarioLike, run, validate
from .policy import register_plugin, unregister_plugin
from .result import Result

__all__ = ["CLUSTER_FEATURES", "JOB_FEATURES", "NODE_FEATURES", "REWARDS", "SchedulingEnv"]

#: Columns of obs["job"].
JOB_FEATURES = ("cpu", "memory", "gpus", "gpu_share", "gpu_memory", "tasks", "task_progress", "waited", "duration")
#: Columns of obs["nodes"].
NODE_FEATURES = ("candidate", "cpu_free", "memory_free", "gpu_milli_free", "cpu_total", "memory_total",
                 "gpu_milli_total", "gpus_free", "gpu_share_free")
#: Columns of obs["cluster"].
CLUSTER_FEATURES = ("gpu_allocated", "cpu_allocated", "memory_allocated", "waiting_jobs", "running_jobs")
#: The named rewards.
REWARDS = ("slowdown", "utilisation", "utilization", "wait")

RewardFn = Callable[[Dict[str, Any]], float]

_names = itertools.count()


class _Abort(Exception):
    """Raised inside place() to stop a run the environment no longer wants."""


_ABORT = object()


@dataclass
class _Shape:
    """The cluster's capacities (cluster order) and the largest values, for normalising; read
    from the whole-cluster view of an episode's first decision."""

    nodes: int
    cpu_total: np.ndarray
    memory_total: np.ndarray
    gpu_milli_total: np.ndarray
    max_cpu_milli: int
    max_memory_mib: int
    max_gpu_milli: int
    max_gpus: int  # most GPUs on one node
    max_gpu_memory_mib: int  # the largest GPU's memory
    static_columns: np.ndarray  # N x 3 float32: the totals' node features
    cpu_sum: int
    memory_sum: int
    gpu_milli_sum: int

    @classmethod
    def read(cls, whole: Any) -> "_Shape":
        cpu = np.array(whole.cpu_total_milli, dtype=np.int64)
        memory = np.array(whole.memory_total_mib, dtype=np.int64)
        gpus = np.asarray(whole.gpus_total, dtype=np.int64)
        gpu_milli = gpus * 1000
        gmem = np.asarray(whole.gpu_memory_total_mib)
        width = int(gmem.shape[1]) if gmem.ndim == 2 else 0
        max_cpu = max(1, int(whole.max_cpu_milli), int(cpu.max(initial=0)))
        max_mem = max(1, int(whole.max_memory_mib), int(memory.max(initial=0)))
        max_gpu = max(1, int(whole.max_gpu_milli), int(gpu_milli.max(initial=0)))
        static = np.stack([cpu / max_cpu, memory / max_mem, gpu_milli / max_gpu], axis=1).astype(np.float32)
        return cls(nodes=int(cpu.shape[0]), cpu_total=cpu, memory_total=memory, gpu_milli_total=gpu_milli,
                   max_cpu_milli=max_cpu, max_memory_mib=max_mem, max_gpu_milli=max_gpu,
                   max_gpus=max(1, width, int(gpus.max(initial=0))),
                   max_gpu_memory_mib=max(1, int(gmem.max(initial=0)) if gmem.size else 1),
                   static_columns=static, cpu_sum=int(cpu.sum()), memory_sum=int(memory.sum()),
                   gpu_milli_sum=int(gpu_milli.sum()))


@dataclass
class _Decision:
    """One call of the placement hook, copied out of the simulation thread."""

    job_id: int
    name: str
    task_index: int
    tasks: int
    cpu_milli: int
    memory_mib: int
    gpus: int
    gpu_milli: int
    gpu_memory_mib: int
    submit_s: float
    duration_s: float  # inf: the job never ends
    now_s: float
    index: np.ndarray  # candidate nodes (cluster indices)
    cpu_free: np.ndarray  # every node, cluster order
    memory_free: np.ndarray
    gpu_milli_free: np.ndarray
    gpus_free: np.ndarray
    gpu_share_free: np.ndarray  # the largest free milli on one GPU of each node
    shape: Optional[_Shape]  # the first decision of a run only


def _decision(job: Any, nodes: Any, with_shape: bool) -> _Decision:
    """Reads a JobInfo and the cluster during the plugin call (the views go stale after it).
    The arrays a NodeView builds stay readable afterwards: they are kept, not copied."""
    whole = nodes.cluster()
    per_gpu = np.asarray(whole.gpu_milli_free_per_gpu)
    n = len(whole)
    return _Decision(
        job_id=int(job.id), name=str(job.name), task_index=int(job.task_index), tasks=int(job.tasks),
        cpu_milli=int(job.cpu_milli), memory_mib=int(job.memory_mib), gpus=int(job.gpus),
        gpu_milli=int(job.gpu_milli), gpu_memory_mib=int(job.gpu_memory_mib),
        submit_s=float(job.submit_s), duration_s=float(job.duration_s), now_s=float(job.now_s),
        index=np.asarray(nodes.index, dtype=np.intp),
        cpu_free=whole.cpu_free_milli, memory_free=whole.memory_free_mib, gpu_milli_free=whole.gpu_milli_free,
        gpus_free=whole.gpus_free,
        gpu_share_free=per_gpu.max(axis=1) if per_gpu.ndim == 2 and per_gpu.shape[1] else np.zeros(n, np.int32),
        shape=_Shape.read(whole) if with_shape else None,
    )


class _Episode:
    """One run on its worker thread, the two queues between it and the environment, and the
    job events the engine reported since the last decision. Registered as the agent's plugin."""

    def __init__(self) -> None:
        self.events: "queue.Queue[Tuple[str, Optional[_Decision], List[JobEvent]]]" = queue.Queue()
        self.actions: "queue.Queue[Any]" = queue.Queue()
        self.log: List[JobEvent] = []
        self.aborting = False
        self.shape_read = False
        self.thread: Optional[threading.Thread] = None
        self.result: Optional[Result] = None
        self.error: Optional[BaseException] = None

    def __reduce__(self) -> Tuple[type, Tuple[()]]:
        # Sweeps ship every Python registration to their worker processes: there the agent's
        # plugin is an idle episode (no profile of theirs names it), not a copy of this one.
        return (_Episode, ())

    # Called by the engine (worker thread, GIL held).
    def place(self, job: Any, nodes: Any) -> Optional[int]:
        if self.aborting:
            raise _Abort("the environment was reset or closed")
        d = _decision(job, nodes, with_shape=not self.shape_read)
        self.shape_read = True
        log, self.log = self.log, []
        self.events.put(("decision", d, log))
        action = self.actions.get()
        if action is _ABORT:
            raise _Abort("the environment was reset or closed")
        return action

    def job_started(self, job: Any, nodes: Sequence[int]) -> None:
        self.log.append((STARTED, float(job.now_s), int(job.id), len(nodes) * int(job.gpus) * int(job.gpu_milli)))

    def job_stopped(self, job: Any) -> None:
        self.log.append((STOPPED, float(job.now_s), int(job.id), 0))

    def start(self, doc: Dict[str, Any], seed: int, base_dir: Optional[Path], source: str) -> None:
        def work() -> None:
            try:
                self.result = run(doc, seed=seed, base_dir=base_dir, source=source)
            except _core.PluginError as e:
                if not self.aborting:
                    self.error = e
            except BaseException as e:  # handed to the environment's thread
                self.error = e
            finally:
                self.events.put(("end", None, self.log))

        self.thread = threading.Thread(target=work, name="gpusched-gym-episode", daemon=True)
        self.thread.start()

    def abort(self) -> None:
        """Stops the run (if still going) and joins its thread."""
        if self.thread is None:
            return
        self.aborting = True
        self.actions.put(_ABORT)
        self.thread.join()
        self.thread = None


def _agent_class(holder: List[_Episode]) -> type:
    """The class registered as an environment's plugin. Each run builds its plugin from the
    registered class; this one's constructor hands out the environment's current episode, so
    the run talks to that episode (one per reset) rather than to a copy."""

    class GymAgent:
        """gpusched.gym agent (placement)"""

        place = _Episode.place

        def __new__(cls, *args: Any, **kwargs: Any) -> Any:
            return holder[0]

    return GymAgent


def _scenario_dict(scenario: ScenarioLike, base_dir: Optional[Union[str, "os.PathLike[str]"]]) -> Tuple[Dict[str, Any], Optional[Path], str]:
    """The scenario as a dict, the folder its relative paths resolve from, and its label."""
    if hasattr(scenario, "to_dict") and not isinstance(scenario, Mapping):
        scenario = scenario.to_dict()  # type: ignore[union-attr]
    if isinstance(scenario, Mapping):
        return copy.deepcopy(dict(scenario)), Path(base_dir) if base_dir is not None else None, "<python>"
    if isinstance(scenario, str) and scenario == "demo":
        return json.loads(_core.demo_scenario_text()), None, "<built-in demo>"
    if isinstance(scenario, str) and scenario.lstrip().startswith("{"):
        # Read as gpusched reads scenario files: ScenarioError (id, line) for bad JSON, deep nesting, 1e999.
        doc = _core.read_json(scenario.encode("utf-8"), "<string>")
        return doc, Path(base_dir) if base_dir is not None else None, "<string>"
    if isinstance(scenario, (str, os.PathLike)):
        path = Path(scenario)
        doc = _core.read_json(path)
        return doc, Path(base_dir) if base_dir is not None else path.resolve().parent, str(path)
    raise TypeError(f"scenario must be a dict, a gpusched.Scenario, a path, JSON text or 'demo'; got {type(scenario).__name__}")


def _squash(x: float, scale: float) -> float:
    """x / (x + scale) in [0, 1); 1 for infinity."""
    if not math.isfinite(x):
        return 1.0
    return max(0.0, x) / (max(0.0, x) + scale)


def _share_used(free: np.ndarray, total: int) -> float:
    """1 - sum(free) / total; 0 without capacity."""
    return 1.0 - int(free.sum()) / total if total > 0 else 0.0


class SchedulingEnv(gymnasium.Env):  # type: ignore[type-arg]
    """Gymnasium environment over a gpusched scenario: the agent places each task (see the
    module docstring for spaces, rewards and limits).

    ``scenario``: what :func:`gpusched.run` takes (dict, Scenario, path, JSON text, "demo").
    ``profile``: the profile the agent's plugin joins (a built-in name or a profile dict;
    default the scenario's). ``reward``: "slowdown", "utilisation", "wait" or ``f(info)``.
    ``max_steps``: truncate after this many decisions (None: never). ``horizon_s``: overrides
    the scenario's horizon. ``time_scale_s``: the time unit of rewards and of the squashed
    time features. ``invalid_action_penalty``: subtracted for choosing a node that is not a
    candidate. ``render_mode``: None or "ansi".
    """

    metadata = {"render_modes": ["ansi"], "render_fps": 4}

    def __init__(
        self,
        scenario: ScenarioLike,
        *,
        profile: Optional[Union[str, Mapping[str, Any]]] = None,
        reward: Union[str, RewardFn] = "slowdown",
        max_steps: Optional[int] = None,
        horizon_s: Optional[float] = None,
        time_scale_s: float = 3600.0,
        invalid_action_penalty: float = 1.0,
        render_mode: Optional[str] = None,
        base_dir: Optional[Union[str, "os.PathLike[str]"]] = None,
    ) -> None:
        super().__init__()
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(f"render_mode must be None or 'ansi', got {render_mode!r}")
        if not callable(reward) and reward not in REWARDS:
            raise ValueError(f"reward must be one of {', '.join(REWARDS)} or a callable(info) -> float, got {reward!r}")
        if max_steps is not None and max_steps < 1:
            raise ValueError("max_steps must be >= 1 (or None)")
        if not time_scale_s > 0:
            raise ValueError("time_scale_s must be > 0")
        self.render_mode = render_mode
        self.reward_spec: Union[str, RewardFn] = reward
        self.max_steps = max_steps
        self.time_scale_s = float(time_scale_s)
        self.invalid_action_penalty = float(invalid_action_penalty)

        doc, self._base_dir, self._source = _scenario_dict(scenario, base_dir)
        if horizon_s is not None:
            doc["horizon_s"] = float(horizon_s)
        self._doc = doc
        self._retry = bool(doc.get("retry", doc.get("mode", "replay") != "fill"))
        self._default_seed = int(doc.get("seed", 0))

        # The agent's plugin: one name per environment in this process (the n-th environment
        # gets the same name in every process, so summaries' digests repeat too).
        self.plugin_name = f"gym-agent-{next(_names)}"
        self._episode: Optional[_Episode] = None
        self._nodes = 0
        self._decision: Optional[_Decision] = None
        # The episode the next run talks to (an idle one until reset()); shared with the
        # finalizer, which must not hold the environment.
        self._holder: List[_Episode] = [_Episode()]
        register_plugin(self.plugin_name, _agent_class(self._holder), description="gpusched.gym agent (placement)")
        self._finalizer = weakref.finalize(self, _release, self.plugin_name, self._holder)
        try:
            self._profile = self._agent_profile(profile if profile is not None else doc.get("profile", "default"))
            checked = validate(doc, source=self._source, base_dir=self._base_dir)
        except BaseException:
            self.close()
            raise
        n = int(checked.get("nodes", 0))
        if n == 0:
            self.close()
            raise ValueError("the scenario's cluster has no node")
        self._nodes = n
        self._jobs_total = int(checked.get("jobs", 0))
        self.action_space = spaces.Discrete(n + 1)
        self.observation_space = spaces.Dict({
            "job": spaces.Box(0.0, 1.0, (len(JOB_FEATURES),), np.float32),
            "nodes": spaces.Box(0.0, 1.0, (n, len(NODE_FEATURES)), np.float32),
            "cluster": spaces.Box(0.0, 1.0, (len(CLUSTER_FEATURES),), np.float32),
            "action_mask": spaces.MultiBinary(n + 1),
        })
        self._shape: Optional[_Shape] = None
        self._record: Optional[JobRecord] = None
        self._mask_now = self._mask(None)
        self._last_nodes = np.zeros((n, len(NODE_FEATURES)), dtype=np.float32)
        self._last_shares = (0.0, 0.0, 0.0)
        self._steps = 0
        self._done = True
        self._seeded = False
        self._sim_seed = self._default_seed
        #: The finished run of the last episode that ended (None before).
        self.result: Optional[Result] = None

    # ---- setup
    def _agent_profile(self, base: Union[str, Mapping[str, Any]]) -> Dict[str, Any]:
        resolved = _core.check_profile(json.dumps(base if isinstance(base, str) else dict(base)), "<profile>")
        if resolved.get("queueing") == "easy-backfill":
            raise ValueError(
                f"profile {resolved.get('name')!r} uses easy-backfill queueing, which SchedulingEnv does not support "
                "(its what-if placements would ask the agent about jobs that are not placed); use greedy or strict-fifo"
            )
        prof = {k: v for k, v in resolved.items() if k != "description"}
        prof["name"] = f"{resolved.get('name', 'profile')}+agent"
        prof["filter"] = list(resolved.get("filter", [])) + [self.plugin_name]
        prof["post_filter"] = []
        _core.check_profile(json.dumps(prof), "<profile>")
        return prof

    # ---- Gymnasium API
    def reset(self, *, seed: Optional[int] = None, options: Optional[Dict[str, Any]] = None) -> Tuple[Dict[str, np.ndarray], Dict[str, Any]]:
        """Starts an episode: the scenario run with simulation seed ``seed`` (without one: the
        scenario's seed the first time, then a seed drawn from ``np_random``). Stops a running
        episode first. Returns the first decision's observation and info."""
        super().reset(seed=seed)
        self._stop_episode()
        if seed is not None:
            sim_seed = int(seed)
            self._seeded = True
        elif not self._seeded:
            sim_seed = self._default_seed
            self._seeded = True
        else:
            sim_seed = int(self.np_random.integers(0, 2**31 - 1))
        self._sim_seed = sim_seed
        self._record = JobRecord(retry=self._retry, jobs_hint=self._jobs_total)
        ep = _Episode()
        self._holder[0] = ep
        self._episode = ep
        self._steps = 0
        self._done = False
        self._decision = None
        ep.start(self._episode_doc(), sim_seed, self._base_dir, self._source)
        # What the first decision brings (a job that waited before it) is the first step's.
        obs, now_s, settled = self._advance()
        info = self._info(now_s, now_s, (0.0, 0.0, 0.0), placed=False, invalid=False)
        if self._done:
            info["summary"] = self._summary()
            info["settled"] = settled
        return obs, info

    def step(self, action: Any) -> Tuple[Dict[str, np.ndarray], float, bool, bool, Dict[str, Any]]:
        """Answers the current decision: node ``action`` (a candidate), or wait (``N``, or a
        node that is not a candidate, which also costs ``invalid_action_penalty``)."""
        if self._done or self._episode is None or self._decision is None or self._record is None:
            raise RuntimeError("the episode is over (or was never started): call reset()")
        a = int(action)
        n = self._nodes
        if not 0 <= a <= n:
            raise ValueError(f"action must be in [0, {n}], got {a}")
        invalid = a < n and not self._mask_now[a]
        node = a if a < n and not invalid else None
        prev_s = self._decision.now_s
        self._episode.actions.put(node)
        self._steps += 1
        obs, now_s, settled = self._advance()
        gpu_milli_s, slowdown, waiting_s = self._record.take()
        total = self._shape.gpu_milli_sum if self._shape is not None else 0
        gpu_share_s = gpu_milli_s / total if total > 0 else 0.0
        info = self._info(now_s, prev_s, (gpu_share_s, slowdown, waiting_s), placed=node is not None, invalid=invalid)
        reward = self._reward(info) - (self.invalid_action_penalty if invalid else 0.0)
        terminated = self._done
        truncated = False
        if not terminated and self.max_steps is not None and self._steps >= self.max_steps:
            truncated = True
            self._stop_episode()
            self._done = True
        if terminated:
            info["summary"] = self._summary()
            info["settled"] = settled
        return obs, float(reward), terminated, truncated, info

    def render(self) -> Optional[str]:
        """"ansi": one line about the pending decision; None otherwise."""
        if self.render_mode != "ansi":
            return None
        d = self._decision
        if d is None or self._record is None:
            return "episode over\n" if self.result is not None else "no episode\n"
        gpu = f"{d.gpus}x{d.gpu_milli}m" if d.gpus else "none"
        return (f"t={d.now_s:.1f}s job {d.name} task {d.task_index + 1}/{d.tasks}: cpu {d.cpu_milli}m, "
                f"memory {d.memory_mib} MiB, gpu {gpu}; candidates {d.index.tolist()}; "
                f"waiting {self._record.waiting}, running {self._record.running}\n")

    def close(self) -> None:
        """Stops a running episode, joins its thread and unregisters the agent's plugin. Idempotent."""
        self._stop_episode()
        self._finalizer()
        self._done = True

    def action_masks(self) -> np.ndarray:
        """Valid actions for the current decision (bool, N + 1): candidate nodes, and wait."""
        return self._mask_now.astype(bool)

    @property
    def simulation_seed(self) -> int:
        """The seed the current (or last) episode's simulation runs with."""
        return self._sim_seed

    # ---- internals
    def _episode_doc(self) -> Dict[str, Any]:
        doc = dict(self._doc)
        doc["profile"] = self._profile
        return doc

    def _stop_episode(self) -> None:
        ep = self._episode
        if ep is not None:
            ep.abort()
        self._decision = None
        self._mask_now = self._mask(None)

    def _fail(self, ep: _Episode, error: BaseException) -> None:
        ep.abort()
        self._done = True
        self._decision = None
        self._mask_now = self._mask(None)
        raise error

    def _advance(self) -> Tuple[Dict[str, np.ndarray], float, Optional[Dict[str, float]]]:
        """Waits for the next decision or the end of the run and feeds the job record; returns
        the observation, the time and (at the end) what the run's job table settled."""
        ep = self._episode
        record = self._record
        assert ep is not None and record is not None
        kind, d, log = ep.events.get()
        if kind == "decision":
            assert d is not None
            if d.shape is not None:
                if d.shape.nodes != self._nodes:
                    self._fail(ep, RuntimeError(
                        f"the cluster has {d.shape.nodes} nodes, not the {self._nodes} the scenario was checked with"))
                self._shape = d.shape
            record.decision(d.job_id, d.task_index, d.now_s, d.submit_s, d.duration_s, log)
            self._decision = d
            self._mask_now = self._mask(d)
            return self._observation(d), d.now_s, None
        ep.abort()
        if ep.error is not None:
            self._fail(ep, ep.error)
        assert ep.result is not None
        self.result = ep.result
        end_s = float(ep.result.summary["time"]["end_s"])
        record.end(end_s, log)
        raw = ep.result.raw
        assert raw is not None
        settled = record.settle(end_s, raw.jobs())
        self._decision = None
        self._mask_now = self._mask(None)
        self._done = True
        return self._observation(None), end_s, settled

    def _info(self, now_s: float, start_s: float, integrals: Tuple[float, float, float], *, placed: bool,
              invalid: bool) -> Dict[str, Any]:
        record = self._record
        assert record is not None
        d = self._decision
        gpu_share_s, slowdown, waiting_s = integrals
        return {
            "time_s": now_s,
            "interval_s": now_s - start_s,
            "gpu_share_s": gpu_share_s,
            "slowdown_accrued": slowdown,
            "waiting_job_s": waiting_s,
            "placed": bool(placed),
            "invalid_action": bool(invalid),
            "job_id": d.job_id if d is not None else -1,
            "job": d.name if d is not None else "",
            "task_index": d.task_index if d is not None else 0,
            "candidates": int(d.index.size) if d is not None else 0,
            "waiting_jobs": record.waiting,
            "running_jobs": record.running,
            "action_mask": self._mask_now.astype(bool),
        }

    def _mask(self, d: Optional[_Decision]) -> np.ndarray:
        mask = np.zeros(self._nodes + 1, dtype=np.int8)
        mask[-1] = 1
        if d is not None:
            mask[d.index] = 1
        return mask

    def _observation(self, d: Optional[_Decision]) -> Dict[str, np.ndarray]:
        s = self._shape
        record = self._record
        assert record is not None
        job = np.zeros(len(JOB_FEATURES), dtype=np.float64)
        if d is not None and s is not None:
            scale = self.time_scale_s
            job[:] = (
                d.cpu_milli / s.max_cpu_milli,
                d.memory_mib / s.max_memory_mib,
                d.gpus / s.max_gpus,
                d.gpu_milli / 1000.0,
                d.gpu_memory_mib / s.max_gpu_memory_mib,
                1.0 - 1.0 / max(1, d.tasks),
                d.task_index / max(1, d.tasks),
                _squash(d.now_s - d.submit_s, scale),
                _squash(d.duration_s, scale),
            )
            nodes = np.empty((s.nodes, len(NODE_FEATURES)), dtype=np.float32)
            nodes[:, 0] = self._mask_now[:-1]
            nodes[:, 1] = d.cpu_free / s.max_cpu_milli
            nodes[:, 2] = d.memory_free / s.max_memory_mib
            nodes[:, 3] = d.gpu_milli_free / s.max_gpu_milli
            nodes[:, 4:7] = s.static_columns
            nodes[:, 7] = d.gpus_free / s.max_gpus
            nodes[:, 8] = d.gpu_share_free / 1000.0
            np.clip(nodes, 0.0, 1.0, out=nodes)
            self._last_nodes = nodes
            self._last_shares = (_share_used(d.gpu_milli_free, s.gpu_milli_sum),
                                 _share_used(d.cpu_free, s.cpu_sum),
                                 _share_used(d.memory_free, s.memory_sum))
            node_rows = nodes
        else:
            node_rows = self._last_nodes.copy()
            node_rows[:, 0] = 0.0
        jobs = max(1, self._jobs_total)
        cluster = np.array([*self._last_shares, record.waiting / jobs, record.running / jobs])
        return {
            "job": np.clip(job, 0.0, 1.0).astype(np.float32),
            "nodes": node_rows,
            "cluster": np.clip(cluster, 0.0, 1.0).astype(np.float32),
            "action_mask": self._mask_now.copy(),
        }

    def _reward(self, info: Dict[str, Any]) -> float:
        spec = self.reward_spec
        if callable(spec):
            return float(spec(dict(info)))
        if spec == "slowdown":
            return -float(info["slowdown_accrued"])
        if spec in ("utilisation", "utilization"):
            return float(info["gpu_share_s"]) / self.time_scale_s
        return -float(info["waiting_job_s"]) / self.time_scale_s

    def _summary(self) -> Dict[str, Any]:
        if self.result is None:
            return {}
        return {k: copy.deepcopy(v) for k, v in self.result.summary.items() if k != "inputs"}


def _release(name: str, holder: List[_Episode]) -> None:
    """Finalizer: stops the episode thread and unregisters the plugin (close() or garbage collection)."""
    holder[0].abort()
    unregister_plugin(name)


def _register_with_gymnasium() -> None:
    """``gymnasium.make("gpusched/Scheduling-v0", scenario=...)``."""
    env_id = "gpusched/Scheduling-v0"
    if env_id not in gymnasium.registry:
        gymnasium.register(id=env_id, entry_point="gpusched.gym:SchedulingEnv")


_register_with_gymnasium()
