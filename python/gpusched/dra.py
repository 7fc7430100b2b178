"""Kubernetes Dynamic Resource Allocation (DRA): allocate ResourceClaims against ResourceSlices
and DeviceClasses the way kube-scheduler's DynamicResources plugin does (docs/dra.md).

Example::

    import json, gpusched.dra as dra
    listing = dra.slices("examples/devices.json")           # what NVIDIA's DRA driver would publish
    with open("slices.json", "w") as f:
        json.dump(listing, f)
    table = dra.allocate("slices.json", "examples/dra/claims.yaml")
    print(table[["claim", "node", "request", "device"]])
"""

from __future__ import annotations

import os
from typing import Any, Dict, List, Optional, Union

from . import _core

PathLike = Union[str, "os.PathLike[str]"]

__all__ = ["allocate", "allocate_raw", "slices"]


def allocate_raw(*paths: PathLike, node: Optional[str] = None) -> List[Dict[str, Any]]:
    """One dict per claim, in file order: ``{"claim", "node", "allocation"}`` (allocation as the
    claim's ``status.allocation`` would hold it) or ``{"claim", "pending"}`` with the reason.
    Bad input raises gpusched.ScenarioError naming the file, line and field."""
    if not paths:
        raise TypeError("allocate() needs at least one kubectl file")
    return _core.dra_allocate([os.fspath(p) for p in paths], node or "")


def allocate(*paths: PathLike, node: Optional[str] = None) -> "Any":
    """As :func:`allocate_raw`, as a pandas DataFrame with one row per allocated device (columns
    claim, node, request, driver, pool, device, admin_access, pending): a pending claim is one row
    whose ``pending`` column holds the reason and whose device columns are empty."""
    import pandas as pd

    rows: List[Dict[str, Any]] = []
    for c in allocate_raw(*paths, node=node):
        if "pending" in c:
            rows.append({"claim": c["claim"], "node": None, "request": None, "driver": None, "pool": None, "device": None,
                         "admin_access": None, "pending": c["pending"]})
            continue
        results = c["allocation"]["devices"]["results"]
        if not results:   # allocated, with no device (a claim that asks for none)
            rows.append({"claim": c["claim"], "node": c.get("node") or None, "request": None, "driver": None, "pool": None,
                         "device": None, "admin_access": None, "pending": None})
        for r in results:
            rows.append({"claim": c["claim"], "node": c.get("node") or None, "request": r["request"], "driver": r["driver"],
                         "pool": r["pool"], "device": r["device"], "admin_access": bool(r.get("adminAccess", False)),
                         "pending": None})
    return pd.DataFrame(rows, columns=["claim", "node", "request", "driver", "pool", "device", "admin_access", "pending"])


def slices(scenario: PathLike) -> Dict[str, Any]:
    """The ResourceSlices NVIDIA's DRA driver (Google's TPU driver for TPU hosts) would publish for
    the scenario's cluster, and their DeviceClasses, as a kubectl List (write it with json.dump and
    pass the file to allocate)."""
    return _core.dra_slices(os.fspath(scenario))
