"""Type stubs for gpusched._core, the compiled core of gpusched (use the `gpusched` package)."""

import os
from typing import Tuple, Any, Callable, Dict, List, Optional, Union

_PathLike = Union[str, os.PathLike[str]]

version: str

class GpuschedError(Exception):
    """Bad input or configuration, with a stable id and a location."""

    id: Optional[str]
    """Stable id, e.g. "gpusched.trace_error.102"."""
    code: Optional[int]
    category: Optional[str]
    file: Optional[str]
    """The file (or label) the bad input came from; None when unknown."""
    line: Optional[int]
    """1-based line; None when unknown."""
    field: Optional[str]
    """Column name, JSON path or argument name; None when unknown."""
    detail: Optional[str]
    """The message without id and location."""

class TraceError(GpuschedError): ...
class ScenarioError(GpuschedError): ...
class ProfileError(GpuschedError): ...
class CatalogError(GpuschedError): ...
class QuantityError(GpuschedError): ...
class OutputError(GpuschedError): ...
class PluginError(GpuschedError):
    """A Python plugin raised (plugin_error.701) or returned something invalid (702)."""

class JobInfo:
    """What a Python plugin sees of the job being placed (read-only; times in seconds)."""

    id: int
    name: str
    queue: str
    priority: int
    tasks: int
    min_available: int
    task_index: int
    cpu_milli: int
    memory_mib: int
    gpu_mode: str
    gpu_profile: str
    gpus: int
    gpu_milli: int
    gpu_memory_mib: int
    tpu_chips: int
    submit_s: float
    duration_s: float
    now_s: float

class NodeView:
    """The candidate nodes of one decision, as read-only numpy arrays (one row per node)."""

    index: Any
    cpu_free_milli: Any
    cpu_total_milli: Any
    memory_free_mib: Any
    memory_total_mib: Any
    gpus_total: Any
    gpus_free: Any
    gpu_milli_free: Any
    gpu_milli_free_per_gpu: Any
    gpu_memory_free_mib: Any
    gpu_memory_total_mib: Any
    gpu_mask: Any
    model: Any
    model_names: Tuple[str, ...]
    names: Tuple[str, ...]
    max_cpu_milli: int
    max_memory_mib: int
    max_gpu_milli: int
    label_keys: List[str]
    def __len__(self) -> int: ...
    def label(self, key: str) -> Any: ...
    def label_values(self, key: str) -> List[str]: ...
    def cluster(self) -> "NodeView": ...

def register_python_plugin(
    name: str,
    hooks: List[str],
    factory: Callable[[Dict[str, Any], int], Any],
    description: str = "",
    args: List[Tuple[str, str, str, Any]] = ...,
    normalize: str = "min-max",
) -> None: ...
def unregister_python_plugin(name: str) -> bool: ...

class RunResult:
    @property
    def stamp(self) -> Dict[str, Any]: ...
    @property
    def profile_name(self) -> str: ...
    def summary(self) -> Dict[str, Any]: ...
    def summary_json(self) -> str: ...
    def timeseries(self) -> Dict[str, Any]: ...
    def fragmentation(self) -> Dict[str, Any]: ...
    def jobs(self) -> Dict[str, Any]: ...
    def event_log(self) -> List[str]: ...
    def placements(self) -> Dict[str, Any]: ...
    def claims(self) -> Dict[str, Any]: ...
    def write_outputs(self, dir: _PathLike) -> List[os.PathLike[str]]: ...
    def format_summary(self) -> str: ...

