#!/usr/bin/env bash
# Whole-run replays of issue 14 ("Scale") through the gpusched command line, each under
# /usr/bin/time -v: prints wall seconds and max RSS per run, then the median per
# (scenario, profile). The same script measures any build: pass its gpusched binary.
#
#   bench/scale/run_replays.sh BIN [SUITE ...]
#
# Suites (default: demo philly48 x10):
#   demo      the built-in demo scenario (1,000 nodes, 20,000 jobs, load 1.8) under every preset
#   r100k     the demo's cluster with 100,000 synthetic jobs (replay-100k.json) under every preset
#   philly48  the 48-node Philly replay (philly-48.json) under every preset
#   x10       1,000,000 jobs on 10,000 nodes (the demo's mix x10), binpack, default outputs
#   x100      1,000,000 jobs on 100,000 nodes (the demo's mix x100), binpack, default outputs
#   demo-cli  `BIN demo` itself (the embedded demo), for reference
#
# Environment:
#   GPUSCHED_SCALE_DIR  scratch folder with the inputs (default /tmp/gpusched-scale); the inputs
#                       are generated there first when missing (bench/scale/gen_inputs.py)
#   REPEATS             runs per (scenario, profile) (default 3; x10 / x100 always run once)
#   TIMEOUT             seconds before a run is stopped (SIGINT; default 900); a stopped run is
#                       reported with rc 130 (or 124) and the last progress percentage it printed
#                       (progress = events processed / 2 x jobs)
#   PROFILES            space-separated presets (default: every built-in, from `BIN policies`)
#   RESULTS             TSV file to append the per-run rows to (default $GPUSCHED_SCALE_DIR/results.tsv)
#
# cpu_s = user + system CPU seconds of the run: less sensitive than wall_s to a busy machine.
#
# Outputs of each run go to $GPUSCHED_SCALE_DIR/out/<scenario>-<profile> (removed before each
# run, so every run writes the same files: the default outputs); logs to .../logs/.
set -euo pipefail

