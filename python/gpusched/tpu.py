"""TPU generations and slice topologies, from the catalog's data.

Example::

    from gpusched import tpu
    tpu.hosts("v4", "2x2x4")          # 4
    tpu.hosts("v5e", "4x4", chips_per_host=4)   # 4 (GKE's 4-chip v5e hosts)
    tpu.hosts("v4", "2x2x3")          # ValueError: TPU v4 has no slice topology "2x2x3" ...
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
    ``generation`` ("v4", "v5e", "v5p"); ``chips_per_host`` 0 means the generation's default
    (4 for v4 and v5p, 8 for v5e). Raises :class:`TopologyError` (a ValueError) for a shape the
    generation does not offer."""
    try:
        return _core.tpu_hosts(generation, topology, chips_per_host)
    except _core.CatalogError as e:
        err = TopologyError(str(e))
        for attr in ("id", "code", "category", "file", "line", "field", "detail"):
            if hasattr(e, attr):
                setattr(err, attr, getattr(e, attr))
        raise err from None


def generations() -> List[Dict[str, Any]]:
    """The built-in TPU generations with their host sizes and allowed shapes."""
    return _core.tpu_generations()
