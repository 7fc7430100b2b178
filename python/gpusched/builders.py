"""Build scenarios in Python instead of writing JSON by hand.

Every builder produces the same dict a scenario file holds (schema_version 1, see
schemas/scenario.schema.json); ``gpusched.run`` accepts the builder or its ``to_dict()``.
Validation happens in the C++ core when the scenario is loaded, with the usual error ids.

Example::

    from gpusched.builders import Cluster, Profile, Scenario, synthetic

    cluster = (Cluster()
               .node_group("a100", count=16, cpu=128, memory="1Ti", gpus=8, gpu_model="A100-80GB")
               .node_group("cpu", count=4, cpu=96, memory="384Gi"))
    profile = Profile("packed", extends="default").score("gpu-binpack", weight=2).device_select("gpu-binpack")
    sc = Scenario(cluster, profile, synthetic(jobs=2000, load=0.9), seed=7, name="packed")
    result = sc.run()
"""

from __future__ import annotations

import copy
import os
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple, Union

from ._seeds import check_seed

if TYPE_CHECKING:
    from .api import ProgressFn
    from .result import Result

Quantity = Union[int, float, str]
Taint = Union[str, Mapping[str, str]]

_EFFECTS = ("NoSchedule", "PreferNoSchedule", "NoExecute")


def _taint(t: Taint) -> Dict[str, str]:
    """A taint dict from {"key", "value", "effect"} or the kubectl form "key[=value]:Effect"."""
    if isinstance(t, Mapping):
        return dict(t)
    if not isinstance(t, str) or ":" not in t:
        raise ValueError(f"a taint is a dict or 'key[=value]:Effect', got {t!r}")
    kv, effect = t.rsplit(":", 1)
    if effect not in _EFFECTS:
        raise ValueError(f"taint effect must be one of {', '.join(_EFFECTS)}, got {effect!r}")
    key, _, value = kv.partition("=")
    out = {"key": key, "effect": effect}
    if value:
        out["value"] = value
    return out


def _node_fields(
    cpu: Quantity,
    memory: Quantity,
    gpus: int,
    gpu_model: Optional[str],
    sockets: int,
    labels: Optional[Mapping[str, str]],
    taints: Optional[Iterable[Taint]],
    extended: Optional[Mapping[str, Quantity]],
    gpu_partition: Optional[Mapping[str, Any]] = None,
    topology: Optional[Mapping[str, Any]] = None,
    tpu: Optional[Mapping[str, Any]] = None,
) -> Dict[str, Any]:
    d: Dict[str, Any] = {"cpu": cpu, "memory": memory}
    if gpu_partition:
        d["gpu_partition"] = copy.deepcopy(dict(gpu_partition))
    if topology:
        d["topology"] = copy.deepcopy(dict(topology))
    if tpu:
        d["tpu"] = copy.deepcopy(dict(tpu))
    if gpus:
        d["gpus"] = int(gpus)
    if gpu_model is not None:
        d["gpu_model"] = gpu_model
    if sockets != 1:
        d["sockets"] = int(sockets)
    if labels:
        d["labels"] = dict(labels)
    if taints:
        d["taints"] = [_taint(t) for t in taints]
    if extended:
        d["extended"] = dict(extended)
    return d


