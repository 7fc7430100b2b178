"""Top-level functions: run and validate scenarios, list what the library knows."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, NamedTuple, Optional, Union

from . import _core
from ._seeds import check_optional_seed
from .result import Result

if TYPE_CHECKING:
    from .builders import Scenario

#: ``progress(fraction)`` with fraction in [0, 1]; called now and then during a run.
ProgressFn = Callable[[float], Any]
#: A scenario dict, a builders.Scenario, a path to a scenario file, JSON text, or "demo".
ScenarioLike = Union[Mapping[str, Any], "Scenario", str, "os.PathLike[str]"]
#: A filesystem path.
PathLike = Union[str, "os.PathLike[str]"]


def _json_default(value: Any) -> Any:
    """Lets numpy scalars and arrays, and paths, appear in scenario dicts."""
    if hasattr(value, "tolist"):
        return value.tolist()
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    raise TypeError(f"{type(value).__name__} is not JSON serialisable")


def _to_json_text(doc: Mapping[str, Any]) -> str:
    return json.dumps(doc, default=_json_default)


class _Input(NamedTuple):
    """How to load a scenario: kind "demo", "file" (path) or "json" (text, source, base_dir)."""

    kind: str
    path: Path = Path()
    text: str = ""
    source: str = ""
    base_dir: Path = Path()


def _resolve(scenario: ScenarioLike, source: Optional[str], base_dir: Optional[PathLike]) -> _Input:
    if hasattr(scenario, "to_dict") and not isinstance(scenario, Mapping):
        scenario = scenario.to_dict()
    base = Path(base_dir) if base_dir is not None else Path.cwd()
    if isinstance(scenario, Mapping):
        return _Input("json", text=_to_json_text(scenario), source=source or "<python>", base_dir=base)
    if isinstance(scenario, str) and scenario == "demo":
        return _Input("demo")
    if isinstance(scenario, str) and scenario.lstrip().startswith("{"):
        return _Input("json", text=scenario, source=source or "<string>", base_dir=base)
    if isinstance(scenario, (str, os.PathLike)):
        return _Input("file", path=Path(scenario))
    raise TypeError(
        "scenario must be a dict, a gpusched.Scenario, a path to a scenario file, JSON text or 'demo'; "
        f"got {type(scenario).__name__}"
    )


def run(
    scenario: ScenarioLike,
    seed: Optional[int] = None,
    progress: Optional[ProgressFn] = None,
    *,
    source: Optional[str] = None,
    base_dir: Optional[PathLike] = None,
    exact_scan: bool = False,
) -> Result:
    """Runs one simulation and returns its Result.

    ``scenario``: a dict (schema_version 1, see schemas/scenario.schema.json), a
    ``gpusched.Scenario``, a path to a scenario file, JSON text, or ``"demo"`` (1,000 nodes,
    20,000 jobs). ``seed`` overrides the scenario's seed. ``progress(fraction)`` is called now
    and then (from the calling thread). ``source`` labels a dict scenario in errors and outputs;
    relative trace paths in a dict resolve from ``base_dir`` (default: the current folder).
    ``exact_scan=True`` makes the scheduler scan every node for every decision (no node index,
    as ``gpusched run --exact-scan``): the outputs are the same, only slower; for checking.

    The simulation runs with the GIL released, so threads can run several at once.
    Raises a GpuschedError subclass (ScenarioError, TraceError, ProfileError, ...) on bad input.
    """
    seed = check_optional_seed(seed)   # 0..2**64-1, else ScenarioError (never a pybind TypeError)
    how = _resolve(scenario, source, base_dir)
    if how.kind == "demo":
        raw = _core.run_demo(seed=seed, progress=progress, exact_scan=bool(exact_scan))
    elif how.kind == "file":
        raw = _core.run_file(how.path, seed=seed, progress=progress, exact_scan=bool(exact_scan))
    else:
        raw = _core.run_json(how.text, source=how.source, base_dir=how.base_dir, seed=seed, progress=progress,
                             exact_scan=bool(exact_scan))
    return Result(raw)


def validate(
    scenario: ScenarioLike,
    *,
    source: Optional[str] = None,
    base_dir: Optional[PathLike] = None,
) -> Dict[str, Any]:
    """Checks a scenario without running it, like ``gpusched validate``.

    Accepts what run() accepts; a path may also name a trace (.csv / .jsonl) or a profile file.
    Returns what was found, e.g. ``{"kind": "scenario", "name": "small", "nodes": 4, "gpus": 10,
    "profile": "binpack", "jobs": 10}``. Raises a GpuschedError subclass on bad input.
    """
    how = _resolve(scenario, source, base_dir)
    if how.kind == "demo":
        return _core.validate_json(_core.demo_scenario_text(), source="<built-in demo>", base_dir=Path.cwd())
    if how.kind == "file":
        return _core.validate_file(how.path)
    return _core.validate_json(how.text, source=how.source, base_dir=how.base_dir)


def demo_scenario() -> Dict[str, Any]:
    """The built-in demo scenario as a dict (edit it and pass it to run())."""
    doc: Dict[str, Any] = json.loads(_core.demo_scenario_text())
    return doc


def gpu_models() -> List[Dict[str, Any]]:
    """The built-in GPU catalog: name, aliases, vendor, memory_mib, sms, mig_capable, nvlink."""
    return _core.gpu_models()


def discover(
    nvidia_smi_xml: PathLike,
    topo: PathLike,
    *,
    mig_lgip: Optional[PathLike] = None,
    name: str = "node-0",
    cpu: Union[str, int, None] = None,
    memory: Union[str, int] = 0,
    gpu_models: Optional[PathLike] = None,
    mig_dynamic: bool = False,
) -> Dict[str, Any]:
    """A machine from its saved ``nvidia-smi`` output, like ``gpusched discover``.

    ``nvidia_smi_xml`` is ``nvidia-smi -q -x``, ``topo`` is ``nvidia-smi topo -m`` and
    ``mig_lgip`` (optional) is ``nvidia-smi mig -lgip``. Returns the node as the dict a scenario's
    ``cluster["nodes"]`` accepts (GPU model, NUMA layout, NVLink, MIG instances, labels).
    ``cpu`` defaults to the CPUs of the CPU Affinity column; ``memory`` (host memory, e.g. "2Ti")
    is not in nvidia-smi's output. ``gpu_models`` names a GPU catalog JSON for models the
    built-in catalog lacks. Raises TraceError naming the file, line and field.

    Example: ``node = gpusched.discover("q.xml", "topo.txt", name="dgx-01", memory="2Ti")``
    """
    return _core.discover(
        os.fspath(nvidia_smi_xml),
        os.fspath(topo),
        mig_lgip=os.fspath(mig_lgip) if mig_lgip is not None else "",
        name=name,
        cpu="" if cpu is None else str(cpu),
        memory=str(memory),
        gpu_models=os.fspath(gpu_models) if gpu_models is not None else "",
        mig_dynamic=bool(mig_dynamic),
    )


def plugins() -> List[Dict[str, Any]]:
    """The scheduling plugins: name, hooks, description, args (name, type, description, default)."""
    return _core.plugins()


def profiles() -> Dict[str, Dict[str, Any]]:
    """The built-in profiles by name, each as the dict a scenario's "profile" may hold."""
    return _core.profiles()
