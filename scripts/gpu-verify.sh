#!/usr/bin/env bash
# The verdict on the kernels as they stand, in one device call (meant for
# a GPU machine of the kind the project measures on, an H200; with .deps/
# as for gpu-check.sh):
#   1. build (scripts/gpu-check.sh, no suites);
#   2. at once, each in its own process: gpu.decode for every decode
#      layer (UQ_TEST_VARIANT=default, matrix, portable, gfx950-emu,
#      gfx942-emu: every case against the double reference), the other gpu
#      tests (store, graph, the Python binding with vLLM's arguments, the
#      emulated AMD primitives), and compute-sanitizer memcheck, racecheck
#      and initcheck of the default layer (scripts/gpu-sanitize.sh, long
#      sequences shortened to UQ_VERIFY_SAN_LEN tokens, default 8192);
#   3. one summary line per part, the logs in $OUT/verify-logs.tar.gz.
# Each part is cut at UQ_VERIFY_S seconds (default 330); a part cut short
# fails. Exits non-zero if any part failed.
set -u
# shellcheck source=scripts/gpu-env.sh
. "$(dirname "$0")/gpu-env.sh"
t0=$(date +%s)
say() { printf '== %s (%s s)\n' "$*" "$(($(date +%s) - t0))"; }
logs=$OUT/verify
mkdir -p "$logs"
cap=${UQ_VERIFY_S:-330}

say "build"
UQ_GPU_BUILD=$build UQ_GPU_SUITES=none OUT=$logs timeout 240 bash scripts/gpu-check.sh \
  >"$logs/build.log" 2>&1
rc=$?
echo "build rc=$rc"
[ $rc -eq 0 ] || { tail -20 "$logs/build.log"; tar -C "$OUT" -czf "$OUT/verify-logs.tar.gz" verify; exit 1; }
uq_runtime_libs
export UQ_TESTDATA=$PWD/tests/data UQ_SOURCE_ROOT=$PWD UQJIT_QUIET=1

say "gpu tests and compute-sanitizer, in parallel"
pids=()
names=()
for v in default matrix portable gfx950-emu gfx942-emu; do
  UQ_TEST_VARIANT=$v timeout "$cap" "$build/tests/runtime/test_decode" >"$logs/decode-$v.log" 2>&1 &
  pids+=($!)
  names+=("gpu.decode $v")
done
timeout "$cap" meson test -C "$build" --no-rebuild --print-errorlogs \
  gpu.store gpu.graph gpu.python_torch gpu.gfx950_emu_prims gpu.gfx942_emu_prims \
  >"$logs/gpu-others.log" 2>&1 &
pids+=($!)
names+=("gpu.store, gpu.graph, gpu.python_torch, gpu.*_emu_prims")
UQ_GPU_BUILD=$build OUT=$logs UQ_SAN_LONG_LEN=${UQ_VERIFY_SAN_LEN:-8192} UQ_SAN_S=$cap \
  timeout "$cap" bash scripts/gpu-sanitize.sh >"$logs/sanitize.log" 2>&1 &
pids+=($!)
names+=("compute-sanitizer (default layer)")

status=0
for i in "${!pids[@]}"; do
  wait "${pids[$i]}"
  rc=$?
  [ $rc -eq 0 ] || status=1
  echo "${names[$i]}: rc=$rc"
done
say "done"
for v in default matrix portable gfx950-emu gfx942-emu; do
  grep -E "^(== variant|worst)|FAILED|non-finite|\[  PASSED|\[  FAILED" "$logs/decode-$v.log" |
    sed "s/^/  $v: /" | head -8
done
grep -E "^ *[0-9]+/[0-9]+ |^Ok:|^Fail:|^Skipped:|^Timeout:" "$logs/gpu-others.log" | head -12
cat "$logs/sanitize.log"
[ -f "$build/meson-logs/testlog.txt" ] && cp "$build/meson-logs/testlog.txt" "$logs/"
tar -C "$OUT" -czf "$OUT/verify-logs.tar.gz" verify && rm -rf "$logs"
exit $status
