"""Seeded random SMALL scenarios (2-6 nodes, 10-60 jobs) over every feature of gpusched.

``generate(seed)`` returns a scenario dict in the documented JSON format
(schemas/scenario.schema.json). The same seed always gives the same dict. Each seed has a
primary feature (``FEATURES[seed % len(FEATURES)]``, so a run of consecutive seeds covers all
of them evenly); the other features join at random.

Node kinds use distinct GPU models so a job's ``gpu_model`` sends it to the kind it was made for
(whole GPUs and shares on V100-32GB / L4 / H200, time-slicing on T4, MPS on A10, vGPU on
A100-40GB, passthrough on L40S, MIG on A100-80GB / H100-80GB / A30); a few jobs go unconstrained.
Every request fits at least one node of its kind, so no scenario is rejected as "can never run".
"""

from __future__ import annotations

import random
import re
from typing import Any, Dict, List, Optional, Tuple

#: Primary features, one per seed in turn.
FEATURES: Tuple[str, ...] = (
    "whole",
    "milli",
    "gpumem",
    "mig-static",
    "mig-dynamic",
    "vgpu",
    "time-slicing",
    "gang",
    "preempt-from-zero",
    "preempt-checkpoint",
    "quota",
    "node-events",
    "fill",
    "mixed",
)

#: Node kinds and what a feature needs.
_KIND_FOR_FEATURE = {
    "whole": "whole",
    "milli": "whole",
    "gpumem": "whole",
    "mig-static": "mig-static",
    "mig-dynamic": "mig-dynamic",
    "vgpu": "vgpu",
    "time-slicing": "time-slicing",
}

