#!/usr/bin/env python3
"""Write the "many request shapes" scenarios of BENCHMARKS.md (issue 14, narrowed retries; issue 18,
DRA claim jobs through the node index) into a scratch folder (never into the repository).

1,000 nodes of 8 A100-80GB, 64 CPUs and 512 GiB each, four GPUs per PCIe switch; 20,000 jobs arriving every 0.4 s on average (seeded), each asking 1-8 CPUs
and 1-64 GiB: about 1,500 distinct request shapes, and a queue that stays long, so the engine
retries waiting jobs on the nodes that gained capacity after every finish.

Written (default folder /tmp/gpusched-shapes, or --out), for each score (first-fit, best-fit,
kube: least-allocated + balanced-allocation) under node-resources-fit and dynamic-resources:

  dra-<score>.json     half the jobs with examples/dra's claim for two GPUs on one PCIe root,
                       the others 1, 1, 2 or 4 whole GPUs
  plain-<score>.json   the same jobs with the claim replaced by two whole GPUs

Usage:  python3 bench/scale/gen_shapes.py [--out DIR] [--seed 5]
Then:   gpusched run DIR/plain-first-fit.json --out OUT --quiet [--exact-scan]
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
SCORES = {
    "first-fit": [{"name": "first-fit"}],
    "best-fit": [{"name": "best-fit"}],
    "kube": [{"name": "least-allocated"}, {"name": "balanced-allocation"}],
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default="/tmp/gpusched-shapes")
    ap.add_argument("--seed", type=int, default=5)
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "examples" / "dra" / "templates.yaml", out / "templates.yaml")
    base = json.loads((REPO / "examples" / "dra" / "scenario.json").read_text())
    base["cluster"]["node_groups"] = [{"name": "pcie", "count": 1000, "cpu": 64, "memory": "512Gi", "gpus": 8,
                                       "gpu_model": "A100-80GB", "topology": {"gpus_per_pcie_switch": 4}}]
    base["outputs"] = {}
    rng = random.Random(args.seed)
    jobs, t = [], 0.0
    for i in range(20000):
        t += rng.expovariate(1 / 0.4)
        job = {"id": f"j{i}", "submit_time": round(t, 3), "duration": rng.randint(60, 3600),
               "requests": {"cpu": str(rng.randint(1, 8)), "memory": f"{rng.randint(1, 64)}Gi"}}
        if rng.random() < 0.5:
            job["claim_template"] = "two-gpus-one-pcie-root"
        else:
            job["requests"]["nvidia.com/gpu"] = str(rng.choice([1, 1, 2, 4]))
        jobs.append(job)
    for kind in ("dra", "plain"):
        workload = []
        for job in jobs:
            job = json.loads(json.dumps(job))
            if kind == "plain" and job.pop("claim_template", None):
                job["requests"]["nvidia.com/gpu"] = "2"
            workload.append(job)
        for score, plugins in SCORES.items():
            doc = json.loads(json.dumps(base))
            doc["name"] = f"shapes-{kind}-{score}"
            doc["profile"]["score"] = plugins
            doc["workload"] = {"jobs": workload}
            (out / f"{kind}-{score}.json").write_text(json.dumps(doc))
    print(f"wrote {len(SCORES) * 2} scenarios to {out}")


if __name__ == "__main__":
    main()
