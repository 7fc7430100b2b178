"""TPU generations and slice topologies, from the catalog's data.

Example::

    from gpusched import tpu
    tpu.hosts("v4", "2x2x4")          # 4
    tpu.hosts("v5e", "4x4")           # 4 (GKE runs multi-host v5e on 4-chip ct5lp-hightpu-4t VMs)
    tpu.hosts("v5e", "2x4")           # 1 (one 8-chip ct5lp-hightpu-8t VM)
    tpu.hosts("v5e", "4x4", chips_per_host=8)   # ValueError: ... ct5lp-hightpu-8t hosts ... do not serve a 4x4 slice
    tpu.hosts("v4", "2x2x3")          # ValueError: TPU v4 has no slice topology "2x2x3" ...

The generations, their topologies and GKE machine types are data (libgpusched/data/tpu_generations.json,
sources per figure); docs/tpu.md tells how slices become nodes.
"""

from __future__ import annotations

from typing import Any, Dict, List

from . import _core

__all__ = ["TopologyError", "generations", "hosts"]


class TopologyError(_core.CatalogError, ValueError):
    """A TPU generation or slice shape that does not exist. A ValueError, and a
    gpusched.CatalogError carrying the stable id."""


def hosts(generation: str, topology: str, chips_per_host: int = 0) -> int:
    """Hosts (VMs / Kubernetes nodes) a slice of ``topology`` ("AxB" or "AxBxC") spans on
    ``generation`` ("v4", "v5e", "v5p", "v6e", "tpu7x"); ``chips_per_host`` 0 means the machine
    type with the most chips that serves the topology (v5e/v6e: 8 for 2x4, 4 for multi-host
    slices, 1 for 1x1). Raises :class:`TopologyError` (a ValueError) for a shape the generation
    does not offer, or a host size whose machine type does not serve it."""
    try:
        return _core.tpu_hosts(generation, topology, chips_per_host)
    except _core.CatalogError as e:
        err = TopologyError(str(e))
        for attr in ("id", "code", "category", "file", "line", "field", "detail"):
            if hasattr(e, attr):
                setattr(err, attr, getattr(e, attr))
        raise err from None


def generations() -> List[Dict[str, Any]]:
    """The built-in TPU generations with their host sizes (chips per GKE machine type) and allowed shapes."""
    return _core.tpu_generations()
