#!/usr/bin/env python3
"""Compare two Google Benchmark JSON outputs (--benchmark_out=FILE --benchmark_out_format=json).

Debian's libbenchmark-dev does not ship Google Benchmark's tools/compare.py; this is a small,
dependency-free stand-in. For each benchmark present in both files it prints the median
(the "median" aggregate when the run used --benchmark_repetitions, else the median of the raw
iterations) of CPU time and real time, old -> new, and the ratio new/old (< 1 is faster).

Usage:
    python3 bench/compare_json.py before.json after.json [--filter REGEX] [--threshold 0.05]

Exit status is 0; rows whose CPU-time ratio moves by more than --threshold are marked.
Noise on a shared 2-core machine is a few percent: repeat (5+ repetitions), and re-run
anything that moves by less than ~10% before believing it.
"""
import argparse
import json
import re
import statistics
import sys

_UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def load(path):
    """run_name -> {"cpu": ns, "real": ns} (medians)."""
    with open(path, encoding="utf-8") as f:
        doc = json.load(f)
    medians, raw = {}, {}
    for b in doc.get("benchmarks", []):
        if b.get("error_occurred"):
            continue
        scale = _UNIT_NS.get(b.get("time_unit", "ns"), 1.0)
        name = b.get("run_name", b["name"])
        times = (b["cpu_time"] * scale, b["real_time"] * scale)
        if b.get("run_type") == "aggregate":
            if b.get("aggregate_name") == "median":
                medians[name] = times
        else:
            raw.setdefault(name, []).append(times)
    out = {}
    for name, runs in raw.items():
        out[name] = (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))
    out.update(medians)   # aggregates win over raw runs
    return {k: {"cpu": v[0], "real": v[1]} for k, v in out.items()}


def fmt(ns):
    for unit, scale in (("s", 1e9), ("ms", 1e6), ("us", 1e3)):
        if ns >= scale:
            return f"{ns / scale:.3g} {unit}"
    return f"{ns:.3g} ns"


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("before")
    ap.add_argument("after")
    ap.add_argument("--filter", default="", help="only benchmarks whose name matches this regex")
    ap.add_argument("--threshold", type=float, default=0.05, help="mark CPU-time changes beyond this fraction")
    args = ap.parse_args(argv)
    old, new = load(args.before), load(args.after)
    pattern = re.compile(args.filter)
    names = [n for n in old if n in new and pattern.search(n)]
    if not names:
        print("no benchmark in common", file=sys.stderr)
        return 1
    width = max(len(n) for n in names)
    print(f"{'benchmark':<{width}}  {'cpu old':>10}  {'cpu new':>10}  {'ratio':>6}  {'real old':>10}  {'real new':>10}  {'ratio':>6}")
    for n in names:
        o, w = old[n], new[n]
        rc = w["cpu"] / o["cpu"] if o["cpu"] else float("nan")
        rr = w["real"] / o["real"] if o["real"] else float("nan")
        mark = "  <-- faster" if rc < 1 - args.threshold else ("  <-- SLOWER" if rc > 1 + args.threshold else "")
        print(f"{n:<{width}}  {fmt(o['cpu']):>10}  {fmt(w['cpu']):>10}  {rc:6.3f}  {fmt(o['real']):>10}  {fmt(w['real']):>10}  {rr:6.3f}{mark}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
