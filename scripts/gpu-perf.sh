#!/usr/bin/env bash
# The decode-performance round in one device call (each step capped so
# the whole stays under 600 s, a GPU machine's limit per command):
#   build     scripts/gpu-check.sh, no suites (build-gpu)
#   check     gpu.decode for the device's default layer (UQ_TEST_VARIANT
#             default), every case against the double reference
#   race      compute-sanitizer (UQ_PERF_RACE_TOOLS, default racecheck) of
#             gpu.decode's fused-query tests on the default layer, the
#             long sequences cut to 4097 tokens (UQ_PERF_RACE_S seconds,
#             default 90): the quick check of a kernel that moves a
#             barrier, in the same call as its A/B (the full pass is
#             scripts/gpu-sanitize.sh)
#   ab        scripts/gpu-ab.sh over the variant directories in ab/
#             (UQ_PERF_AB_SHAPES: the A/B shapes, served and pool fills)
#   binding   bench/binding_bench.py, the Python call with vLLM's
#             arguments, beside `uqjit bench` on the same shapes
#             (UQ_PERF_SHAPES)
#   ncu       Nsight Compute counters of one decode launch per shape of
#             UQ_PERF_NCU_SHAPES: warp instructions executed, duration,
#             DRAM throughput, issue activity; instructions per token and
#             kv head printed
#   short     the short-context grid (B 1,4,8 x seq 1k,2k,4k x 1:16, 2:8,
#             4:6), one step in a chain of 16 graph steps
#   sweep     % of copy against context length for the plot
#             (scripts/plot-bench.py), served fill: one JSON per layer of
#             UQ_PERF_SWEEP_LAYERS (default warpgroup matrix portable) and
#             one of peer_bench on the same shapes, under $OUT
#   suite     scripts/gpu-check.sh with the gpu suite (every layer)
#   headline  uqjit bench --json on the headline shapes of docs/BENCHMARKS.md
#             (B=4/16k/2:8 as a step in a chain of 16 graph steps)
#   profile   scripts/gpu-profile.sh on UQ_PROF_ARGS (stall reasons, pipes,
#             executed instructions per SASS line)
#   peer      bench/peer_bench.py on UQ_PERF_SHAPES and the short grid
# UQ_PERF_STEPS picks the steps (default "build check ab binding ncu").
# Logs and JSON under $OUT. Needs .deps/ as gpu-check.sh does.
set -u
# shellcheck source=scripts/gpu-env.sh
. "$(dirname "$0")/gpu-env.sh"
t0=$(date +%s)
say() { printf '== %s (%s s)\n' "$*" "$(($(date +%s) - t0))"; }
steps=" ${UQ_PERF_STEPS:-build check ab binding ncu} "
has() { case $steps in *" $1 "*) return 0 ;; esac; return 1; }
shapes=${UQ_PERF_SHAPES:-"--batch 16 --seq 128k --heads 1:16;--batch 64 --seq 16k --heads 1:16"}
IFS=';' read -r -a shape_args <<<"$shapes"

if has build; then
  say "build"
  UQ_GPU_BUILD=$build UQ_GPU_SUITES=none OUT=$OUT timeout 240 bash scripts/gpu-check.sh \
    >"$OUT/build.log" 2>&1
  echo "build rc=$?"
  tail -3 "$OUT/build.log"
fi
uq_runtime_libs
[ -x "$B" ] || { echo "gpu-perf: $B was not built" >&2; exit 2; }
command -v ncu >/dev/null || PATH=$PATH:/usr/local/cuda/bin

if has suite; then
  say "gpu suite, every layer"
  UQ_GPU_BUILD=$build UQ_GPU_SUITES=gpu OUT=$OUT timeout "${UQ_PERF_SUITE_S:-240}" \
    bash scripts/gpu-check.sh >"$OUT/suite.log" 2>&1
  echo "gpu suite rc=$?"
  grep -E "^(== variant|worst)|FAILED|non-finite|^Ok:|^Fail:|^Skipped:" "$OUT/suite.log" | head -30
