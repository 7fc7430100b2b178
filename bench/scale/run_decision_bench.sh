#!/usr/bin/env bash
# One-decision cost for issue 14 ("Scale"): bench_scheduler's BM_Scheduler_PlaceTask (60% GPU
# allocated, demo-like cluster) at 4,000 and 16,000 nodes for the profiles. Any build:
# pass its bench_scheduler binary.
#
#   bench/scale/run_decision_bench.sh BENCH_SCHEDULER [REGEX_OF_PROFILES]
#
# Default profiles: first-fit|best-fit|binpack|most-allocated|gpushare-binpack|default|kube-default|fgd.
# Environment: REPEATS (default 3, median reported), NODES (regex, default 4000|16000),
# OUT (JSON file, default $GPUSCHED_SCALE_DIR/decision-<date>.json).
set -euo pipefail
if [[ $# -lt 1 ]]; then sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 2; fi
BIN=$(readlink -f "$1")
PROFILES=${2:-first-fit|best-fit|binpack|most-allocated|gpushare-binpack|default|kube-default|fgd}
NODES=${NODES:-4000|16000}
REPEATS=${REPEATS:-3}
DIR=${GPUSCHED_SCALE_DIR:-/tmp/gpusched-scale}
mkdir -p "$DIR"
OUT=${OUT:-$DIR/decision-$(date -u +%Y%m%dT%H%M%S).json}
echo "# $BIN; $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg); json: $OUT"
"$BIN" --benchmark_filter="^BM_Scheduler_PlaceTask/(${PROFILES})/nodes:(${NODES})\$" \
  --benchmark_repetitions="$REPEATS" --benchmark_report_aggregates_only=true \
  --benchmark_out="$OUT" --benchmark_out_format=json --benchmark_display_aggregates_only=true 2>&1 |
  grep -E '_median|^-|Benchmark'
