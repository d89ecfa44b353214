#!/usr/bin/env bash
# kill -9 of `uqjit warm` at random moments, on a cold or partly warm
# cache: after every kill each entry on disk verifies, and a final warm
# succeeds, compiles only what is missing and leaves every kernel valid and
# no compiler scratch behind. Runs UQ_CRASH_RUNS times (default 4; the long
# mode of docs/RELIABILITY.md uses 100 or more). A run whose warm ended
# before its kill still checks the cache. $1: the uqjit binary.
. "$(dirname "$0")/common.sh"

runs=${UQ_CRASH_RUNS:-4}
keys=$(count_keys)
[ -n "$keys" ] && [ "$keys" -gt 0 ] || { echo "FAIL: no keys"; exit 1; }
RANDOM=${UQ_CRASH_SEED:-$$}
kills=0
for run in $(seq "$runs"); do
  # Every other run starts cold; the others resume what the last left.
  [ $((run % 2)) -eq 1 ] && rm -rf "$cache"
  "$uqjit" warm "${warm_args[@]}" --cache-dir "$cache" --jobs 2 >/dev/null 2>&1 &
  pid=$!
  # 0 to 2 s: before, during and after compiles and publishes (a cold
  # warm of these kernels takes about 3 s here).
  sleep "$(printf '%d.%02d' $((RANDOM % 2)) $((RANDOM % 100)))"
  if kill -9 "$pid" 2>/dev/null; then kills=$((kills + 1)); fi
  wait "$pid" 2>/dev/null || true
  read -r good bad < <(verify_counts)
  if [ "${bad:-x}" != 0 ]; then
    echo "FAIL: run $run: cache verify says $good good, $bad bad after kill -9"
    "$uqjit" cache ls --cache-dir "$cache" || true
    exit 1
  fi
done
wait_compilers
: > "$log"
out=$("$uqjit" warm "${warm_args[@]}" --cache-dir "$cache" --jobs 2 --json)
read -r good bad < <(verify_counts)
echo "runs $runs, kills of a running warm $kills, keys $keys, final warm: $out"
echo "$out" | grep -q '"failed": 0' || { echo "FAIL: final warm failed"; exit 1; }
[ "$good" = "$keys" ] && [ "$bad" = 0 ] ||
  { echo "FAIL: after the final warm $good good, $bad bad, $keys keys"; exit 1; }
compiled=$(echo "$out" | sed -n 's/.*"compiled": \([0-9]*\).*/\1/p')
[ "$(wc -l < "$log")" = "$compiled" ] ||
  { echo "FAIL: final warm reported $compiled compiles, ran $(wc -l < "$log")"; exit 1; }
# The killed processes' scratch directories were swept by the final warm.
left=$(find "$TMPDIR" -mindepth 2 | wc -l)
[ "$left" = 0 ] || { echo "FAIL: $left scratch files left"; find "$TMPDIR"; exit 1; }
echo "ok"
