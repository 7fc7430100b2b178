"""Scheduling plugins written in Python.

A plugin is a class (instantiated once per run, with the profile's ``args`` as keyword
arguments), an object (deep-copied for each run, so runs never share state) or a function, with
any of these methods:

- ``filter(job, nodes) -> bool array``: which candidate nodes the task may use;
- ``score(job, nodes) -> float array``: how good each candidate is (``normalize = "min-max"``,
  the default, maps them onto 0..100; ``"none"`` means they already lie in 0..100);
- ``queue_key(job) -> number or tuple of numbers``: the pending queue's order (lowest first;
  ties by arrival), computed once per job;
- ``place(job, nodes) -> node | None | (node, [gpu, ...])``: the whole decision: a cluster node
  index from ``nodes.index``, ``None`` to wait, or a node and the GPUs to use there.

``job`` is a :class:`gpusched._core.JobInfo`; ``nodes`` a :class:`gpusched._core.NodeView`:
read-only NumPy arrays over every candidate node (those the built-in filters accepted), so a
numpy policy makes one Python call per decision, not one per node; ``nodes.cluster()`` is the
same view of every node. Optional ``job_started(job, nodes)`` (a node index per task) and
``job_stopped(job)`` methods see every start and stop.

Example::

    import numpy as np
    import gpusched

    @gpusched.plugin("py-best-fit")
    class BestFit:
        def score(self, job, nodes):
            cpu = nodes.cpu_free_milli / nodes.cpu_total_milli.max()
            gpu = nodes.gpu_milli_free / max(1, (nodes.gpus_total * 1000).max())
            return -(cpu + gpu)          # least free capacity left wins

    # best-fit's filters and GPU choice, its score replaced by ours
    profile = gpusched.Profile("mine", extends="best-fit", replace=("score",)).score("py-best-fit")

Registrations belong to this process: every run started from it (``gpusched.run``, sweeps on
threads, the ``gpusched`` command through :func:`gpusched.cli.main`) can name them. Sweeps on
other processes or Dask workers ship them with each task (:func:`registrations`,
:func:`ensure_registered`). An exception raised in a plugin stops the run with
:class:`gpusched.PluginError` naming the plugin and the job, with the Python traceback.
"""

from __future__ import annotations

import copy
import inspect
import json
import threading
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple, TypeVar, Union

from . import _core

__all__ = [
    "HOOKS",
    "Registration",
    "ensure_registered",
    "plugin",
    "register_plugin",
    "registered_plugins",
    "registrations",
    "unregister_plugin",
]

#: The methods a Python plugin may have, in the order the registry lists them.
HOOKS = ("filter", "score", "queue_sort", "place")
_METHOD_FOR_HOOK = {"filter": "filter", "score": "score", "queue_sort": "queue_key", "place": "place"}

T = TypeVar("T")


class Registration(NamedTuple):
    """One Python plugin as registered: enough to register it again in another process."""

    name: str
    obj: Any
    hooks: Tuple[str, ...]
    description: str
    normalize: str


_lock = threading.Lock()
_registered: Dict[str, Registration] = {}


def _is_class(obj: Any) -> bool:
    return inspect.isclass(obj)


def _hooks_of(obj: Any, hook: Optional[str]) -> Tuple[str, ...]:
    if hook is not None:
        if hook not in HOOKS:
            raise ValueError(f"unknown hook {hook!r}; Python plugins implement {', '.join(HOOKS)}")
        if callable(obj) and not _is_class(obj) and not hasattr(obj, _METHOD_FOR_HOOK[hook]):
            return (hook,)
        if not hasattr(obj, _METHOD_FOR_HOOK[hook]):
            raise TypeError(f"hook {hook!r} needs a {_METHOD_FOR_HOOK[hook]}() method")
        return (hook,)
    found = tuple(h for h in HOOKS if callable(getattr(obj, _METHOD_FOR_HOOK[h], None)))
    if not found:
        raise TypeError(
            f"{obj!r} has none of the plugin methods filter(job, nodes), score(job, nodes), queue_key(job) or "
            "place(job, nodes); for a plain function say which hook it is: plugin(name, hook='score')"
        )
    return found


class _FunctionPlugin:
    """Adapts a plain function to the method the hook calls."""

    def __init__(self, fn: Callable[..., Any], hook: str) -> None:
        setattr(self, _METHOD_FOR_HOOK[hook], fn)


def _args_of(obj: Any) -> List[Tuple[str, str, str, Any]]:
    """The profile arguments a plugin class takes: its __init__'s keyword parameters with defaults."""
    if not _is_class(obj):
        return []
    try:
        sig = inspect.signature(obj.__init__)
    except (TypeError, ValueError):
        return []
    out = []
    for p in list(sig.parameters.values())[1:]:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD) or p.name == "seed":
            continue
        if p.default is inspect.Parameter.empty:
            raise TypeError(
                f"plugin class {obj.__name__}: __init__ argument {p.name!r} needs a default (profiles may leave it out)"
            )
        try:
            json.dumps(p.default, allow_nan=False)
        except (TypeError, ValueError):
            raise TypeError(
                f"plugin class {obj.__name__}: the default of {p.name!r} must be JSON (a number, string, list, dict, "
                f"bool or None), got {type(p.default).__name__}"
            ) from None
        kind = {bool: "boolean", int: "number", float: "number", str: "string", list: "array", dict: "object"}.get(
            type(p.default), "any"
        )
        out.append((p.name, kind, f"{obj.__name__}({p.name}=...)", p.default))
    return out


