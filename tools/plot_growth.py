#!/usr/bin/env python3
"""Draws the growth curve written by bench_growth (bench/bench_growth.cpp) as a log-log PNG.

One panel per profile (and per node-index setting when the CSV has both), wall time of the
whole run against the number of jobs, one line per cluster size. Cells that did not finish
(skipped, timeout, error) are left out; a cell run twice (e.g. a CSV appended to) keeps its
last row.

Usage:
    python3 tools/plot_growth.py growth.csv [-o docs/scale-growth.png] [--metric wall_s|us_per_decision]
"""
from __future__ import annotations

import argparse
import csv
import sys
from collections import defaultdict
from pathlib import Path

REQUIRED = ("nodes", "jobs", "profile", "status", "wall_s", "us_per_decision")


def read_rows(path: Path) -> list[dict]:
    try:
        with path.open(newline="") as f:
            reader = csv.DictReader(f)
            missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
            if missing:
                raise SystemExit(f"{path}: line 1: missing column(s) {', '.join(missing)} (written by bench_growth?)")
            cells: dict[tuple, dict] = {}
            for lineno, row in enumerate(reader, start=2):
                if row["status"] != "ok":
                    continue
                try:
                    key = (int(row["nodes"]), int(row["jobs"]), row["profile"], int(row.get("index") or 1))
                    row["wall_s"] = float(row["wall_s"])
                    row["us_per_decision"] = float(row["us_per_decision"])
                except ValueError as e:
                    raise SystemExit(f"{path}: line {lineno}: {e}") from None
                cells[key] = row
    except OSError as e:
        raise SystemExit(f"{path}: {e.strerror}") from None
    return [dict(row, nodes=k[0], jobs=k[1], profile=k[2], index=k[3]) for k, row in cells.items()]


def fmt_count(n: int) -> str:
    for div, suffix in ((1_000_000, "M"), (1_000, "k")):
        if n >= div and n % div == 0:
            return f"{n // div}{suffix}"
    return str(n)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", type=Path)
    ap.add_argument("-o", "--output", type=Path, default=Path("docs/scale-growth.png"))
    ap.add_argument("--metric", choices=("wall_s", "us_per_decision"), default="wall_s")
    ap.add_argument("--title", default=None)
    args = ap.parse_args(argv)

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    rows = read_rows(args.csv)
    if not rows:
        raise SystemExit(f"{args.csv}: no finished cell (status ok) to plot")
    indexes = sorted({r["index"] for r in rows}, reverse=True)
    profiles = list(dict.fromkeys(r["profile"] for r in rows))
    panels = [(p, i) for i in indexes for p in profiles if any(r["profile"] == p and r["index"] == i for r in rows)]
    node_counts = sorted({r["nodes"] for r in rows})
    markers = "osD^v<>ph*"
    colours = plt.get_cmap("viridis")

    cols = min(3, len(panels))
    nrows = (len(panels) + cols - 1) // cols
    fig, axes = plt.subplots(nrows, cols, figsize=(4.6 * cols, 3.9 * nrows), squeeze=False, sharex=True, sharey=True)
    for ax in axes.flat[len(panels):]:
        ax.set_visible(False)
    for ax, (profile, index) in zip(axes.flat, panels):
        lines = defaultdict(list)
        for r in rows:
            if r["profile"] == profile and r["index"] == index:
                lines[r["nodes"]].append((r["jobs"], r[args.metric]))
        for k, n in enumerate(node_counts):
            if n not in lines:
                continue
            pts = sorted(lines[n])
            colour = colours(k / max(1, len(node_counts) - 1) * 0.85)
            ax.plot([p[0] for p in pts], [p[1] for p in pts], marker=markers[k % len(markers)], color=colour,
                    label=f"{fmt_count(n)} nodes")
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.yaxis.set_minor_formatter(NullFormatter())
        title = profile if len(indexes) == 1 else f"{profile}, node index {'on' if index else 'off'}"
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize="small")
    for ax in axes[-1]:
        ax.set_xlabel("jobs")
    for ax in axes[:, 0]:
        ax.set_ylabel("wall time of the run (s)" if args.metric == "wall_s" else "µs per decision")
    fig.suptitle(args.title or "gpusched growth: demo node mix scaled, synthetic jobs at load 0.9 (log-log)")
    fig.tight_layout()
    args.output.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(args.output, dpi=110)
    print(f"wrote {args.output} ({len(rows)} cells, {len(panels)} panel(s))")
    return 0


if __name__ == "__main__":
    sys.exit(main())