_WHOLE_MODELS = ("V100-32GB", "L4", "H200")
_MIG_MODELS = ("A100-80GB", "H100-80GB", "A30")
_VGPU_PROFILES = ("A100-4C", "A100-5C", "A100-8C", "A100-10C", "A100-20C", "A100-40C")
#: Valid static layouts per model (the engine checks them too): lists of (profile, start).
_STATIC_LAYOUTS: Dict[str, List[List[Any]]] = {
    "A100-80GB": [
        ["7g.80gb"],
        ["4g.40gb", {"profile": "3g.40gb", "start": 4}],
        [{"profile": "3g.40gb", "start": 0}, {"profile": "3g.40gb", "start": 4}],
        [{"profile": "2g.20gb", "start": 0}, {"profile": "2g.20gb", "start": 2}, {"profile": "3g.40gb", "start": 4}],
        [{"profile": "1g.10gb", "start": i} for i in range(7)],
        [{"profile": "1g.20gb", "start": 0}, {"profile": "1g.20gb", "start": 2}, {"profile": "3g.40gb", "start": 4}],
    ],
    "H100-80GB": [
        ["7g.80gb"],
        [{"profile": "4g.40gb", "start": 0}, {"profile": "2g.20gb", "start": 4}, {"profile": "1g.10gb", "start": 6}],
        [{"profile": "3g.40gb", "start": 0}, {"profile": "1g.10gb", "start": 4}, {"profile": "1g.10gb", "start": 5},
         {"profile": "1g.10gb", "start": 6}],
    ],
    "A30": [
        ["4g.24gb"],
        [{"profile": "2g.12gb", "start": 0}, {"profile": "2g.12gb", "start": 2}],
        [{"profile": "2g.12gb", "start": 0}, {"profile": "1g.6gb", "start": 2}, {"profile": "1g.6gb", "start": 3}],
    ],
}
_DYNAMIC_PROFILES: Dict[str, Tuple[str, ...]] = {
    "A100-80GB": ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb", "1g.10gb+me"),
    "H100-80GB": ("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
    "A30": ("1g.6gb", "2g.12gb", "4g.24gb", "2g.12gb+me"),
}
# Whole GiB of each model's usable memory (the catalog's memory_mib, as nvidia-smi reports it: an
# H200 has 143771 MiB, 140.4 GiB, so a 141 GiB gpushare request can never run there).
_GPU_MEMORY_GIB = {"V100-32GB": 32, "L4": 22, "H200": 140}

_PROFILES = ("default", "first-fit", "best-fit", "binpack", "spread", "most-allocated", "random", "fgd", "kube-default")


def _profile_name(layout_entry: Any) -> str:
    return layout_entry if isinstance(layout_entry, str) else str(layout_entry["profile"])


class _Gen:
    def __init__(self, seed: int, feature: Optional[str]) -> None:
        self.rng = random.Random(seed * 7919 + 13)
        self.seed = seed
        self.feature = feature or FEATURES[seed % len(FEATURES)]
        self.groups: List[Dict[str, Any]] = []
        #: kind -> list of (group name, count, node dict)
        self.kinds: Dict[str, List[Dict[str, Any]]] = {}

    def chance(self, p: float) -> bool:
        return self.rng.random() < p

    def want(self, feat: str, p: float = 0.3) -> bool:
        """Is `feat` on: the primary feature, or at random (always more often in "mixed")."""
        if self.feature == feat:
            return True
        return self.chance(0.5 if self.feature == "mixed" else p)

    # -- cluster --------------------------------------------------------------------------------

    def add_group(self, kind: str, count: int) -> None:
        r = self.rng
        name = f"{kind.replace('-', '')}{len(self.groups)}"
        g: Dict[str, Any] = {"name": name, "count": count, "cpu": str(r.choice([16, 32, 48, 64, 96])),
                             "memory": f"{r.choice([64, 128, 256, 512])}Gi"}
        if kind == "cpu":
            pass
        elif kind == "whole":
            g["gpus"] = r.choice([1, 2, 4, 8])
            g["gpu_model"] = r.choice(_WHOLE_MODELS)
        elif kind == "mig-static":
            model = r.choice(_MIG_MODELS)
            g["gpus"] = r.choice([1, 2, 4])
            g["gpu_model"] = model
            g["gpu_partition"] = {"mode": "mig", "layout": r.choice(_STATIC_LAYOUTS[model])}
        elif kind == "mig-dynamic":
            model = r.choice(_MIG_MODELS)
            g["gpus"] = r.choice([1, 2, 4])
            g["gpu_model"] = model
            g["gpu_partition"] = {"mode": "mig", "dynamic": True}
        elif kind == "vgpu":
            g["gpus"] = r.choice([1, 2, 4])
            g["gpu_model"] = "A100-40GB"
            part: Dict[str, Any] = {"mode": "vgpu"}
            if self.chance(0.3):
                part["vgpu_profile"] = r.choice(_VGPU_PROFILES)
            g["gpu_partition"] = part
        elif kind == "time-slicing":
            g["gpus"] = r.choice([1, 2])
            g["gpu_model"] = "T4"
            g["gpu_partition"] = {"mode": "time-slicing", "replicas": r.choice([2, 3, 4])}
        elif kind == "mps":
            g["gpus"] = r.choice([1, 2])
            g["gpu_model"] = "A10"
            g["gpu_partition"] = {"mode": "mps", "replicas": r.choice([2, 4])}
        elif kind == "passthrough":
            g["gpus"] = r.choice([2, 4])
            g["gpu_model"] = "L40S"
            g["gpu_partition"] = {"mode": "passthrough"}
        else:  # pragma: no cover
            raise ValueError(kind)
        self.groups.append(g)
        self.kinds.setdefault(kind, []).append(g)

    def cluster(self) -> None:
        r = self.rng
        nodes = r.randint(2, 6)
        kinds: List[str] = []
        primary = _KIND_FOR_FEATURE.get(self.feature)
        if primary:
            kinds.append(primary)
        optional = ["whole", "mig-static", "mig-dynamic", "vgpu", "time-slicing", "mps", "passthrough", "cpu"]
        while len(kinds) < min(nodes, 4):
            k = r.choice(optional if self.feature in ("mixed", "node-events") or self.chance(0.5) else ["whole", "cpu"])
            if k not in kinds or self.chance(0.3):
                kinds.append(k)
        if "whole" not in kinds and not primary and self.chance(0.7):
            kinds[0] = "whole"
        # Spread the node count over the kinds (each at least one node).
        counts = [1] * len(kinds)
        for _ in range(nodes - len(kinds)):
            counts[r.randrange(len(kinds))] += 1
        for k, c in zip(kinds, counts):
            self.add_group(k, c)

    # -- jobs -----------------------------------------------------------------------------------

    def request_for(self, kind: str, tasks: int) -> Tuple[Dict[str, Any], Optional[str], Dict[str, Any]]:
        """A request a node of `kind` can hold: (requests, gpu_model or None, extra job fields)."""
        r = self.rng
        g = r.choice(self.kinds[kind])
        cpu_max = int(g["cpu"])
        mem_gib = int(g["memory"][:-2])
        req: Dict[str, Any] = {"cpu": r.choice(["500m", "1", "2", "4", "8", str(max(1, cpu_max // 2)), str(cpu_max)]),
                               "memory": f"{r.choice([1, 4, 8, 16, 32, max(1, mem_gib // 2), mem_gib])}Gi"}
        if r.random() < 0.1:
            req["cpu"] = str(cpu_max // r.choice([1, 2, 3]))
        extra: Dict[str, Any] = {}
        model = g.get("gpu_model")
        if kind == "cpu":
            return req, None, extra
        if kind == "whole":
            mode = r.choices(["gpu", "milli", "gpumem", "hami", "none"],
                             weights=[3 if self.feature in ("whole", "mixed") else 1,
                                      4 if self.feature == "milli" else 1,
                                      4 if self.feature == "gpumem" else 1, 0.5, 0.5])[0]
            if mode == "gpu":
                req["nvidia.com/gpu"] = r.randint(1, g["gpus"])
            elif mode == "milli":
                req["gpusched.io/gpu-milli"] = r.choice([1, 100, 250, 333, 500, 700, 999, 1000, r.randint(1, 1000)])
            elif mode == "gpumem":
                req["aliyun.com/gpu-mem"] = r.randint(1, _GPU_MEMORY_GIB[model])
            elif mode == "hami":
                req["nvidia.com/gpu"] = r.randint(1, g["gpus"])
                req["nvidia.com/gpumem"] = r.choice([1024, 4096, 8192])
                req["nvidia.com/gpucores"] = r.choice([10, 30, 50, 99, 100])
        elif kind in ("mig-static", "mig-dynamic"):
            if kind == "mig-static":
                prof = _profile_name(r.choice(g["gpu_partition"]["layout"]))
            else:
                prof = r.choice(_DYNAMIC_PROFILES[model])
            req[f"nvidia.com/mig-{prof}"] = 1
        elif kind == "vgpu":
            fixed = g["gpu_partition"].get("vgpu_profile")
            req[f"nvidia.com/vgpu-{fixed or r.choice(_VGPU_PROFILES)}"] = 1
        elif kind in ("time-slicing", "mps"):
            req["nvidia.com/gpu"] = 1
            if self.chance(0.8):
                extra["gpu_util"] = r.choice([0.1, 0.25, 0.3, 0.5, 0.75, 1.0])
        elif kind == "passthrough":
            req["pci_passthrough:alias"] = f"L40S:{r.randint(1, g['gpus'])}"
        # Jobs with GPUs go to their kind's model, except a few (kinds whose resource name says it all).
        asks_gpu = any(k != "cpu" and k != "memory" for k in req)
        constrain = asks_gpu and model is not None and not (kind in ("mig-static", "mig-dynamic", "vgpu") and self.chance(0.3))
        return req, (model if constrain else None), extra

    def jobs(self) -> List[Dict[str, Any]]:
        r = self.rng
        n = r.randint(10, 60)
        fill = self.feature == "fill"
        span = r.choice([300, 1000, 3000])
        gangs = self.want("gang", 0.25)
        prio = self.feature.startswith("preempt") or self.want("priorities", 0.2)
        queues = ["a", "b", "default"] if self.feature == "quota" or self.chance(0.3) else ["default"]
        out: List[Dict[str, Any]] = []
        kinds = sorted(self.kinds)
        primary = _KIND_FOR_FEATURE.get(self.feature)
        for i in range(n):
            kind = primary if primary and primary in self.kinds and self.chance(0.6) else r.choice(kinds)
            tasks = 1
            job: Dict[str, Any] = {"id": f"j{i:02d}"}
            if gangs and self.chance(0.4):
                tasks = r.randint(2, 5)
            req, model, extra = self.request_for(kind, tasks)
            submit = r.uniform(0, span) if self.chance(0.8) else float(r.choice([0, 100, 200]))
            job["submit_time"] = round(submit, r.choice([0, 0, 3, 6]))
            if not fill or self.chance(0.5):
                job["duration"] = round(r.choice([r.uniform(1, 100), r.uniform(100, 1500), r.uniform(1500, 4000)]),
                                        r.choice([0, 1, 6]))
                if job["duration"] <= 0:
                    job["duration"] = 1
            if tasks > 1:
                job["tasks"] = tasks
                job["min_available"] = r.choice([1, tasks, r.randint(1, tasks)])
            if prio:
                job["priority"] = r.choice([0, 0, 1, 5, 10])
                if self.chance(0.1):
                    job["preemption_policy"] = "Never"
            if len(queues) > 1:
                job["queue"] = r.choice(queues)
            if model is not None:
                job["gpu_model"] = model
            job.update(extra)
            job["requests"] = req
            out.append(job)
        out.sort(key=lambda j: float(j["submit_time"]))
        return out

    # -- the rest -------------------------------------------------------------------------------

    def profile(self) -> Any:
        r = self.rng
        base = r.choice(_PROFILES)
        preempt = self.feature.startswith("preempt") or (self.feature == "mixed" and self.chance(0.5))
        quota = self.feature == "quota" or (self.feature == "mixed" and self.chance(0.4))
        if not preempt and not quota:
            return base
        prof: Dict[str, Any] = {"name": f"inv-{self.seed}", "extends": base}
        if preempt:
            args: Dict[str, Any] = {}
            if self.chance(0.4):
                args["node_choice"] = "least-lost-work"
            prof["post_filter"] = [{"name": "priority-preemption", "args": args} if args else "priority-preemption"]
        if quota:
            quotas: Dict[str, Any] = {}
            for q in ("a", "b"):
                lim: Dict[str, Any] = {}
                if self.chance(0.7):
                    lim["requests.nvidia.com/gpu"] = r.randint(1, 8)
                if self.chance(0.5):
                    lim["count/jobs"] = r.randint(2, 10)
                if self.chance(0.5):
                    lim["requests.cpu"] = str(r.choice([8, 16, 32, 64]))
                if lim:
                    quotas[q] = lim
            if not quotas:
                quotas["a"] = {"count/jobs": 3}
            prof["pre_filter"] = [{"name": "resource-quota",
                                   "args": {"quotas": quotas, "charge": r.choice(["created", "running"])}}]
        return prof

    def node_events(self) -> List[Dict[str, Any]]:
        r = self.rng
        names = [f"{g['name']}-{i:04d}" for g in self.groups for i in range(g["count"])]
        events: List[Dict[str, Any]] = []
        for _ in range(r.randint(1, 3)):
            node = r.choice(names)
            down = round(r.uniform(0, 2500), r.choice([0, 3]))
            events.append({"time_s": down, "node": node, "type": "node_down"})
            if self.chance(0.75):
                events.append({"time_s": round(down + r.uniform(0, 1500), r.choice([0, 3])), "node": node,
                               "type": "node_up"})
        return events

    def scenario(self) -> Dict[str, Any]:
        r = self.rng
        self.cluster()
        doc: Dict[str, Any] = {
            "schema_version": 1,
            "name": f"inv-{self.seed}",
            "seed": self.seed,
            "cluster": {"node_groups": self.groups},
            "profile": self.profile(),
            "workload": {"jobs": self.jobs()},
            "outputs": {"sample_interval_s": r.choice([30, 60, 300]), "event_log": True, "fragmentation": "on"},
        }
        if self.feature == "fill":
            doc["mode"] = "fill"
            if self.chance(0.3):
                doc["retry"] = True
        devices: Dict[str, Any] = {}
        if "mig-dynamic" in self.kinds:
            devices["mig_reconfigure_s"] = r.choice([0, 5, 10, 30.5])
        if "time-slicing" in self.kinds or "mps" in self.kinds:
            devices["time_slicing_overhead"] = r.choice([0, 0.05, 0.2])
        if self.chance(0.5):
            devices["slowdown"] = {"vgpu": r.choice([1, 1.05]), "mig": r.choice([1, 1.1]),
                                   "passthrough": r.choice([1, 1.02])}
        if devices:
            doc["devices"] = devices
        if self.feature.startswith("preempt") or (self.feature == "mixed" and self.chance(0.5)):
            if self.feature == "preempt-checkpoint" or (self.feature == "mixed" and self.chance(0.5)):
                doc["preemption"] = {"restart": "checkpoint", "checkpoint_interval_s": r.choice([10, 60, 300, 600])}
            else:
                doc["preemption"] = {"restart": "from-zero"}
        if self.want("node-events", 0.15):
            doc["events"] = self.node_events()
            if self.chance(0.2):
                doc["requeue_on_node_down"] = False
        return doc


def _repair(doc: Dict[str, Any]) -> Dict[str, Any]:
    """Lowers min_available of gangs the whole cluster could never hold at once (gpusched
    rejects them when the run loads, trace_error.106 "holds only K of them") to K."""
    import gpusched

    gangs = [j for j in doc["workload"]["jobs"] if j.get("min_available", 1) > 1]
    if not gangs:
        return doc
    by_id = {j["id"]: j for j in gangs}
    probe = {**doc, "workload": {"jobs": gangs}, "events": [], "outputs": {"event_log": False}}
    probe.pop("mode", None)
    for _ in range(len(gangs) + 1):
        try:
            gpusched.run(probe)
            return doc
        except gpusched.TraceError as e:
            m = re.search(r'job "([^"]+)" is a gang of \d+ tasks .* holds only (\d+) of them', str(e))
            if not m or m.group(1) not in by_id:
                raise
            by_id[m.group(1)]["min_available"] = max(1, int(m.group(2)))
    return doc


def generate(seed: int, feature: Optional[str] = None) -> Dict[str, Any]:
    """The scenario of `seed` (primary feature FEATURES[seed % len(FEATURES)] unless given)."""
    return _repair(_Gen(seed, feature).scenario())


def feature_of(seed: int) -> str:
    """The primary feature of `seed`."""
    return FEATURES[seed % len(FEATURES)]
