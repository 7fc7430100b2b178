#!/usr/bin/env python3
"""Markdown table of the medians in results.tsv (written by run_replays.sh).

One row per profile, one column group per scenario: median wall seconds, median CPU seconds
(user + system) and median max RSS over the successful runs of each (binary, scenario,
profile); "stopped" when every run was stopped or failed.

Usage: python3 bench/scale/summarize.py [RESULTS.tsv] [--binary SUBSTRING]
"""

from __future__ import annotations

import argparse
import csv
import os
import statistics
import sys
from collections import defaultdict


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("results", nargs="?",
                    default=os.path.join(os.environ.get("GPUSCHED_SCALE_DIR", "/tmp/gpusched-scale"), "results.tsv"))
    ap.add_argument("--binary", default="", help="only rows whose binary path contains this")
    args = ap.parse_args()

    runs = defaultdict(list)      # (scenario, profile) -> [(wall, cpu, rss, rc)]
    scenarios, profiles = [], []
    with open(args.results, newline="") as f:
        for row in csv.DictReader(f, delimiter="\t"):
            if args.binary not in (row.get("binary") or ""):
                continue
            key = (row["scenario"], row["profile"])
            if row["scenario"] not in scenarios:
                scenarios.append(row["scenario"])
            if row["profile"] not in profiles:
                profiles.append(row["profile"])

            def num(name: str) -> float | None:
                v = row.get(name) or ""
                return float(v) if v else None

            runs[key].append((num("wall_s"), num("cpu_s"), num("maxrss_mb"), int(row["rc"] or 0)))

    head = "| profile | " + " | ".join(f"{s} wall s | {s} CPU s | {s} MB" for s in scenarios) + " |"
    print(head)
    print("|---|" + "---:|" * (3 * len(scenarios)))
    for p in profiles:
        cells = []
        for s in scenarios:
            rs = runs.get((s, p), [])
            ok = [r for r in rs if r[3] == 0]
            if not rs:
                cells += ["", "", ""]
            elif not ok:
                cells += [f"stopped ({rs[0][0]:.0f} s)", "", ""]
            else:
                def med(i: int) -> str:
                    vals = [r[i] for r in ok if r[i] is not None]
                    return f"{statistics.median(vals):.2f}" if vals else "-"
                n = f" (n={len(ok)})" if len(ok) != 1 else ""
                cells += [med(0) + n, med(1), f"{statistics.median([r[2] for r in ok]):.0f}"]
        print(f"| {p} | " + " | ".join(cells) + " |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