def _factory(obj: Any, hooks: Tuple[str, ...]) -> Callable[[Dict[str, Any], int], Any]:
    """factory(args, seed) -> the object one run uses."""
    if _is_class(obj):
        takes_seed = False
        try:
            takes_seed = "seed" in inspect.signature(obj.__init__).parameters
        except (TypeError, ValueError):
            pass

        def build(args: Dict[str, Any], seed: int) -> Any:
            return obj(**args, seed=seed) if takes_seed else obj(**args)

        return build
    if callable(obj) and len(hooks) == 1 and not hasattr(obj, _METHOD_FOR_HOOK[hooks[0]]):
        wrapped = _FunctionPlugin(obj, hooks[0])
        return lambda args, seed: wrapped

    def copy_per_run(args: Dict[str, Any], seed: int) -> Any:
        # Each run gets its own copy, so state one run leaves in the object never changes
        # another's decisions (runs stay reproducible, whatever ran before or beside them).
        try:
            return copy.deepcopy(obj)
        except Exception as e:
            raise TypeError(
                f"plugin object {obj!r} cannot be copied for a run ({e}); register its class instead, "
                "so each run builds its own"
            ) from e

    return copy_per_run


def _register(reg: Registration) -> None:
    hooks = tuple(reg.hooks)
    _core.register_python_plugin(
        reg.name,
        list(hooks),
        _factory(reg.obj, hooks),
        reg.description,
        _args_of(reg.obj),
        reg.normalize,
    )


def register_plugin(
    name: str,
    obj: Any,
    *,
    hook: Optional[str] = None,
    description: Optional[str] = None,
    normalize: Optional[str] = None,
    replace: bool = False,
) -> Any:
    """Registers ``obj`` (a class, an object, or a function with ``hook``) as plugin ``name`` for
    this process; profiles then name it like a built-in. Returns ``obj``.

    ``hook`` is needed only for a plain function ("filter", "score", "queue_sort" or "place");
    otherwise the hooks are the methods the object has. ``normalize`` (scores): "min-max"
    (default, or the object's ``normalize`` attribute) or "none". ``description`` defaults to
    the object's docstring's first line. Registering a taken name raises ValueError unless
    ``replace``; built-in names are refused.
    """
    if not isinstance(name, str) or not name:
        raise ValueError("a plugin needs a non-empty name")
    hooks = _hooks_of(obj, hook)
    if description is None:
        doc = inspect.getdoc(obj) or ""
        description = doc.strip().splitlines()[0] if doc.strip() else f"Python plugin {name}"
    norm = normalize if normalize is not None else getattr(obj, "normalize", "min-max")
    if not isinstance(norm, str) or norm not in ("min-max", "none"):
        raise ValueError(f'normalize must be "min-max" or "none", got {norm!r}')
    reg = Registration(name, obj, hooks, description, norm)
    with _lock:
        if name in _registered and not replace:
            raise ValueError(f"a plugin named {name!r} is registered already; pass replace=True to replace it")
        _register(reg)
        _registered[name] = reg
    return obj


def plugin(
    name: Optional[str] = None,
    *,
    hook: Optional[str] = None,
    description: Optional[str] = None,
    normalize: Optional[str] = None,
    replace: bool = True,
) -> Callable[[T], T]:
    """Decorator form of :func:`register_plugin` (``name`` defaults to the class or function
    name). Re-running the defining cell of a notebook replaces the plugin (``replace=True``)."""

    def decorate(obj: T) -> T:
        register_plugin(
            name or getattr(obj, "__name__", ""),
            obj,
            hook=hook,
            description=description,
            normalize=normalize,
            replace=replace,
        )
        return obj

    return decorate


def unregister_plugin(name: str) -> bool:
    """Removes a Python plugin; False when there was none."""
    with _lock:
        _registered.pop(name, None)
        return bool(_core.unregister_python_plugin(name))


def registered_plugins() -> Dict[str, Any]:
    """The Python plugins registered in this process: {name: object as registered}."""
    with _lock:
        return {name: reg.obj for name, reg in _registered.items()}


def registrations() -> List[Registration]:
    """Every Python registration, to send to another process (picklable with cloudpickle, as
    Dask does; plain pickle works for plugins defined in importable modules)."""
    with _lock:
        return list(_registered.values())


def ensure_registered(specs: Sequence[Union[Registration, Tuple[Any, ...]]]) -> None:
    """Registers, in this process, plugins sent from another (see :func:`registrations`).
    Idempotent: a name registered already with the same object is left alone; another object
    under that name replaces it."""
    for spec in specs:
        reg = spec if isinstance(spec, Registration) else Registration(*spec)
        with _lock:
            current = _registered.get(reg.name)
            if current is not None and current.obj is reg.obj:
                continue
            _register(reg)
            _registered[reg.name] = reg
