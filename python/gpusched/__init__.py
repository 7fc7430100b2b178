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
    OutputError,
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
    gpu_models,
    plugins,
    profiles,
    run,
    validate,
)
from .builders import Cluster, Profile, Scenario, job, jobs, synthetic, trace
from .result import Result
from . import experiments, mig, tpu

__all__ = [
    "CatalogError",
    "Cluster",
    "GpuschedError",
    "OutputError",
    "Profile",
    "ProfileError",
    "ProgressFn",
    "QuantityError",
    "Result",
    "Scenario",
    "ScenarioError",
    "ScenarioLike",
    "TraceError",
    "__version__",
    "demo_scenario",
    "experiments",
    "gpu_models",
    "plugins",
    "profiles",
    "run",
    "job",
    "mig",
    "jobs",
    "synthetic",
    "trace",
    "tpu",
    "validate",
]
