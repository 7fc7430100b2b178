#!/usr/bin/env python3
"""Before/after for issue 14's one-decision latency (bench_scheduler's DecisionLatency).

Runs each build's BM_Scheduler_DecisionLatency in turn (A, B, A, B, ...) for --rounds rounds and
prints, per profile and build, the median of each latency counter over the rounds, and every
round's p99. On a shared or virtual machine the same binary's p99 can move by 10-25 % from run to
run and hour to hour: a change is real when the builds' p99s separate across rounds, not when two
runs differ.

    bench/scale/ab_latency.py [--rounds 6] [--filter REGEX] [--nodes 5000] [--decisions 100000] \\
        [LABEL=]BENCH_SCHEDULER ...

Each BENCH_SCHEDULER is a bench_scheduler binary (copy the one a build made before rebuilding).
Counters: p50, p99, p99 of placed decisions, mean, and the median of failed decisions
(p50_unplaced, when the build reports it). All in microseconds.
"""
import argparse
import collections
import json
import os
import statistics
import subprocess
import sys

COUNTERS = ("p50_ns", "p99_ns", "p99_placed_ns", "mean_ns", "p50_unplaced_ns")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("builds", nargs="+", help="[LABEL=]path to a bench_scheduler binary")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--filter", default="first-fit|best-fit|binpack|most-allocated|gpushare-binpack|kube-default|fgd",
                    help="profiles, as a regular expression (default: the issue's seven)")
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--decisions", type=int, default=100000)
    args = ap.parse_args()
    builds = []
    for b in args.builds:
        label, sep, path = b.partition("=")
        if not sep or "/" in label:   # no label (a path may hold "=" after a "/")
            label, path = "", b
        path = os.path.abspath(path)
        if not os.access(path, os.X_OK):
            sys.exit(f"ab_latency: {path} is not an executable")
        label = label or os.path.basename(path)
        if any(label == other for other, _ in builds):
            sys.exit(f"ab_latency: two builds named {label}: give each a LABEL= of its own")
        builds.append((label, path))
    env = dict(os.environ, GPUSCHED_LATENCY_DECISIONS=str(args.decisions), GPUSCHED_LATENCY_NODES=str(args.nodes))
    env.pop("GPUSCHED_LATENCY_TAIL", None)
    got = collections.defaultdict(lambda: collections.defaultdict(list))
    for r in range(args.rounds):
        for label, path in builds:
            flt = f"DecisionLatency/({args.filter})/nodes:{args.nodes}/index:1"
            run = subprocess.run([path, f"--benchmark_filter={flt}", "--benchmark_format=json"], env=env,
                                 capture_output=True, text=True)
            out = run.stdout
            if run.returncode != 0 or "{" not in out:
                print(f"# round {r + 1}: {label} failed (exit {run.returncode}), left out: {run.stderr.strip()[-300:]}",
                      file=sys.stderr)
                continue
            for bm in json.loads(out[out.index("{"):])["benchmarks"]:
                profile = bm["name"].split("/")[1]
                for k in COUNTERS:
                    if k in bm:
                        got[profile][label].append((k, bm[k] / 1e3))
            print(f"# round {r + 1}/{args.rounds}: {label} done", file=sys.stderr)
    print(f"{args.rounds} rounds alternated, {args.nodes} nodes, {args.decisions} decisions; medians in us")
    print()
    print("| profile | build | p50 | p99 | p99 placed | mean | p50 failed | p99 of each round |")
    print("|---|---|---:|---:|---:|---:|---:|---|")
    for profile in sorted(got):
        for label, _ in builds:
            values = collections.defaultdict(list)
            for k, v in got[profile][label]:
                values[k].append(v)
            cell = lambda k: f"{statistics.median(values[k]):.2f}" if values[k] else ""
            rounds = ", ".join(f"{v:.1f}" for v in values["p99_ns"])
            print(f"| {profile} | {label} | {cell('p50_ns')} | {cell('p99_ns')} | {cell('p99_placed_ns')} | "
                  f"{cell('mean_ns')} | {cell('p50_unplaced_ns')} | {rounds} |")


if __name__ == "__main__":
    main()
