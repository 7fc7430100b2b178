"""MIG (Multi-Instance GPU) placement rules, from the GPU catalog's data.

Example::

    from gpusched import mig
    mig.fits("A100-80GB", ["4g.40gb", "3g.40gb"])      # True
    mig.fits("A100-80GB", ["3g.40gb", "3g.40gb", "1g.10gb"])   # False
    len(mig.layouts("A30"))                             # every maximal layout of one A30
"""

from __future__ import annotations

from typing import Iterable, List, Tuple

from . import _core

__all__ = ["fits", "layouts"]


def fits(model: str, profiles: Iterable[str]) -> bool:
    """True when GPU instances of all ``profiles`` (NVIDIA names such as ``"3g.40gb"``, repeats
    allowed) can exist together on one GPU of ``model``: legal start slices, no overlap, compute
    slices and per-profile counts within the GPU's limits. Raises ``gpusched.CatalogError`` for an
    unknown model, a model without MIG, or a profile that the model does not have."""
    return _core.mig_fits(model, list(profiles))


def layouts(model: str) -> List[List[Tuple[str, int]]]:
    """Every maximal legal layout of one empty GPU of ``model`` (no further instance fits), each a
    list of ``(profile, start memory slice)`` sorted by start."""
    return _core.mig_layouts(model)
