#!/usr/bin/env bash
# `make fuzz`: builds the libFuzzer targets (clang, ASan + UBSan) in build/fuzz and runs each for
# FUZZ_SECONDS, FUZZ_JOBS targets at a time. See tests/fuzz/README.md.
#
# Environment:
#   FUZZ_SECONDS   seconds per target (default 600: 21 targets, 2 at a time, about 105 minutes;
#                  at 1.5-4k exec/s per core that is about 10^6 executions per target)
#   FUZZ_JOBS      targets run at once (default 2; one core each)
#   FUZZ_TARGETS   space-separated subset (default: every target)
#   FUZZ_BUILD     build folder (default build/fuzz)
#   GPUSCHED_TRACES_DIR  public traces (default ../shared/traces): their first lines join the
#                  working corpus at run time (never the repository)
#   FUZZ_NO_BUILD=1  run what build/fuzz holds, without building first
#   CXX            clang++ (default: the newest clang++-N, N >= 16, that is installed)
#
# Per target: working corpus $FUZZ_BUILD/corpus/<t> (grows from run to run), read-only seeds
# tests/fuzz/corpus/<t> and tests/fuzz/regressions/<t>, findings in $FUZZ_BUILD/artifacts/<t>/,
# log in $FUZZ_BUILD/logs/<t>.log. Ends with one line per target (executions, exec/s, findings)
# in $FUZZ_BUILD/summary.txt; exits 1 when any target found something.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
FUZZ_SECONDS=${FUZZ_SECONDS:-600}
FUZZ_JOBS=${FUZZ_JOBS:-2}
FUZZ_BUILD=${FUZZ_BUILD:-build/fuzz}
TRACES=${GPUSCHED_TRACES_DIR:-$ROOT/../shared/traces}
ALL_TARGETS=$(sed -n '/^set(GPUSCHED_FUZZ_TARGETS$/,/)/p' tests/fuzz/CMakeLists.txt | sed '1d;s/)//' | tr -s ' \n' ' ')
FUZZ_TARGETS=${FUZZ_TARGETS:-$ALL_TARGETS}

if [ -z "${CXX:-}" ]; then
  for v in 21 20 19 18 17 16; do command -v "clang++-$v" >/dev/null && { CXX=clang++-$v; break; }; done
  [ -n "${CXX:-}" ] || { echo "fuzz: needs clang++ >= 16 (FUZZ=1 tools/install-deps.sh installs it)" >&2; exit 2; }
fi
# Symbolised stacks in the logs: the llvm-symbolizer of the same LLVM version (package llvm-N).
if [ -z "${ASAN_SYMBOLIZER_PATH:-}" ]; then
  v=$("$CXX" --version | sed -n 's/.*clang version \([0-9]*\).*/\1/p' | head -1)
  for s in "/usr/lib/llvm-$v/bin/llvm-symbolizer" "$(command -v llvm-symbolizer || true)"; do
    [ -x "$s" ] && { export ASAN_SYMBOLIZER_PATH=$s; break; }
  done
fi
if [ ! -f "$FUZZ_BUILD/build.ninja" ]; then
  cmake -S . -B "$FUZZ_BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER="$CXX" \
    -DGPUSCHED_BUILD_FUZZ=ON -DGPUSCHED_BUILD_TESTS=OFF -DGPUSCHED_BUILD_BENCH=OFF -DGPUSCHED_BUILD_CLI=OFF \
    -DGPUSCHED_INSTALL=OFF
fi
[ "${FUZZ_NO_BUILD:-0}" = "1" ] || cmake --build "$FUZZ_BUILD" -j"${JOBS:-2}" --target gpusched_fuzz_targets