class Cluster:
    """Nodes, one by one or in groups of identical nodes (named ``<group>-0000``, ``-0001`` ...).

    Quantities follow Kubernetes: cpu ``8`` / ``"500m"``, memory ``"64Gi"`` / ``"1Ti"``.
    Methods return the cluster, so calls chain.
    """

    def __init__(self) -> None:
        self._groups: List[Dict[str, Any]] = []
        self._nodes: List[Dict[str, Any]] = []
        self._gpu_models: List[Dict[str, Any]] = []

    def node_group(
        self,
        name: str,
        count: int,
        cpu: Quantity,
        memory: Quantity,
        gpus: int = 0,
        gpu_model: Optional[str] = None,
        sockets: int = 1,
        labels: Optional[Mapping[str, str]] = None,
        taints: Optional[Iterable[Taint]] = None,
        extended: Optional[Mapping[str, Quantity]] = None,
        gpu_partition: Optional[Mapping[str, Any]] = None,
        topology: Optional[Mapping[str, Any]] = None,
        autoscale: Optional[Mapping[str, Any]] = None,
    ) -> "Cluster":
        """Adds ``count`` identical nodes. ``gpu_model`` names a catalog model (gpusched.gpu_models())
        and is required when ``gpus > 0``; ``taints`` are dicts or "key[=value]:Effect".
        ``gpu_partition`` says how GPUs are handed out, e.g. ``{"mode": "mig", "dynamic": True}``,
        ``{"mode": "mig", "layout": ["4g.40gb", "3g.40gb"]}``, ``{"mode": "vgpu"}``,
        ``{"mode": "time-slicing", "replicas": 4}``, ``{"mode": "passthrough"}``; ``topology``
        gives NUMA/PCIe/NVLink, e.g. ``{"nvlink": "none", "gpus_per_pcie_switch": 2}``.
        ``autoscale`` makes it a cluster-autoscaler node group whose maximum size is ``count``:
        ``{"min": 0, "provisioning_delay_s": 300, "scale_down_idle_s": 600}``."""
        group = {"name": name, "count": int(count)}
        group.update(_node_fields(cpu, memory, gpus, gpu_model, sockets, labels, taints, extended, gpu_partition, topology))
        if autoscale is not None:
            group["autoscale"] = copy.deepcopy(dict(autoscale))
        self._groups.append(group)
        return self

    def node(
        self,
        name: str,
        cpu: Quantity,
        memory: Quantity,
        gpus: int = 0,
        gpu_model: Optional[str] = None,
        sockets: int = 1,
        labels: Optional[Mapping[str, str]] = None,
        taints: Optional[Iterable[Taint]] = None,
        extended: Optional[Mapping[str, Quantity]] = None,
        gpu_partition: Optional[Mapping[str, Any]] = None,
        topology: Optional[Mapping[str, Any]] = None,
    ) -> "Cluster":
        """Adds one node named ``name`` (same fields as node_group())."""
        node = {"name": name}
        node.update(_node_fields(cpu, memory, gpus, gpu_model, sockets, labels, taints, extended, gpu_partition, topology))
        self._nodes.append(node)
        return self

    def tpu_pool(
        self,
        name: str,
        generation: str,
        topology: str,
        cpu: Quantity,
        memory: Quantity,
        chips_per_host: Optional[int] = None,
        provisioned: bool = True,
    ) -> "Cluster":
        """Adds a pool of TPU hosts forming ``topology`` (chips, e.g. "4x4x4" of v4 = 16 hosts).
        ``provisioned=True``: a GKE node pool of exactly that slice shape; False: slices are carved
        as contiguous sub-blocks of the pool."""
        tpu: Dict[str, Any] = {"generation": generation, "topology": topology, "provisioned": bool(provisioned)}
        if chips_per_host is not None:
            tpu["chips_per_host"] = int(chips_per_host)
        group = {"name": name}
        group.update(_node_fields(cpu, memory, 0, None, 1, None, None, None, tpu=tpu))
        self._groups.append(group)
        return self

    def gpu_model(self, name: str, memory_mib: int, sms: int = 0, **fields: Any) -> "Cluster":
        """Adds (or overrides) a GPU model for this scenario: name, memory_mib, sms and optional
        aliases, vendor, mig_capable, nvlink."""
        model = {"name": name, "memory_mib": int(memory_mib), "sms": int(sms)}
        model.update(fields)
        self._gpu_models.append(model)
        return self

    def to_dict(self) -> Dict[str, Any]:
        """The scenario's "cluster" object."""
        d: Dict[str, Any] = {}
        if self._gpu_models:
            d["gpu_models"] = copy.deepcopy(self._gpu_models)
        if self._groups:
            d["node_groups"] = copy.deepcopy(self._groups)
        if self._nodes:
            d["nodes"] = copy.deepcopy(self._nodes)
        return d

    def __repr__(self) -> str:
        n = sum(g["count"] for g in self._groups) + len(self._nodes)
        return f"<gpusched.Cluster {n} nodes in {len(self._groups)} groups + {len(self._nodes)} single>"


def _plugin_ref(name: str, args: Mapping[str, Any], weight: Optional[float] = None) -> Union[str, Dict[str, Any]]:
    if weight is None and not args:
        return name
    ref: Dict[str, Any] = {"name": name}
    if weight is not None:
        ref["weight"] = weight
    if args:
        ref["args"] = dict(args)
    return ref


