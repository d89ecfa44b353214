#!/usr/bin/env bash
# compute-sanitizer memcheck, racecheck and initcheck of the gpu suite on
# one decode layer, by default the one the device gets (UQ_TEST_VARIANT=
# default|matrix|portable|gfx950-emu|gfx942-emu): every gpu.decode test (the fused and prologue query
# paths; stale slots, garbage block-table tails, block sizes 16 and 256;
# padded slots; rising scores, which move the softmax references; the GQA
# x block-size matrix), gpu.store and gpu.graph, as the suite runs them
# (the whole set took ~100 s under both tools on the H200, 70000-token
# sequences included; UQ_SAN_LONG_LEN shortens those for a quicker
# pass). Skipped: gpu.store's test that makes a driver call fail on
# purpose and gpu.graph's host-overhead timing (one is an API error by
# design, the other a clock).
#
# Meant for a GPU machine of the kind the project measures on (an H200) after scripts/gpu-check.sh or
# scripts/gpu-iterate.sh built $UQ_GPU_BUILD (it builds without running
# tests otherwise). Logs under $OUT; each run is cut at UQ_SAN_S seconds
# (default 200: a run cut short fails); UQ_SAN_RUNS picks the runs, each
# "decode:<test glob>", "store" or "graph" (default: all of them);
# UQ_SAN_TOOLS the tools (default "memcheck racecheck initcheck"). Prints one
# summary line per run and exits non-zero if any run failed.
set -u
# shellcheck source=scripts/gpu-env.sh
. "$(dirname "$0")/gpu-env.sh"
if [ ! -x "$build/tests/runtime/test_decode" ]; then
  UQ_GPU_BUILD=$build UQ_GPU_SUITES=none bash scripts/gpu-check.sh >"$OUT/sanitize-build.log" 2>&1
fi
for t in decode store graph; do
  [ -x "$build/tests/runtime/test_$t" ] || { echo "gpu-sanitize: no $build/tests/runtime/test_$t" >&2; exit 2; }
done
command -v compute-sanitizer >/dev/null || PATH=$PATH:/usr/local/cuda/bin
uq_runtime_libs
export UQ_TESTDATA=${UQ_TESTDATA:-$PWD/tests/data}
export UQ_TEST_VARIANT=${UQ_TEST_VARIANT:-default}
unset UQ_TEST_LONG_LEN # the test's own length unless asked
[ -n "${UQ_SAN_LONG_LEN:-}" ] && export UQ_TEST_LONG_LEN=$UQ_SAN_LONG_LEN

default_runs="decode:decode_fused* decode:decode_ignores* decode:decode_reads*
decode:decode_follows* decode:decode_matches* store graph"
status=0
set -f # the runs hold test-name globs, not file names
for tool in ${UQ_SAN_TOOLS:-memcheck racecheck initcheck}; do
  # shellcheck disable=SC2086
  for run in ${UQ_SAN_RUNS:-$default_runs}; do
    prog=${run%%:*}
    filter=${run#*:}
    skip=
    case $prog in
    decode) [ "$filter" != "$run" ] || filter='*' ;;
    store) filter='*' skip='failing_driver_call*' ;;
    graph) filter='*' skip='decode_host_overhead*' ;;
    *) echo "gpu-sanitize: unknown run $run" >&2; status=1; continue ;;
    esac
    name=${filter%\*}
    log="$OUT/san-$tool-$prog${name:+-${name#decode_}}.log"
    UQ_TEST_FILTER=$filter UQ_TEST_SKIP=$skip timeout "${UQ_SAN_S:-200}" \
      compute-sanitizer --tool "$tool" --error-exitcode 9 "$build/tests/runtime/test_$prog" >"$log" 2>&1
    rc=$?
    [ $rc -eq 0 ] || status=1
    summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|== variant .*: (passed|FAILED)|^\[  (PASSED|FAILED|SKIPPED) \]" "$log" | tr '\n' ' ')
    echo "$tool $run ($UQ_TEST_VARIANT${UQ_TEST_LONG_LEN:+, long $UQ_TEST_LONG_LEN}): rc=$rc${summary:+; $summary}"
  done
done
exit $status
