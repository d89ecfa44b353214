#!/usr/bin/env bash
# compute-sanitizer memcheck and racecheck of the short gpu.decode tests
# (the fused and prologue query paths; stale slots, garbage block-table
# tails, block sizes 16 and 256; padded slots; rising scores, which move
# the softmax references) on one decode layer, by
# default the one the device gets (UQ_TEST_VARIANT=default|matrix|portable).
# The long GQA /
# block-size matrix takes minutes natively and does not fit under the
# sanitizers' slowdown. Meant for the lent GPU machine after
# tools/gpu-check.sh or tools/gpu-iterate.sh built $UQ_GPU_BUILD (it builds
# without running tests otherwise). Logs under $OUT; each run is cut at
# UQ_SAN_S seconds (default 90); UQ_SAN_FILTERS picks the tests (globs).
# Prints one summary line per run.
set -u
# shellcheck source=tools/gpu-env.sh
. "$(dirname "$0")/gpu-env.sh"
if [ ! -x "$build/tests/test_decode" ]; then
  UQ_GPU_BUILD=$build UQ_GPU_SUITES=none bash tools/gpu-check.sh >"$OUT/sanitize-build.log" 2>&1
fi
[ -x "$build/tests/test_decode" ] || { echo "gpu-sanitize: no $build/tests/test_decode" >&2; exit 2; }
command -v compute-sanitizer >/dev/null || PATH=$PATH:/usr/local/cuda/bin
uq_runtime_libs
export UQ_TESTDATA=${UQ_TESTDATA:-$PWD/.deps/testdata}
export UQ_TEST_VARIANT=${UQ_TEST_VARIANT:-default}

status=0
set -f # the filters are test-name globs, not file names
for tool in memcheck racecheck; do
  # shellcheck disable=SC2086
  for filter in ${UQ_SAN_FILTERS:-decode_fused* decode_ignores* decode_reads* decode_follows*}; do
    log="$OUT/san-$tool-${filter%%_*}-${filter#decode_}"
    log=${log%\*}.log
    UQ_TEST_FILTER=$filter timeout "${UQ_SAN_S:-90}" compute-sanitizer --tool "$tool" \
      --error-exitcode 9 "$build/tests/test_decode" >"$log" 2>&1
    rc=$?
    [ $rc -eq 0 ] || status=1
    summary=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY|== variant .*: (passed|FAILED)" "$log" | tr '\n' ' ')
    echo "$tool $filter ($UQ_TEST_VARIANT): rc=$rc${summary:+; $summary}"
  done
done
exit $status
