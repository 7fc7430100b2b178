#!/usr/bin/env bash
# Timings of `gpusched experiment fgd` for issue 14 ("Scale"), any build: pass its binary.
#
#   bench/scale/run_fgd.sh BIN [STEP ...]
#
# Steps (default: one workload):
#   one       one run of the paper protocol (default workload, seed 42, one policy, --jobs 1),
#             for each policy in $ONE_POLICIES (default "fgd bestfit"), $REPEATS times
#   workload  one workload (default) x 6 policies x 10 seeds (42-51), --jobs $JOBS
#   loop      all 24 openb workloads x 6 policies x $SEEDS (default 10 seeds, 42-51), one command
#             per workload (for builds without `--workload all`); prints each workload's time and
#             the total. SEEDS=42 gives 1/10 of the work: multiply by 10 for an estimate
#   all       the same 1,440 runs as one command: `--workload all` (builds that have it)
#
# Environment: TRACES (default <repo>/../shared/traces), GPUSCHED_SCALE_DIR (scratch, default
# /tmp/gpusched-scale), REPEATS (default 3), JOBS (default 2 = the cores of the reference machine),
# SEEDS (loop only, default 42-51).
set -euo pipefail
if [[ $# -lt 1 ]]; then sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'; exit 2; fi
BIN=$(readlink -f "$1"); shift
STEPS=("$@"); [[ ${#STEPS[@]} -gt 0 ]] || STEPS=(one workload)
HERE=$(cd "$(dirname "$0")" && pwd)
TRACES=${TRACES:-$(cd "$HERE/../../.." && pwd)/shared/traces}
DIR=${GPUSCHED_SCALE_DIR:-/tmp/gpusched-scale}
REPEATS=${REPEATS:-3}
JOBS=${JOBS:-2}
SEEDS=${SEEDS:-42-51}
ONE_POLICIES=${ONE_POLICIES:-fgd bestfit}
OPENB=$TRACES/alibaba-gpu-v2023-openb
[[ -d "$OPENB" ]] || { echo "run_fgd: $OPENB not found (set TRACES)" >&2; exit 2; }
mkdir -p "$DIR/logs" "$DIR/out"

echo "# binary: $BIN ($("$BIN" version 2>/dev/null | head -1)); $(nproc) cores; load $(cut -d' ' -f1-3 /proc/loadavg); $(date -u +%FT%TZ)"

# timed LABEL -- command...: prints LABEL wall_s cpu_s (user + system) maxrss_MB rc
timed() {
  local label=$1; shift 2
  local log="$DIR/logs/fgd-${label//[^A-Za-z0-9_.-]/_}" rc=0
  /usr/bin/time -v -o "$log.time" "$@" >"$log.out" 2>"$log.err" || rc=$?
  local wall rss cpu
  cpu=$(awk -F': ' '/User time|System time/{s+=$2} END{printf "%.2f", s}' "$log.time")
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/{n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; printf "%.2f", s}' "$log.time")
  rss=$(awk -F': ' '/Maximum resident set size/{printf "%.0f", $2/1024}' "$log.time")
  printf '%-40s %9s s wall %9s s cpu %7s MB  rc=%s\n' "$label" "$wall" "$cpu" "$rss" "$rc"
  [[ $rc == 0 ]] || tail -3 "$log.err" >&2
  LAST_WALL=$wall
}

for step in "${STEPS[@]}"; do
  case $step in
    one)
      for p in $ONE_POLICIES; do
        for ((r = 1; r <= REPEATS; r++)); do
          timed "one/$p/run$r" -- "$BIN" experiment fgd --traces "$TRACES" --seeds 42 --policies "$p" --jobs 1 \
            --quiet --progress never --out "$DIR/out/fgd-one"
        done
      done ;;
    workload)
      for ((r = 1; r <= REPEATS; r++)); do
        timed "workload/default/6x10/run$r" -- "$BIN" experiment fgd --traces "$TRACES" --workload default \
          --seeds 42-51 --policies all --jobs "$JOBS" --quiet --progress never --out "$DIR/out/fgd-default"
      done ;;
    loop)
      total=0
      for f in "$OPENB"/openb_pod_list_*.csv; do
        w=$(basename "$f" .csv); w=${w#openb_pod_list_}
        timed "loop/$w/seeds=$SEEDS" -- "$BIN" experiment fgd --traces "$TRACES" --workload "$w" --seeds "$SEEDS" \
          --policies all --jobs "$JOBS" --quiet --progress never --out "$DIR/out/fgd-loop-$w"
        total=$(awk -v a="$total" -v b="$LAST_WALL" 'BEGIN{printf "%.2f", a + b}')
      done
      echo "loop total (24 workloads x 6 policies x seeds $SEEDS): $total s wall" ;;
    all)
      timed "all/6x10" -- "$BIN" experiment fgd --traces "$TRACES" --workload all --seeds 42-51 --policies all \
        --jobs "$JOBS" --quiet --progress never --out "$DIR/out/fgd-all" ;;
    *) echo "run_fgd: unknown step '$step' (one workload loop all)" >&2; exit 2 ;;
  esac
done