# Slices of the public traces: the first 40 lines of each file a target reads (header + rows).
slice() {   # target prefix-byte files...
  local t=$1 prefix=$2
  shift 2
  mkdir -p "$FUZZ_BUILD/seeds/$t"
  for f in "$@"; do
    [ -f "$f" ] || continue
    { [ -n "$prefix" ] && printf '%b' "$prefix"; head -n 40 "$f"; } > "$FUZZ_BUILD/seeds/$t/$(basename "$f")"
  done
}
if [ -d "$TRACES" ]; then
  rm -rf "$FUZZ_BUILD/seeds"
  slice openb_nodes "" "$TRACES"/alibaba-gpu-v2023-openb/openb_node_list_*.csv
  slice openb_pods "" "$TRACES"/alibaba-gpu-v2023-openb/openb_pod_list_{default,multigpu50,gpushare40}.csv
  slice pai_machines "" "$TRACES"/alibaba-gpu-v2020-pai/pai_machine_spec.csv
  slice spot_nodes "" "$TRACES"/alibaba-v2026-spot-gpu/*.csv
  slice dlrm "" "$TRACES"/alibaba-gpu-v2025-dlrm/*.csv
  slice philly_jobs "" "$TRACES"/pollux-philly-derived/philly.csv
  slice philly_machines "" "$TRACES"/philly/cluster_machine_list
  slice tiresias_jobs "" "$TRACES"/tiresias/*_job.csv
  slice tiresias_cluster "" "$TRACES"/tiresias/n*.csv "$TRACES"/tiresias/cluster_spec.csv
  slice trace_import '\x00' "$TRACES"/alibaba-gpu-v2023-openb/openb_pod_list_default.csv \
    "$TRACES"/pollux-philly-derived/philly.csv "$TRACES"/alibaba-gpu-v2025-dlrm/*.csv "$TRACES"/tiresias/60_job.csv
else
  echo "fuzz: no traces at $TRACES (GPUSCHED_TRACES_DIR): seeds from tests/fuzz/corpus only"
fi

run_target() {
  local t=$1 max=4096 s
  mkdir -p "$FUZZ_BUILD/corpus/$t" "$FUZZ_BUILD/artifacts/$t" "$FUZZ_BUILD/logs"
  # -max_len: at least 4 KiB, and room for the largest seed plus 1 KiB to grow.
  for s in tests/fuzz/corpus/"$t"/* "$FUZZ_BUILD/seeds/$t"/*; do
    [ -f "$s" ] && [ $(($(stat -c %s "$s") + 1024)) -gt "$max" ] && max=$(($(stat -c %s "$s") + 1024))
  done
  # Findings are counted from this run only: artifacts an earlier run left (already fixed, or
  # moved into regressions/) stay for reference but are not counted again.
  local stamp="$FUZZ_BUILD/artifacts/$t/.run-start"
  touch "$stamp"
  local dirs=("$FUZZ_BUILD/corpus/$t" "tests/fuzz/corpus/$t")
  [ -d "tests/fuzz/regressions/$t" ] && dirs+=("tests/fuzz/regressions/$t")
  [ -d "$FUZZ_BUILD/seeds/$t" ] && dirs+=("$FUZZ_BUILD/seeds/$t")
  "$FUZZ_BUILD/tests/fuzz/fuzz_$t" -max_total_time="$FUZZ_SECONDS" -max_len="$max" -timeout=10 -rss_limit_mb=2048 \
    -print_final_stats=1 -artifact_prefix="$FUZZ_BUILD/artifacts/$t/" "${dirs[@]}" > "$FUZZ_BUILD/logs/$t.log" 2>&1 || true
  local runs rate found
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$FUZZ_BUILD/logs/$t.log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$FUZZ_BUILD/logs/$t.log" | tail -1)
  found=$(find "$FUZZ_BUILD/artifacts/$t" -type f -newer "$stamp" \( -name 'crash-*' -o -name 'timeout-*' -o -name 'oom-*' -o -name 'leak-*' \) | wc -l)
  printf '%-20s %12s executions %8s exec/s  %s findings  %s\n' "$t" "${runs:-?}" "${rate:-?}" "$found" \
    "$(grep -m1 -oE 'ERROR: (AddressSanitizer|UndefinedBehaviorSanitizer|LeakSanitizer|libFuzzer): [a-z-]+[^ ]*' "$FUZZ_BUILD/logs/$t.log" || true)"
}
export -f run_target
export FUZZ_BUILD FUZZ_SECONDS

echo "fuzz: $(echo "$FUZZ_TARGETS" | wc -w) targets x ${FUZZ_SECONDS} s, $FUZZ_JOBS at a time; logs in $FUZZ_BUILD/logs"
printf '%s\n' $FUZZ_TARGETS | xargs -P "$FUZZ_JOBS" -I{} bash -c 'run_target {}' | tee "$FUZZ_BUILD/summary.txt"
if awk '$6 != "0" && $5 == "exec/s" { bad = 1 } $2 == "?" { bad = 1 } END { exit !bad }' "$FUZZ_BUILD/summary.txt"; then
  echo "fuzz: FINDINGS (or a target that did not run): inputs under $FUZZ_BUILD/artifacts/, see tests/fuzz/README.md"
  exit 1
fi
echo "fuzz: no findings"