class Profile:
    """A scheduling profile: which plugin runs at which hook (see gpusched.plugins()).

    ``extends`` starts from a built-in profile (gpusched.profiles()). Plugins you add at a list
    hook (pre_filter, filter, score, reserve, permit, post_filter, bind) are ADDED to the base's
    list: one the base already has takes its place there with your weight and arguments, the
    others come after, in your order. ``replace`` names list hooks whose base list you restate
    instead (your entries alone; none drops the base's list). ``queue_sort`` and
    ``device_select`` hold one plugin and are replaced. ``filter`` lists always start with
    ``node-resources-fit``, ``taint-toleration`` and ``node-affinity`` (the runner refuses
    profiles without the first; the others make taints and node selectors hold). Methods chain.

    Example::

        Profile("pack", extends="default").score("gpu-binpack", weight=2)
        # scores: least-allocated (default's, weight 1) + gpu-binpack (2)
        Profile("pack", extends="default", replace=("score",)).score("gpu-binpack")
        # scores: gpu-binpack alone
    """

    _LIST_HOOKS = ("pre_filter", "filter", "score", "reserve", "permit", "post_filter", "bind")
    _SINGLE_HOOKS = ("queue_sort", "device_select")
    # What every built-in profile filters with (resources, taints, node selectors and affinity).
    _DEFAULT_FILTERS = ("node-resources-fit", "taint-toleration", "node-affinity")

    def __init__(
        self,
        name: str,
        extends: Optional[str] = None,
        description: Optional[str] = None,
        replace: Iterable[str] = (),
    ) -> None:
        self.name = name
        self.extends = extends
        self.description = description
        self.replace: Tuple[str, ...] = (replace,) if isinstance(replace, str) else tuple(replace)
        for hook in self.replace:
            if hook not in self._LIST_HOOKS:
                raise ValueError(f"replace names list hooks ({', '.join(self._LIST_HOOKS)}), got {hook!r}")
        if self.replace and extends is None:
            raise ValueError("replace needs extends: without a base profile every hook is used as written")
        self._hooks: Dict[str, Any] = {}
        self._tie_break: Optional[str] = None
        self._queueing: Optional[str] = None

    def add(self, hook: str, name: str, weight: Optional[float] = None, **args: Any) -> "Profile":
        """Adds plugin ``name`` at ``hook`` ("pre_filter", "filter", "score", "reserve", "permit",
        "post_filter", "bind"; or sets "queue_sort" / "device_select"). ``weight``: score only."""
        if hook in self._SINGLE_HOOKS:
            self._hooks[hook] = _plugin_ref(name, args, weight)
            return self
        if hook not in self._LIST_HOOKS:
            raise ValueError(f"unknown hook {hook!r}; hooks: {', '.join(self._SINGLE_HOOKS + self._LIST_HOOKS)}")
        if hook == "score" and weight is None:
            weight = 1
        entries = self._hooks.setdefault(hook, list(self._DEFAULT_FILTERS) if hook == "filter" else [])
        if hook == "filter":
            for i, e in enumerate(entries):   # a default filter is configured in place, never twice
                if (e if isinstance(e, str) else e.get("name")) == name:
                    entries[i] = _plugin_ref(name, args)
                    return self
        entries.append(_plugin_ref(name, args, weight))
        return self

    def filter(self, name: str, **args: Any) -> "Profile":
        """Adds a filter (filters AND together)."""
        return self.add("filter", name, **args)

    def pre_filter(self, name: str, **args: Any) -> "Profile":
        """Adds a pre-filter."""
        return self.add("pre_filter", name, **args)

    def score(self, name: str, weight: float = 1, **args: Any) -> "Profile":
        """Adds a score plugin; scores are normalised to 0..100, weighted (> 0) and summed."""
        return self.add("score", name, weight=weight, **args)

    def device_select(self, name: str, **args: Any) -> "Profile":
        """Sets the plugin that picks GPUs inside the chosen node."""
        return self.add("device_select", name, **args)

    def place(self, name: str, **args: Any) -> "Profile":
        """Lets a Python plugin with a ``place(job, nodes)`` method make the whole decision: it
        is added as a filter (it narrows the candidates to the node it returns, or to none: the
        job waits) and set as the device-select plugin (so the GPUs it returns are used)."""
        self.add("filter", name, **args)
        return self.add("device_select", name, **args)

    def queue_sort(self, name: str, **args: Any) -> "Profile":
        """Sets the plugin that orders the pending queue."""
        return self.add("queue_sort", name, **args)

    def post_filter(self, name: str, **args: Any) -> "Profile":
        """Adds a post-filter (runs when a job does not fit: "priority-preemption",
        "capacity-queues" reclaim)."""
        return self.add("post_filter", name, **args)

    def queueing(self, mode: str = "greedy") -> "Profile":
        """The simulator's queueing action: "greedy" (every job that fits starts, Kubernetes),
        "strict-fifo" (the first job that does not fit blocks the rest), "easy-backfill"
        (Slurm's EASY backfill: later jobs never delay the first waiting job's reservation) or
        "preemptive" (training schedulers: all jobs, running and waiting, in the queue sort's order
        at every event; those that lose their room are preempted and resume later; with
        ``queue_sort("srtf")``, ``"2d-las"``, ``"gittins"``... see docs/tiresias.md)."""
        if mode not in ("greedy", "strict-fifo", "easy-backfill", "preemptive"):
            raise ValueError('queueing is "greedy", "strict-fifo", "easy-backfill" or "preemptive"')
        self._queueing = mode
        return self

    def tie_break(self, mode: str = "node-order") -> "Profile":
        """How equal scores are broken: "node-order" (lowest node index) or "random" (seeded)."""
        if mode not in ("node-order", "random"):
            raise ValueError('tie_break is "node-order" or "random"')
        self._tie_break = mode
        return self

    def to_dict(self) -> Dict[str, Any]:
        """The scenario's "profile" object."""
        d: Dict[str, Any] = {"name": self.name}
        if self.extends is not None:
            d["extends"] = self.extends
        if self.replace:
            d["replace"] = list(self.replace)
        if self.description is not None:
            d["description"] = self.description
        d.update(copy.deepcopy(self._hooks))
        if self._tie_break is not None:
            d["tie_break"] = self._tie_break
        if self._queueing is not None:
            d["queueing"] = self._queueing
        return d

    def __repr__(self) -> str:
        base = f" extends {self.extends!r}" if self.extends else ""
        if self.replace:
            base += f" replacing {', '.join(self.replace)}"
        return f"<gpusched.Profile {self.name!r}{base}: {self._hooks}>"


