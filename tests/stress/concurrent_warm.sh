#!/usr/bin/env bash
# 16 processes x 4 threads warm one cold cache at once: each kernel is
# compiled exactly once (the per-kernel lock), every process succeeds, and
# every entry verifies. $1: the uqjit binary.
. "$(dirname "$0")/common.sh"

procs=${UQ_CONCURRENT_PROCS:-16}
keys=$(count_keys)
[ -n "$keys" ] && [ "$keys" -gt 0 ] || { echo "FAIL: no keys"; exit 1; }
pids=()
for i in $(seq "$procs"); do
  "$uqjit" warm "${warm_args[@]}" --cache-dir "$cache" --jobs 4 --json \
    > "$work/out.$i" 2> "$work/err.$i" &
  pids+=($!)
done
failed=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}" || { failed=1; cat "$work/err.$((i + 1))"; }
done
[ "$failed" = 0 ] || { echo "FAIL: a warm exited non-zero"; exit 1; }
compiled=$(cat "$work"/out.* | sed -n 's/.*"compiled": \([0-9]*\).*/\1/p' |
           awk '{s += $1} END {print s}')
hits=$(cat "$work"/out.* | sed -n 's/.*"hits": \([0-9]*\).*/\1/p' |
       awk '{s += $1} END {print s}')
runs=$(wc -l < "$log")
read -r good bad < <(verify_counts)
echo "processes $procs x 4 threads, keys $keys, clang runs $runs," \
     "reported compiled $compiled, hits $hits, verify $good good $bad bad"
[ "$runs" = "$keys" ] || { echo "FAIL: $runs compiles for $keys kernels"; exit 1; }
[ "$compiled" = "$keys" ] || { echo "FAIL: processes report $compiled compiles"; exit 1; }
[ "$hits" = $((procs * keys - keys)) ] || { echo "FAIL: $hits hits"; exit 1; }
[ "$good" = "$keys" ] && [ "$bad" = 0 ] || { echo "FAIL: verify"; exit 1; }
echo "ok"