fi

if has headline; then
  say "headline shapes"
  for args in "--batch 16 --seq 128k,32k --heads 1:16" "--batch 64 --seq 16k --heads 1:16" \
    "--batch 64 --seq 4k --heads 4:6" "--batch 4 --seq 16k --heads 2:8 --graph --chain 16"; do
    # shellcheck disable=SC2086
    timeout 90 "$B" bench $args --iters 30 --warmup 5 --no-overhead --check-seqs 1 --json \
      >"$OUT/headline-$(echo $args | tr -dc '0-9a-z' | cut -c1-30).json" 2>>"$OUT/headline.err"
    echo "rc=$? $args"
  done
fi

if has check; then
  say "gpu.decode, default layer"
  UQ_TEST_VARIANT=default UQ_TESTDATA=$PWD/tests/data UQ_SOURCE_ROOT=$PWD UQJIT_QUIET=1 \
    timeout "${UQ_PERF_CHECK_S:-150}" "$build/tests/runtime/test_decode" >"$OUT/check.log" 2>&1
  echo "gpu.decode rc=$?"
  grep -E "^(== variant|worst)|FAILED|non-finite|\[  PASSED|\[  FAILED" "$OUT/check.log" | head -20
fi

if has race; then
  say "compute-sanitizer, gpu.decode's fused-query tests"
  race_s=${UQ_PERF_RACE_S:-90}
  UQ_GPU_BUILD=$build UQ_SAN_TOOLS=${UQ_PERF_RACE_TOOLS:-racecheck} UQ_SAN_RUNS="decode:decode_fused*" \
    UQ_SAN_S=$race_s UQ_SAN_LONG_LEN=4097 OUT=$OUT timeout $((race_s + 30)) \
    bash scripts/gpu-sanitize.sh 2>&1 | tail -5
fi

if has ab; then
  say "A/B"
  UQ_AB_S=${UQ_PERF_AB_S:-200} UQ_AB_SHAPES=${UQ_PERF_AB_SHAPES:-"--batch 16 --seq 128k --heads 1:16 --iters 20 --warmup 3 --fill served;\
--batch 16 --seq 128k --heads 1:16 --iters 20 --warmup 3 --fill pool;\
--batch 64 --seq 16k --heads 1:16 --iters 20 --warmup 3 --fill served;\
--batch 4 --seq 2k --heads 1:16 --iters 50 --warmup 5 --fill served"} \
    OUT=$OUT bash scripts/gpu-ab.sh 2>&1 | tail -30
fi

if has binding; then
  for args in "${shape_args[@]}"; do
    say "uqjit bench and the binding: $args"
    # shellcheck disable=SC2086
    timeout 60 "$B" bench $args --iters 20 --warmup 3 --graph --chain 0 --no-overhead \
      --check-seqs 1 --json >"$OUT/bench-$(echo $args | tr -dc '0-9a-z')-uqjit.json" 2>"$OUT/bench.err"
    echo "uqjit bench rc=$?"
    python3 - "$OUT/bench-$(echo $args | tr -dc '0-9a-z')-uqjit.json" <<'PY' || tail -3 "$OUT/bench.err"
import json, sys
for r in json.load(open(sys.argv[1]))["rows"]:
    print("  uqjit bench  B %(batch)s seq %(seq)s %(hk)s:%(qg)s eager %(eager_us).2f graph %(graph_us).2f rel %(rel_l2).2e" % r)
PY
    # shellcheck disable=SC2086
    UQJIT_LIBRARY=$build/libuqjit.so PYTHONPATH=python timeout 90 \
      python3 bench/binding_bench.py $args --iters 20 --warmup 3 2>&1 | tail -3
  done
fi

