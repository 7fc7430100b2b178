"""The one documented seed range, checked before a seed reaches the C++ core.

A seed is a whole number 0..2**64-1 everywhere (CLI ``--seed``/``--seeds``, the scenario's
``seed``, Python ``seed=``/``seeds=``). Outside that range: ``ScenarioError``
``gpusched.scenario_error.211`` (out of range); not a whole number: ``gpusched.scenario_error.203``.
Never wrapped, clamped or truncated, so distinct seeds never collide.
"""

from __future__ import annotations

import operator
from typing import Any, Optional

from . import _core

#: The largest seed: seeds are unsigned 64-bit integers.
MAX_SEED = 2**64 - 1

_OUT_OF_RANGE = 211   # ErrorCode::kScenarioOutOfRange
_BAD_VALUE = 203      # ErrorCode::kScenarioBadValue


def _error(code: int, field: str, detail: str) -> "_core.ScenarioError":
    """A ScenarioError shaped like the ones the C++ core raises (id, code, category, field, detail)."""
    ident = _core.error_id(code)
    e = _core.ScenarioError(f"[{ident}] field '{field}': {detail}")
    e.id = ident
    e.code = code
    e.category = "scenario_error"
    e.file = None
    e.line = None
    e.field = field
    e.detail = detail
    return e


def check_seed(seed: Any, field: str = "seed") -> int:
    """``seed`` as an int in 0..2**64-1, or ScenarioError naming ``field``.

    Accepts ints and integer-like objects (numpy integers); rejects bools, floats and text.
    """
    if isinstance(seed, bool):
        raise _error(_BAD_VALUE, field, f"{seed!r} is not a seed: a whole number between 0 and {MAX_SEED}")
    try:
        value = operator.index(seed)
    except TypeError:
        raise _error(_BAD_VALUE, field, f"{seed!r} is not a seed: a whole number between 0 and {MAX_SEED}") from None
    if not 0 <= value <= MAX_SEED:
        raise _error(_OUT_OF_RANGE, field, f"{value} is out of range: must be between 0 and {MAX_SEED}")
    return value


def check_optional_seed(seed: Optional[Any], field: str = "seed") -> Optional[int]:
    """None stays None (the scenario's own seed); anything else goes through check_seed()."""
    return None if seed is None else check_seed(seed, field)