def error_id(code: int) -> str: ...
def gpu_models() -> List[Dict[str, Any]]: ...
def discover(
    nvidia_smi_xml: str,
    topo: str,
    mig_lgip: str = ...,
    name: str = ...,
    cpu: str = ...,
    memory: str = ...,
    gpu_models: str = ...,
    mig_dynamic: bool = ...,
) -> Dict[str, Any]: ...
def mig_fits(model: str, profiles: List[str]) -> bool: ...
def mig_layouts(model: str) -> List[List[Tuple[str, int]]]: ...
def tpu_hosts(generation: str, topology: str, chips_per_host: int = ...) -> int: ...
def tpu_generations() -> List[Dict[str, Any]]: ...
def plugins() -> List[Dict[str, Any]]: ...
def profiles() -> Dict[str, Dict[str, Any]]: ...
def check_profile(profile_json: str, source: str = "<profile>") -> Dict[str, Any]: ...
def run_json(
    text: str,
    source: str = "<string>",
    base_dir: _PathLike = ".",
    seed: Optional[int] = None,
    progress: Optional[Callable[[float], Any]] = None,
    exact_scan: bool = False,
) -> RunResult: ...
def run_file(
    path: _PathLike,
    seed: Optional[int] = None,
    progress: Optional[Callable[[float], Any]] = None,
    exact_scan: bool = False,
) -> RunResult: ...
def run_demo(
    seed: Optional[int] = None, progress: Optional[Callable[[float], Any]] = None, exact_scan: bool = False
) -> RunResult: ...
def demo_scenario_text() -> str: ...
def whatif_json(nodes: _PathLike, pods: _PathLike, profiles: List[str], seed: int = 42, explain: bool = False,
                as_gpu_mem: bool = False, gpu_mem_default: str = "", gpu_mem_by_image: Dict[str, str] = ...) -> str: ...
def validate_json(text: str, source: str = "<string>", base_dir: _PathLike = ".") -> Dict[str, Any]: ...
def validate_file(path: _PathLike) -> Dict[str, Any]: ...
def read_json(what: Union[_PathLike, bytes], source: str = "") -> Any: ...
def cli_main(args: List[str]) -> int: ...

def fgd_policy_names() -> List[str]: ...
def tiresias_compat_policies() -> List[str]: ...
def tiresias_compat(
    trace: str, cluster: str, policies: List[str], starvation_k: float = 0.0, queue_limits: List[int] = ...
) -> Dict[str, Any]: ...
def tiresias_engine_policies() -> List[str]: ...
def tiresias_run(
    trace: str,
    cluster: str,
    policy: str,
    thresholds: List[float] = ...,
    starvation_k: float = 0.0,
    within_queue: str = "running-first",
    quantum: float = 3600.0,
    distribution: str = "",
    placement: str = "binpack",
    restart_overhead_s: float = 0.0,
) -> RunResult: ...
def parse_seeds(text: str) -> List[int]: ...
def parse_fgd_policies(text: str) -> List[str]: ...
def fgd_workload_names() -> List[str]: ...
def parse_fgd_workloads(text: str) -> List[str]: ...
def fgd_experiment(
    traces: _PathLike,
    workloads: List[str],
    policies: List[str],
    seeds: List[int],
    threads: int = 0,
    max_arrived_pct: float = 130.0,
    out: Optional[_PathLike] = None,
    progress: Optional[Callable[[int, int], Any]] = None,
) -> Dict[str, Any]: ...

class FgdInputs:
    """The FGD experiment's node and pod lists, read once, shared read-only by runs."""

    def __init__(self, traces: _PathLike, workload: str = "default") -> None: ...
    @property
    def workload(self) -> str: ...
    @property
    def pod_source(self) -> str: ...
    @property
    def node_source(self) -> str: ...
    @property
    def nodes(self) -> int: ...
    @property
    def gpus(self) -> int: ...
    @property
    def trace_pods(self) -> int: ...

def fgd_prepare(
    traces: _PathLike, workload: str, policies: List[str], seeds: List[int], max_arrived_pct: float = 130.0
) -> FgdInputs: ...
def fgd_run(inputs: FgdInputs, policy: str, seed: int, max_arrived_pct: float = 130.0) -> Dict[str, Any]: ...
def fgd_assemble(
    inputs: List[FgdInputs],
    traces: _PathLike,
    workloads: List[str],
    policies: List[str],
    seeds: List[int],
    max_arrived_pct: float,
    runs: List[Dict[str, Any]],
    wall_s: float,
    threads: int,
    out: Optional[_PathLike] = None,
) -> Dict[str, Any]: ...
