#!/usr/bin/env python3
"""Writes a Tiresias-format job list (job_id,num_gpu,submit_time,duration) derived from the
Philly per-job table (../shared/traces/pollux-philly-derived/philly.csv, 82,247 jobs), repeated
back to back until it holds at least --jobs jobs, and a Tiresias cluster spec of Philly's size
(311 nodes x 8 GPUs = 2,488 GPUs; Philly had 2,490), into a scratch folder (default
/tmp/gpusched-tiresias). Nothing is written into the repository.

    python3 bench/tiresias/philly_to_tiresias.py [--traces ../shared/traces] [--jobs 100000] [--compress 4] [--out /tmp/gpusched-tiresias]
    build/cpp/gpusched experiment tiresias --compat --trace /tmp/gpusched-tiresias/philly-jobs.csv \\
        --cluster /tmp/gpusched-tiresias/philly-2488.csv --out /tmp/tiresias-philly
"""
import argparse
import csv
import math
import os
from datetime import datetime
from pathlib import Path


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--traces", default=os.environ.get("GPUSCHED_TRACES_DIR", "../shared/traces"))
    ap.add_argument("--jobs", type=int, default=100_000)
    ap.add_argument("--out", default="/tmp/gpusched-tiresias")
    ap.add_argument("--compress", type=float, default=1.0,
                    help="divide submit times by this (Philly's own rate leaves 2,488 GPUs mostly idle; 4 queues jobs)")
    a = ap.parse_args()
    src = Path(a.traces) / "pollux-philly-derived" / "philly.csv"
    rows = []
    with open(src, newline="") as f:
        for r in csv.DictReader(f):
            t = datetime.strptime(r["timestamp"], "%Y-%m-%d %H:%M:%S").timestamp()
            rows.append((t, int(float(r["duration"])), int(r["num_gpus"])))
    rows.sort(key=lambda r: r[0])
    t0 = rows[0][0]
    span = int(rows[-1][0] - t0) + 1
    copies = max(1, math.ceil(a.jobs / len(rows)))
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    n = 0
    with open(out / "philly-jobs.csv", "w", newline="") as f:
        f.write("job_id,num_gpu,submit_time,duration\n")
        for c in range(copies):
            for t, duration, gpus in rows:
                f.write(f"{n},{gpus},{int((t - t0 + c * span) / a.compress)},{max(duration, 1)}\n")
                n += 1
    (out / "philly-2488.csv").write_text("num_switch,num_node_p_switch,num_gpu_p_node,num_cpu_p_node,mem_p_node\n1,311,8,40,256\n")
    load = sum(d * g for _, d, g in rows) * copies / (copies * span / a.compress) / 2488
    print(f"offered load {load:.2f} of 2,488 GPUs; {n} jobs ({copies} x {len(rows)}) -> {out / 'philly-jobs.csv'}; cluster 311 x 8 GPUs -> {out / 'philly-2488.csv'}")


if __name__ == "__main__":
    main()