def synthetic(
    jobs: int,
    load: float = 0.8,
    *,
    arrival_rate_per_hour: Optional[float] = None,
    duration_median_s: Optional[float] = None,
    duration_sigma: Optional[float] = None,
    duration_min_s: Optional[float] = None,
    duration_max_s: Optional[float] = None,
    mix: Optional[Mapping[str, float]] = None,
    queues: Optional[Sequence[str]] = None,
    gang_fraction: Optional[float] = None,
) -> Dict[str, Any]:
    """A synthetic workload: Poisson arrivals at offered ``load`` (GPU-time demanded / capacity;
    0 means use ``arrival_rate_per_hour``), log-normal durations, a production-like request mix
    (``mix`` weights: cpu_only, fractional, gpu1, gpu2, gpu4, gpu8)."""
    cfg: Dict[str, Any] = {"jobs": int(jobs), "load": load}
    optional = {
        "arrival_rate_per_hour": arrival_rate_per_hour,
        "duration_median_s": duration_median_s,
        "duration_sigma": duration_sigma,
        "duration_min_s": duration_min_s,
        "duration_max_s": duration_max_s,
        "gang_fraction": gang_fraction,
    }
    cfg.update({k: v for k, v in optional.items() if v is not None})
    if mix is not None:
        cfg["mix"] = dict(mix)
    if queues is not None:
        cfg["queues"] = list(queues)
    return {"synthetic": cfg}


