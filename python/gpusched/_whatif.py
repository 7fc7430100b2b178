"""What-if on a Kubernetes cluster snapshot: ``gpusched.whatif()`` (``gpusched whatif``)."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Union

from . import _core
from ._seeds import check_seed

if TYPE_CHECKING:  # pandas is imported on first use: ``import gpusched`` stays light
    import pandas as pd

PathLike = Union[str, "os.PathLike[str]"]

DEFAULT_PROFILES = ("kube-default", "gpushare-binpack", "fgd")


class WhatIfResult:
    """What each profile would do with a snapshot's pending pods.

    ``summary``: one row per profile (``profile``, ``bound``, ``pending``, ``placed``, ``converted``,
    ``gpu_alloc_pct_before``, ``gpu_alloc_pct``, ``gpu_memory_alloc_pct``, ``gpus_busy``, ``frag_pct``,
    ``frag_ratio_pct``).
    ``pods``: one row per (profile, pending pod), in the order the pods were tried (``profile``,
    ``pod``, ``priority``, ``placed``, ``node``, ``placement``, ``reason``: kube-scheduler's words
    for a pod that stays pending). ``raw``: the same as the JSON ``gpusched whatif --json`` prints.
    """

    def __init__(self, raw: Dict[str, Any]) -> None:
        self.raw = raw

    @property
    def summary(self) -> "pd.DataFrame":
        import pandas as pd

        cols = ["profile", "bound", "pending", "placed", "converted", "gpu_alloc_pct_before", "gpu_alloc_pct",
                "gpu_memory_alloc_pct", "gpus_busy", "frag_pct", "frag_ratio_pct", "kube_reasons", "same_reason"]
        return pd.DataFrame([{c: r[c] for c in cols} for r in self.raw["rows"]], columns=cols)

    @property
    def nodes(self) -> "pd.DataFrame":
        """With ``explain=True``: one row per (profile, pending pod, node) at the pod's last try:
        ``feasible``, ``filter`` and ``reasons`` (why a node was rejected), ``total``, and per score
        plugin ``raw:<plugin>`` and ``score:<plugin>`` (normalised, before its weight)."""
        import pandas as pd

        rows = []
        for r in self.raw["rows"]:
            for p in r["pods"]:
                for n in p.get("nodes", []):
                    row = {"profile": r["profile"], "pod": p["pod"], "node": n["node"], "feasible": n["feasible"],
                           "filter": n["filter"], "reasons": "; ".join(n["reasons"]), "total": n["total"]}
                    for s in n["scores"]:
                        row["raw:" + s["plugin"]] = s["raw"]
                        row["score:" + s["plugin"]] = s["normalized"]
                    rows.append(row)
        return pd.DataFrame(rows)

    @property
    def pods(self) -> "pd.DataFrame":
        import pandas as pd

        cols = ["profile", "pod", "priority", "placed", "node", "placement", "reason", "kube_reason"]
        rows = [{"profile": r["profile"], "kube_reason": "", **p} for r in self.raw["rows"] for p in r["pods"]]
        return pd.DataFrame(rows, columns=cols)

    def __repr__(self) -> str:
        parts = [f"{r['profile']}: {r['placed']}/{r['pending']}" for r in self.raw["rows"]]
        return f"WhatIfResult({', '.join(parts)})"


def whatif(
    nodes: PathLike,
    pods: PathLike,
    profiles: Union[str, Iterable[str]] = DEFAULT_PROFILES,
    *,
    seed: int = 42,
    explain: bool = False,
    as_gpu_mem: bool = False,
    gpu_mem_default: Optional[str] = None,
    gpu_mem_by_image: Optional[Mapping[str, str]] = None,
    events: Optional[PathLike] = None,
) -> WhatIfResult:
    """Schedules a snapshot's pending pods under each profile, as ``gpusched whatif`` does.

    ``nodes``: ``kubectl get nodes -o json``; ``pods``: ``kubectl get pods -A -o json``. Bound
    pods keep their nodes; pending pods are tried oldest first under each profile (built-in names
    or profile JSON files; a comma-separated string works too). A pod no node could ever hold is
    reported pending with the reason, not refused. ``explain=True`` adds each pending pod's
    per-node filter and score breakdown at its last try (``WhatIfResult.nodes``).
    ``as_gpu_mem=True`` asks pods wanting one whole ``nvidia.com/gpu`` for GPU memory only, as
    gpushare pods: their annotation ``gpusched.io/gpu-memory``, else ``gpu_mem_by_image[image]``
    (their first container's image, as written or without its tag), else ``gpu_mem_default``
    (quantities such as ``"8Gi"``); the summary's ``converted`` counts them. ``events``:
    ``kubectl get events -A -o json`` of the same cluster: each pending pod's latest
    FailedScheduling message goes in ``pods.kube_reason``, and the summary's ``same_reason`` counts
    the pods this profile leaves pending with the same text (of ``kube_reasons`` that have one).
    Raises a GpuschedError subclass on bad input (naming the file, line and field).
    """
    if isinstance(profiles, str):
        names: List[str] = [p for p in profiles.split(",") if p]
    else:
        names = [os.fspath(p) for p in profiles]
    if not as_gpu_mem and (gpu_mem_default is not None or gpu_mem_by_image):
        raise ValueError("gpu_mem_default and gpu_mem_by_image apply with as_gpu_mem=True only")
    text = _core.whatif_json(os.fspath(nodes), os.fspath(pods), names, check_seed(seed), bool(explain), bool(as_gpu_mem),
                             gpu_mem_default or "", dict(gpu_mem_by_image or {}), os.fspath(events) if events else "")
    return WhatIfResult(json.loads(text))
