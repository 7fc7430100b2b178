"""gpusched: simulate accelerator (GPU) clusters and scheduling policies.

The simulator is C++ (``gpusched._core``); this package adds pandas results, plots, scenario
builders and the command line.

Example::

    import gpusched
    result = gpusched.run("examples/small.json")
    print(result.summary["jobs"]["completed"], result.jobs.head())
    result.write("out/small")

    from gpusched import Cluster, Profile, Scenario, synthetic
    cluster = Cluster().node_group("a100", count=8, cpu=128, memory="1Ti", gpus=8, gpu_model="A100-80GB")
    sc = Scenario(cluster, Profile("mine", extends="binpack"), synthetic(jobs=500, load=0.9), seed=1)
    print(gpusched.run(sc).summary["wait"])
"""

from __future__ import annotations

from ._core import (
    CatalogError,
    GpuschedError,
    JobInfo,
    NodeView,
    OutputError,
    PluginError,
    ProfileError,
    QuantityError,
    ScenarioError,
    TraceError,
)
from ._core import version as __version__
from .api import (
    ProgressFn,
    ScenarioLike,
    demo_scenario,
    discover,
    gpu_models,
    plugins,
    profiles,
    run,
    validate,
)
from .policy import plugin, register_plugin, registered_plugins, unregister_plugin
from .builders import Cluster, Profile, Scenario, job, jobs, synthetic, trace
from .result import Result
from .sweep import SweepResult, sweep
from ._whatif import WhatIfResult, whatif
from . import mig, policy, tpu

#: Submodules loaded on first use (they import pandas / matplotlib): ``gpusched.experiments``,
#: ``gpusched.plotting``. ``import gpusched`` itself imports neither pandas nor matplotlib.
_LAZY_SUBMODULES = ("experiments", "plotting")


def __getattr__(name: str) -> object:
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    return sorted(set(globals()) | set(_LAZY_SUBMODULES))

__all__ = [
    "CatalogError",
    "Cluster",
    "GpuschedError",
    "OutputError",
    "PluginError",
    "JobInfo",
    "NodeView",
    "plugin",
    "register_plugin",
    "registered_plugins",
    "unregister_plugin",
    "Profile",
    "ProfileError",
    "ProgressFn",
    "QuantityError",
    "Result",
    "Scenario",
    "SweepResult",
    "ScenarioError",
    "ScenarioLike",
    "TraceError",
    "__version__",
    "demo_scenario",
    "discover",
    "experiments",
    "plotting",
    "gpu_models",
    "plugins",
    "profiles",
    "run",
    "job",
    "mig",
    "jobs",
    "sweep",
    "synthetic",
    "trace",
    "tpu",
    "validate",
    "WhatIfResult",
    "whatif",
]