def trace(
    path: Union[str, "os.PathLike[str]"],
    *,
    format: Optional[str] = None,
    transforms: Optional[Sequence[Mapping[str, Any]]] = None,
    target_load: Optional[float] = None,
) -> Dict[str, Any]:
    """A workload read from a trace file (a native .csv / .jsonl, or ``format`` = one of
    ``gpusched formats``, detected when omitted). A relative path resolves from the run's
    base_dir (the current folder unless given).

    ``transforms`` are steps applied in order at run time, as in scenario files
    (``{"shuffle": True}``, ``{"resample_gpu_pct": 130}``, ``{"scale_time": 0.5}``,
    ``{"target_load": 0.8}``, ``{"filter": {...}}``, ``{"arrival_only": True}``).
    ``target_load`` appends ``{"target_load": target_load}``: submit times are scaled (durations
    kept) so the offered GPU load, GPU milli x duration summed over jobs / (cluster GPU milli x
    arrival span), is that value (docs/traces.md)."""
    steps = [dict(step) for step in transforms] if transforms is not None else []
    if target_load is not None:
        steps.append({"target_load": target_load})
    if format is None and not steps:
        return {"trace": os.fspath(path)}
    spec: Dict[str, Any] = {"path": os.fspath(path)}
    if format is not None:
        spec["format"] = format
    if steps:
        spec["transforms"] = steps
    return {"trace": spec}


def job(
    id: str,
    submit_time: float = 0,
    duration: Optional[float] = None,
    *,
    cpu: Optional[Quantity] = None,
    memory: Optional[Quantity] = None,
    gpus: Optional[int] = None,
    gpu_milli: Optional[int] = None,
    requests: Optional[Mapping[str, Quantity]] = None,
    tasks: Optional[int] = None,
    min_available: Optional[int] = None,
    priority: Optional[int] = None,
    queue: Optional[str] = None,
    gpu_model: Union[str, Sequence[str], None] = None,
    priority_class: Optional[str] = None,
    preemption_policy: Optional[str] = None,
    preemptible: Optional[bool] = None,
    node_selector: Optional[Mapping[str, str]] = None,
    affinity: Optional[Mapping[str, Any]] = None,
    tolerations: Optional[Sequence[Mapping[str, str]]] = None,
    app: Optional[str] = None,
    max_per_node: Optional[int] = None,
    gang_timeout: Optional[float] = None,
    walltime: Optional[float] = None,
    restart_overhead: Optional[float] = None,
    claim_template: Optional[str] = None,
    resource_claim: Optional[str] = None,
) -> Dict[str, Any]:
    """One inline job (a trace row). Times in seconds; ``duration=None`` runs forever. ``gpus`` is
    nvidia.com/gpu, ``gpu_milli`` a share of one GPU (gpusched.io/gpu-milli); other resources go in
    ``requests``. ``gpu_model``: allowed model(s).

    Scheduling constraints, with Kubernetes' meanings: ``priority_class`` (a name from the
    scenario's priority_classes), ``preemption_policy`` ("PreemptLowerPriority" or "Never"),
    ``preemptible`` (False: never a victim), ``node_selector``, ``affinity`` ({"required":
    [[{"key", "operator", "values"}]], "preferred": [{"weight", "term"}]}), ``tolerations``
    ([{"key", "operator", "value", "effect"}]), ``app`` with ``max_per_node`` (anti-affinity),
    ``gang_timeout`` (s: a gang still waiting then fails), ``walltime`` (s: the declared limit
    backfill plans with), ``restart_overhead`` (s: restoring after a preemption, instead of the
    scenario's ``preemption.restart_overhead_s``), ``claim_template`` (a Kubernetes DRA
    ResourceClaimTemplate from the scenario's ``dra_objects``: the job's GPUs come from its claim;
    state no GPUs then; docs/dra.md), ``resource_claim`` (a ResourceClaim from ``dra_objects``,
    shared by every job naming it: the first to start allocates its devices, the others run on
    that node beside it; docs/dra.md)."""
    req: Dict[str, Any] = {}
    if cpu is not None:
        req["cpu"] = cpu
    if memory is not None:
        req["memory"] = memory
    if gpus is not None:
        req["nvidia.com/gpu"] = gpus
    if gpu_milli is not None:
        req["gpusched.io/gpu-milli"] = gpu_milli
    if requests:
        req.update(requests)
    d: Dict[str, Any] = {"id": id, "submit_time": submit_time}
    if duration is not None:
        d["duration"] = duration
    optional = {
        "tasks": tasks,
        "min_available": min_available,
        "priority": priority,
        "queue": queue,
        "priority_class": priority_class,
        "preemption_policy": preemption_policy,
        "preemptible": preemptible,
        "node_selector": dict(node_selector) if node_selector is not None else None,
        "affinity": copy.deepcopy(dict(affinity)) if affinity is not None else None,
        "tolerations": [dict(t) for t in tolerations] if tolerations is not None else None,
        "app": app,
        "max_per_node": max_per_node,
        "gang_timeout": gang_timeout,
        "walltime": walltime,
        "restart_overhead": restart_overhead,
        "claim_template": claim_template,
        "resource_claim": resource_claim,
    }
    d.update({k: v for k, v in optional.items() if v is not None})
    if gpu_model is not None:
        d["gpu_model"] = gpu_model if isinstance(gpu_model, str) else list(gpu_model)
    d["requests"] = req
    return d


