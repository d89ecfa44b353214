#!/usr/bin/env bash
# A development iteration on a GPU machine in one call (~5 min):
#   (a) scripts/gpu-check.sh with the gpu suite for one decode variant
#       (UQ_TEST_VARIANT, default "default": the layer the device gets;
#       "all": every layer);
#   (b) the SASS of the warpgroup decode kernel for B=16, 128k, 1:16 and an
#       opcode histogram of it;
#   (c) uqjit bench on a few shapes for each of UQ_ITER_VARIANTS (default
#       "warpgroup matrix"), every result checked against the reference.
# Logs under $OUT. Needs .deps/ as gpu-check.sh does.
set -u
# shellcheck source=scripts/gpu-env.sh
. "$(dirname "$0")/gpu-env.sh"
t0=$(date +%s)
say() { printf '== %s (%s s)\n' "$*" "$(($(date +%s) - t0))"; }

say "gpu-check (gpu suite, variant ${UQ_TEST_VARIANT:-default})"
[ "${UQ_ITER_SUITES:-1}" = 0 ] && export UQ_GPU_SUITES=none
# UQ_TEST_VARIANT=all runs every layer (gpu_decode.c's default without it).
variant=(env UQ_TEST_VARIANT="${UQ_TEST_VARIANT:-default}")
[ "${UQ_TEST_VARIANT:-}" = all ] && variant=(env -u UQ_TEST_VARIANT)
"${variant[@]}" UQ_GPU_BUILD=$build UQ_GPU_SUITES=${UQ_GPU_SUITES:-gpu} \
  OUT=$OUT timeout "${UQ_ITER_CHECK_S:-240}" bash scripts/gpu-check.sh >"$OUT/check.log" 2>&1
echo "gpu-check rc=$?"
grep -E "^(== variant|qg |worst)|FAILED|ERROR|FAIL|uqjit:gpu|^Ok:|^Fail:|Skipped:|non-finite|rel_l2|mismatch" \
  "$OUT/check.log" "$OUT"/testlog-gpu.txt 2>/dev/null | head -40

uq_runtime_libs
[ -x "$B" ] || { echo "gpu-iterate: $B was not built" >&2; exit 2; }

say "SASS of the warpgroup decode kernel"
"$B" dump --batch 16 --q-heads 16 --kv-heads 1 --head-dim 256 --block-size 64 \
  --max-blocks-per-seq 2048 --kind decode --target sm_90a --isa >"$OUT/sass-wg.txt" 2>&1
echo "rc=$?; $(grep -cE '^\s+/\*[0-9a-f]{4}\*/' "$OUT/sass-wg.txt") instructions"
grep -E '^\s+/\*[0-9a-f]{4}\*/' "$OUT/sass-wg.txt" |
  awk '{ op = $2; if (op ~ /^@/) op = $3; sub(/\..*/, "", op); n[op]++ } END { for (o in n) print n[o], o }' |
  sort -rn | head -25 | tr '\n' ' '
echo

# (d) optional: Nsight Compute on one decode and one reduce launch per
# variant (stall reasons, occupancy, memory throughput, the hottest SASS
# lines).
if [ -n "${UQ_ITER_NCU:-}" ] && command -v ncu >/dev/null; then
  for v in ${UQ_ITER_VARIANTS:-warpgroup matrix}; do
    say "ncu $v"
    UQJIT_VARIANT=$v timeout 120 ncu --clock-control none --section SpeedOfLight \
      --section Occupancy --section SchedulerStats --section WarpStateStats \
      --section SourceCounters --section InstructionStats --section MemoryWorkloadAnalysis \
      -k regex:'uq_(decode|reduce)' -c 2 \
      "$B" bench --batch 16 --seq 128k --heads 1:16 --iters 2 --warmup 1 --no-graph \
      --no-overhead --check-seqs 0 >"$OUT/ncu-$v.txt" 2>&1
    echo "rc=$?"
    grep -E "^  uq_|Duration|DRAM Throughput|Memory Throughput|Executed Ipc A|Issue Slots Busy|Achieved Occupancy|Theoretical Occ|Registers|No Eligible|Active Warps Per|Eligible Warps|Stall|stall" "$OUT/ncu-$v.txt" | head -60
  done
fi

for v in ${UQ_ITER_VARIANTS:-warpgroup matrix}; do
  for args in "--batch 16 --seq 128k,4k --heads 1:16 --iters 20 --warmup 3" \
    "--batch 4 --seq 2k --heads 1:16,2:8 --iters 50 --warmup 5" \
    "--batch 64 --seq 16k --heads 1:16,4:6 --iters 20 --warmup 3"; do
    say "bench $v: $args"
    # shellcheck disable=SC2086
    UQJIT_VARIANT=$v timeout 60 "$B" bench $args --no-overhead --check-seqs 1 >"$OUT/bench.log" 2>&1
    echo "rc=$?"
    grep -E "^(copy|device)|^ *[0-9]+ " "$OUT/bench.log" | head -8
    cat "$OUT/bench.log" >>"$OUT/bench-$v.log"
  done
done
say "done"