if has ncu; then
  for args in "${shape_args[@]}"; do
    say "ncu: $args"
    # shellcheck disable=SC2086
    timeout 120 ncu --clock-control none -k regex:uq_decode -c 1 --csv --metrics \
      smsp__inst_executed.sum,gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,launch__grid_size \
      "$B" bench $args --iters 1 --warmup 0 --no-graph --no-overhead --check-seqs 0 \
      >"$OUT/ncu-$(echo $args | tr -dc '0-9a-z').csv" 2>&1
    echo "ncu rc=$?"
    python3 - "$OUT/ncu-$(echo $args | tr -dc '0-9a-z').csv" "$args" <<'PY' || true
import csv, re, sys
rows = [r for r in csv.reader(open(sys.argv[1])) if len(r) > 10]
hdr = next(r for r in rows if "Metric Name" in r)
im, iv, iu = hdr.index("Metric Name"), hdr.index("Metric Value"), hdr.index("Metric Unit")
m = {r[im]: (r[iv], r[iu]) for r in rows[rows.index(hdr) + 1:]}
for k, (v, u) in sorted(m.items()):
    print("  %-62s %s %s" % (k, v, u))
a = sys.argv[2].split()
def arg(n):
    return a[a.index(n) + 1]
seq = arg("--seq")
seq = int(seq[:-1]) * 1024 if seq.endswith("k") else int(seq)
hk = int(arg("--heads").split(":")[0])
inst = float(m["smsp__inst_executed.sum"][0].replace(",", ""))
print("  warp instructions per token per kv head: %.1f" % (inst / (int(arg("--batch")) * seq * hk)))
PY
  done
fi

if has short; then
  say "short context, chain of 16 graph steps"
  timeout "${UQ_PERF_SHORT_S:-150}" "$B" bench --batch 1,4,8 --seq 1k,2k,4k --heads 1:16,2:8,4:6 \
    --iters 30 --warmup 5 --graph --chain 16 --no-overhead --check-seqs 1 --json \
    >"$OUT/short.json" 2>"$OUT/short.err"
  echo "short rc=$?"
fi

if has sweep; then
  sweep_shape="--batch 16 --seq 1k,4k,16k,32k,64k,128k --heads 1:16"
  for layer in ${UQ_PERF_SWEEP_LAYERS:-warpgroup matrix portable}; do
    say "sweep for the plot: $layer"
    # shellcheck disable=SC2086
    timeout "${UQ_PERF_SWEEP_S:-150}" "$B" bench --variant "$layer" $sweep_shape \
      --iters 10 --warmup 2 --no-overhead --check-seqs 1 --json \
      >"$OUT/sweep-$layer.json" 2>"$OUT/sweep-$layer.err"
    echo "sweep $layer rc=$?"
  done
  if uq_torch_gpu; then
    say "sweep for the plot: the SDPA backends"
    # shellcheck disable=SC2086
    timeout "${UQ_PERF_PEER_S:-120}" python3 bench/peer_bench.py $sweep_shape --iters 10 \
      --warmup 2 --json >"$OUT/sweep-sdpa.json" 2>"$OUT/sweep-sdpa.err"
    echo "sweep sdpa rc=$?"
  fi
fi
if has profile; then
  say "profile"
  UQ_GPU_BUILD=$build OUT=$OUT timeout 150 bash scripts/gpu-profile.sh 2>&1 | tail -30
fi

if has peer && uq_torch_gpu; then
  IFS=';' read -r -a peer_extra <<<"${UQ_PERF_PEER_EXTRA:-}"
  for args in "${shape_args[@]}" "${peer_extra[@]}" "--batch 1,4,8 --seq 1k,2k,4k --heads 1:16,2:8,4:6"; do
    say "peer_bench $args"
    # shellcheck disable=SC2086
    timeout "${UQ_PERF_PEER_S:-120}" python3 bench/peer_bench.py $args --json \
      >"$OUT/peer-$(echo $args | tr -dc '0-9a-z' | cut -c1-40).json" 2>>"$OUT/peer.err"
    echo "peer rc=$?"
  done
fi

# At most 8 files come back from the GPU machine: everything in one archive.
say "done"
(cd "$OUT" && tar czf /tmp/gpu-perf.tgz . && find . -mindepth 1 -delete && mv /tmp/gpu-perf.tgz .)