def jobs(items: Iterable[Mapping[str, Any]]) -> Dict[str, Any]:
    """A workload of inline jobs (dicts as made by job(), or trace-style dicts)."""
    return {"jobs": [dict(j) for j in items]}


class Scenario:
    """One run's inputs: cluster, profile, workload, seed and options.

    ``profile`` is a Profile, a dict, or a built-in profile name ("binpack", "default", ...);
    ``workload`` comes from synthetic(), trace() or jobs(); ``mode`` is "replay" (jobs run and
    finish) or "fill" (arrival-only). ``events`` are {"time_s", "node", "type": "node_down" |
    "node_up"} dicts (or use node_down() / node_up()). ``kubernetes_objects`` are the peers' own
    objects (Kueue, Volcano, PriorityClass, ResourceQuota, KubeSchedulerConfiguration): YAML or
    JSON file paths (relative to run()'s ``base_dir``) or inline object dicts. ``dra_objects``
    likewise holds Kubernetes DRA DeviceClasses, ResourceClaimTemplates and ResourceClaims, which
    jobs name with ``job(claim_template=...)`` and ``job(resource_claim=...)`` (docs/dra.md).
    """

    def __init__(
        self,
        cluster: Union[Cluster, Mapping[str, Any]],
        profile: Union[Profile, Mapping[str, Any], str],
        workload: Mapping[str, Any],
        seed: int = 42,
        mode: str = "replay",
        horizon_s: Optional[float] = None,
        name: str = "scenario",
        description: Optional[str] = None,
        events: Optional[Iterable[Mapping[str, Any]]] = None,
        sample_interval_s: Optional[float] = None,
        event_log: Optional[bool] = None,
        retry: Optional[bool] = None,
        requeue_on_node_down: Optional[bool] = None,
        devices: Optional[Mapping[str, Any]] = None,
        priority_classes: Optional[Mapping[str, Any]] = None,
        preemption: Optional[Mapping[str, Any]] = None,
        autoscaler: Optional[Mapping[str, Any]] = None,
        kubernetes_objects: Optional[Iterable[Union[str, "os.PathLike[str]", Mapping[str, Any]]]] = None,
        dra_objects: Optional[Iterable[Union[str, "os.PathLike[str]", Mapping[str, Any]]]] = None,
    ) -> None:
        if mode not in ("replay", "fill"):
            raise ValueError('mode is "replay" or "fill"')
        self.cluster = cluster
        self.profile = profile
        self.workload = workload
        self.seed = check_seed(seed)
        self.mode = mode
        self.horizon_s = horizon_s
        self.name = name
        self.description = description
        self.events: List[Dict[str, Any]] = [dict(e) for e in events or []]
        self.sample_interval_s = sample_interval_s
        self.event_log = event_log
        self.retry = retry
        self.requeue_on_node_down = requeue_on_node_down
        self.devices = copy.deepcopy(dict(devices)) if devices else None
        self.priority_classes = copy.deepcopy(dict(priority_classes)) if priority_classes else None
        self.preemption = copy.deepcopy(dict(preemption)) if preemption else None
        self.autoscaler = copy.deepcopy(dict(autoscaler)) if autoscaler else None
        # Kueue / Volcano / Kubernetes objects: YAML or JSON files (relative to run()'s base_dir)
        # or inline objects; docs/policies.md "Kubernetes objects".
        self.kubernetes_objects: Optional[List[Any]] = (
            [copy.deepcopy(dict(o)) if isinstance(o, Mapping) else os.fspath(o) for o in kubernetes_objects]
            if kubernetes_objects
            else None
        )
        # Kubernetes DRA: DeviceClasses and ResourceClaimTemplates (files or inline objects) that
        # jobs' claim_template names; docs/dra.md.
        self.dra_objects: Optional[List[Any]] = (
            [copy.deepcopy(dict(o)) if isinstance(o, Mapping) else os.fspath(o) for o in dra_objects] if dra_objects else None
        )

    def node_down(self, time_s: float, node: str) -> "Scenario":
        """Takes ``node`` down at ``time_s`` (its jobs are requeued unless requeue_on_node_down=False)."""
        self.events.append({"time_s": time_s, "node": node, "type": "node_down"})
        return self

    def node_up(self, time_s: float, node: str) -> "Scenario":
        """Brings ``node`` back at ``time_s``."""
        self.events.append({"time_s": time_s, "node": node, "type": "node_up"})
        return self

    def taint(self, time_s: float, node: str, key: str, value: str = "", effect: str = "NoExecute") -> "Scenario":
        """Taints ``node`` at ``time_s``; a NoExecute taint evicts the jobs that do not tolerate it."""
        self.events.append({"time_s": time_s, "node": node, "type": "taint", "taint": {"key": key, "value": value, "effect": effect}})
        return self

    def untaint(self, time_s: float, node: str, key: str, effect: str = "NoExecute") -> "Scenario":
        """Removes the taints with ``key`` and ``effect`` from ``node`` at ``time_s``."""
        self.events.append({"time_s": time_s, "node": node, "type": "untaint", "taint": {"key": key, "effect": effect}})
        return self

    def to_dict(self) -> Dict[str, Any]:
        """The scenario document (what a scenario .json file holds)."""
        cluster = self.cluster.to_dict() if isinstance(self.cluster, Cluster) else copy.deepcopy(dict(self.cluster))
        if isinstance(self.profile, Profile):
            profile: Any = self.profile.to_dict()
        elif isinstance(self.profile, str):
            profile = self.profile
        else:
            profile = copy.deepcopy(dict(self.profile))
        d: Dict[str, Any] = {"schema_version": 1, "name": self.name}
        if self.description is not None:
            d["description"] = self.description
        d["seed"] = check_seed(self.seed)   # 0..2**64-1, never truncated (1.5 is an error, not 1)
        d["mode"] = self.mode
        d["cluster"] = cluster
        d["profile"] = profile
        d["workload"] = copy.deepcopy(dict(self.workload))
        if self.devices:
            d["devices"] = copy.deepcopy(self.devices)
        if self.priority_classes:
            d["priority_classes"] = copy.deepcopy(self.priority_classes)
        if self.kubernetes_objects:
            d["kubernetes_objects"] = copy.deepcopy(self.kubernetes_objects)
        if self.dra_objects:
            d["dra"] = {"objects": copy.deepcopy(self.dra_objects)}
        if self.preemption:
            d["preemption"] = copy.deepcopy(self.preemption)
        if self.autoscaler:
            d["autoscaler"] = copy.deepcopy(self.autoscaler)
        if self.horizon_s is not None:
            d["horizon_s"] = self.horizon_s
        if self.retry is not None:
            d["retry"] = bool(self.retry)
        if self.requeue_on_node_down is not None:
            d["requeue_on_node_down"] = bool(self.requeue_on_node_down)
        if self.events:
            d["events"] = copy.deepcopy(self.events)
        outputs: Dict[str, Any] = {}
        if self.sample_interval_s is not None:
            outputs["sample_interval_s"] = self.sample_interval_s
        if self.event_log is not None:
            outputs["event_log"] = bool(self.event_log)
        if outputs:
            d["outputs"] = outputs
        return d

    def run(self, seed: Optional[int] = None, progress: Optional["ProgressFn"] = None) -> "Result":
        """Runs the scenario (gpusched.run(self, ...))."""
        from .api import run

        return run(self, seed=seed, progress=progress)

    def __repr__(self) -> str:
        return f"<gpusched.Scenario {self.name!r} seed={self.seed} mode={self.mode}>"