if [[ $# -lt 1 ]]; then
  sed -n '2,/^set -euo/p' "$0" | grep '^#' | sed 's/^# \{0,1\}//'
  exit 2
fi
BIN=$(readlink -f "$1"); shift
[[ -x "$BIN" ]] || { echo "run_replays: $BIN is not an executable" >&2; exit 2; }
SUITES=("$@")
[[ ${#SUITES[@]} -gt 0 ]] || SUITES=(demo philly48 x10)

HERE=$(cd "$(dirname "$0")" && pwd)
DIR=${GPUSCHED_SCALE_DIR:-/tmp/gpusched-scale}
REPEATS=${REPEATS:-3}
TIMEOUT=${TIMEOUT:-900}
RESULTS=${RESULTS:-$DIR/results.tsv}
mkdir -p "$DIR/out" "$DIR/logs"

need_inputs=0
for f in demo.json replay-100k.json x10-1m.json x100-1m.json; do [[ -f "$DIR/$f" ]] || need_inputs=1; done
if [[ $need_inputs == 1 ]]; then
  GPUSCHED_SCALE_DIR="$DIR" python3 "$HERE/gen_inputs.py" --out "$DIR" >/dev/null
fi

if [[ -z "${PROFILES:-}" ]]; then
  # `gpusched policies` ends with the built-in profiles, one per line: "  NAME: description".
  PROFILES=$("$BIN" policies | awk '/^Profiles:/{p=1; next} p && /^  [^ ]/ {sub(/:$/, "", $1); print $1}' | tr '\n' ' ')
  [[ -n "$PROFILES" ]] || { echo "run_replays: could not list the profiles from '$BIN policies'; set PROFILES" >&2; exit 2; }
fi

echo "# binary: $BIN ($("$BIN" version 2>/dev/null | head -1))"
echo "# host: $(nproc) cores; load before start: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "# date: $(date -u +%FT%TZ)  repeats: $REPEATS  timeout: ${TIMEOUT}s"
printf '%-12s %-18s %-3s %10s %10s %10s %4s %10s %s\n' scenario profile run wall_s cpu_s maxrss_MB rc run_s note
[[ -f "$RESULTS" ]] || printf 'suite\tscenario\tprofile\trun\twall_s\tmaxrss_mb\trc\trun_s\tevents\tnote\tbinary\tcpu_s\n' >"$RESULTS"

# one_run SUITE SCENARIO PROFILE RUN -- command...
one_run() {
  local suite=$1 scen=$2 prof=$3 rep=$4; shift 5
  local tag="$scen-$prof" log="$DIR/logs/$scen-$prof-$rep"
  rm -rf "$DIR/out/$tag"
  local rc=0
  /usr/bin/time -v -o "$log.time" timeout -s INT -k 30 "$TIMEOUT" "$@" >"$log.out" 2>"$log.err" || rc=$?
  local wall rss cpu run_s events note=""
  cpu=$(awk -F': ' '/User time|System time/{s+=$2} END{printf "%.2f", s}' "$log.time")
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/{n=split($2,a,":"); s=0; for(i=1;i<=n;i++) s=s*60+a[i]; printf "%.2f", s}' "$log.time")
  rss=$(awk -F': ' '/Maximum resident set size/{printf "%.0f", $2/1024}' "$log.time")
  run_s=$(awk '/wall time/{print $3}' "$log.out" | tail -1)
  events=$(sed -n 's/.*wall time .*(\([0-9]*\) events).*/\1/p' "$log.out" | tail -1)
  if [[ $rc -ne 0 ]]; then
    note="progress=$(tr '\r' '\n' <"$log.err" | grep -o '[0-9]*%' | tail -1 || true); $(grep -v '^\[' "$log.err" | tr '\r' '\n' | grep -v '^\[' | tail -1 | cut -c1-80)"
  fi
  printf '%-12s %-18s %-3s %10s %10s %10s %4s %10s %s\n' "$scen" "$prof" "$rep" "$wall" "$cpu" "$rss" "$rc" "${run_s:--}" "$note"
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$suite" "$scen" "$prof" "$rep" "$wall" "$rss" "$rc" "${run_s:-}" "${events:-}" "$note" "$BIN" "$cpu" >>"$RESULTS"
}

START_LINE=$(wc -l <"$RESULTS")
presets() {  # presets SUITE SCENARIO_FILE
  local suite=$1 scen=$2
  for prof in $PROFILES; do
    for ((r = 1; r <= REPEATS; r++)); do
      one_run "$suite" "$scen" "$prof" "$r" -- "$BIN" run "$DIR/$scen.json" --profile "$prof" \
        --out "$DIR/out/$scen-$prof" --progress always
      # A run stopped by the timeout is not repeated.
      [[ $(tail -1 "$RESULTS" | cut -f7) == 0 ]] || break
    done
  done
}

for s in "${SUITES[@]}"; do
  case $s in
    demo) presets demo demo ;;
    r100k) presets r100k replay-100k ;;
    philly48)
      if [[ -f "$DIR/philly-48.json" ]]; then presets philly48 philly-48
      else echo "# philly48 skipped: $DIR/philly-48.json missing (no ../shared/traces)"; fi ;;
    x10) one_run x10 x10-1m binpack 1 -- "$BIN" run "$DIR/x10-1m.json" --out "$DIR/out/x10-1m-binpack" --progress always ;;
    x100) one_run x100 x100-1m binpack 1 -- "$BIN" run "$DIR/x100-1m.json" --out "$DIR/out/x100-1m-binpack" --progress always ;;
    demo-cli)
      for ((r = 1; r <= REPEATS; r++)); do
        one_run demo-cli demo-cli binpack "$r" -- "$BIN" demo --out "$DIR/out/demo-cli-binpack" --progress always
      done ;;
    *) echo "run_replays: unknown suite '$s' (demo r100k philly48 x10 x100 demo-cli)" >&2; exit 2 ;;
  esac
done

echo
echo "# median over runs (this invocation): scenario profile runs wall_s cpu_s maxrss_MB"
tail -n +"$((START_LINE + 1))" "$RESULTS" | awk -F'\t' '
  { k = $2 " " $3; n[k]++; w[k, n[k]] = $5; m[k, n[k]] = $6; u[k, n[k]] = $12; if ($7 != 0) bad[k] = 1; if (!(k in seen)) { seen[k] = 1; key[++c] = k } }
  function med(arr, k, cnt,   i, j, t, v) {
    for (i = 1; i <= cnt; i++) v[i] = arr[k, i] + 0
    for (i = 1; i <= cnt; i++) for (j = i + 1; j <= cnt; j++) if (v[j] < v[i]) { t = v[i]; v[i] = v[j]; v[j] = t }
    return cnt % 2 ? v[(cnt + 1) / 2] : (v[cnt / 2] + v[cnt / 2 + 1]) / 2
  }
  END { for (i = 1; i <= c; i++) { k = key[i]; printf "%-32s %3d %10.2f %10.2f %10.0f%s\n", k, n[k], med(w, k, n[k]), med(u, k, n[k]), med(m, k, n[k]), bad[k] ? "  (stopped / failed)" : "" } }'
