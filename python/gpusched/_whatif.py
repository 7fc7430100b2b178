"""What-if on a Kubernetes cluster snapshot: ``gpusched.whatif()`` (``gpusched whatif``)."""

from __future__ import annotations

import json
import os
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Union

from . import _core
from ._seeds import check_seed

if TYPE_CHECKING:  # pandas is imported on first use: ``import gpusched`` stays light
    import pandas as pd

PathLike = Union[str, "os.PathLike[str]"]

DEFAULT_PROFILES = ("kube-default", "gpushare-binpack", "fgd")


class WhatIfResult:
    """What each profile would do with a snapshot's pending pods.

    ``summary``: one row per profile (``profile``, ``bound``, ``pending``, ``placed``,
    ``gpu_alloc_pct_before``, ``gpu_alloc_pct``, ``frag_pct``, ``frag_ratio_pct``).
    ``pods``: one row per (profile, pending pod), in the order the pods were tried (``profile``,
    ``pod``, ``priority``, ``placed``, ``node``, ``placement``, ``reason``: kube-scheduler's words
    for a pod that stays pending). ``raw``: the same as the JSON ``gpusched whatif --json`` prints.
    """

    def __init__(self, raw: Dict[str, Any]) -> None:
        self.raw = raw

    @property
    def summary(self) -> "pd.DataFrame":
        import pandas as pd

        cols = ["profile", "bound", "pending", "placed", "gpu_alloc_pct_before", "gpu_alloc_pct", "frag_pct", "frag_ratio_pct"]
        return pd.DataFrame([{c: r[c] for c in cols} for r in self.raw["rows"]], columns=cols)

    @property
    def pods(self) -> "pd.DataFrame":
        import pandas as pd

        cols = ["profile", "pod", "priority", "placed", "node", "placement", "reason"]
        rows = [dict(profile=r["profile"], **p) for r in self.raw["rows"] for p in r["pods"]]
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
) -> WhatIfResult:
    """Schedules a snapshot's pending pods under each profile, as ``gpusched whatif`` does.

    ``nodes``: ``kubectl get nodes -o json``; ``pods``: ``kubectl get pods -A -o json``. Bound
    pods keep their nodes; pending pods are tried oldest first under each profile (built-in names
    or profile JSON files; a comma-separated string works too). A pod no node could ever hold is
    reported pending with the reason, not refused. Raises a GpuschedError subclass on bad input
    (naming the file, line and field).
    """
    if isinstance(profiles, str):
        names: List[str] = [p for p in profiles.split(",") if p]
    else:
        names = [os.fspath(p) for p in profiles]
    text = _core.whatif_json(os.fspath(nodes), os.fspath(pods), names, check_seed(seed))
    return WhatIfResult(json.loads(text))
