#!/usr/bin/env bash
# A/B of kernel template variants in one device call. Each directory under
# $UQ_AB_DIR (default ab/, untracked, so it travels with the working tree
# and never lands) holds replacement files for templates/ (same sub-
# folders) or, under a lib/ folder of its own, for the library's sources
# (plan rules, say); for each, in
# name order and for UQ_AB_ROUNDS rounds (default 1; rounds interleave the
# variants, so that drift of the GPU's clock spreads over all of them):
# copy its files over templates/ (and lib/), rebuild uqjit, and run uqjit
# bench on the A/B shapes with every result checked against the double
# reference (--check-seqs 1) and a cache directory of its own. templates/
# and lib/ are restored at the end. A variant with a file that replaces
# nothing (ab/x/templates/sm90/... instead of ab/x/sm90/..., say, which
# would time the unchanged kernel) or that does not build is reported and
# skipped; a failed bench or reference check is reported with its log's
# tail. Then, per variant and shape, the median of its rounds.
#
# Environment: UQ_AB_DIR, UQ_AB_ROUNDS, UQ_AB_CLOCKS (below), UQ_AB_SHAPES
# (bench arguments, ';'-separated; default below), UQ_AB_S (seconds for all the benches,
# default 420), plus gpu-env.sh's OUT and UQ_GPU_BUILD. Builds with
# scripts/gpu-check.sh (no suites) when the build is missing. Needs .deps/ as gpu-check.sh does.
set -u
# shellcheck source=scripts/gpu-env.sh
. "$(dirname "$0")/gpu-env.sh"
t0=$(date +%s)
say() { printf '== %s (%s s)\n' "$*" "$(($(date +%s) - t0))"; }
dir=${UQ_AB_DIR:-ab}
rounds=${UQ_AB_ROUNDS:-1}
deadline=$((t0 + ${UQ_AB_S:-420}))
shapes=${UQ_AB_SHAPES:-"--batch 16 --seq 128k --heads 1:16 --iters 20 --warmup 3;\
--batch 64 --seq 16k --heads 1:16 --iters 20 --warmup 3;\
--batch 4 --seq 2k --heads 1:16 --iters 50 --warmup 5"}
[ -d "$dir" ] || { echo "gpu-ab: no variant directory $dir" >&2; exit 2; }

if [ ! -x "$B" ]; then
  say "build (gpu-check.sh, no suites)"
  UQ_GPU_BUILD=$build UQ_GPU_SUITES=none OUT=$OUT bash scripts/gpu-check.sh >"$OUT/ab-build.log" 2>&1
  echo "gpu-check rc=$?"
fi
uq_runtime_libs
root=$PWD
orig=$(mktemp -d)
mkdir -p "$orig/templates" "$orig/lib"
cp -a templates/. "$orig/templates"/
cp -a lib/. "$orig/lib"/
# Plain copies: the files get the time of the copy, so ninja rebuilds what
# depends on them (cp -a would keep older times).
put_back() {
  cp -R "$orig/templates"/. templates/
  cp -R "$orig/lib"/. lib/
  touch templates/*/*.hip lib/*/*.c
}
restore() {
  put_back
  rm -rf "$orig"
  ninja -C "$build" >/dev/null 2>&1
}
trap restore EXIT

# With UQ_AB_CLOCKS set, nvidia-smi samples the SM clock and the board
# power every 100 ms while each bench runs; the median clock and power
# over the samples at 80% or more of the run's peak power (the timed
# loops, not the compile or the CPU reference check) are printed per run
# and kept in $OUT/ab-clocks.txt, each run's samples in
# $OUT/ab-clk-NAME-rROUND-sSHAPE.txt, so that a variant that moves the
# clock under load shows it. The timed loop must last seconds for that
# (--iters 20000 at B=16/131072): 20 iterations are over before the first
# sample.
clk_pid=
clk_file=
clk_start() {
  [ -n "${UQ_AB_CLOCKS:-}" ] && command -v nvidia-smi >/dev/null || return 0
  clk_file=$OUT/ab-clk-$1.txt
  nvidia-smi --query-gpu=clocks.sm,power.draw --format=csv,noheader,nounits -lms 100 \
    >"$clk_file" 2>/dev/null &
  clk_pid=$!
}
clk_stop() {
  [ -n "$clk_pid" ] || return 0
  kill "$clk_pid" 2>/dev/null
  wait "$clk_pid" 2>/dev/null
  clk_pid=
  python3 - "$clk_file" "$1" <<'PY' | tee -a "$OUT/ab-clocks.txt" || true
import statistics, sys
rows = []
for line in open(sys.argv[1]):
    f = [x.strip() for x in line.split(",")]
    try:
        rows.append((float(f[0]), float(f[1])))
    except (ValueError, IndexError):
        pass
if rows:
    peak = max(p for _, p in rows)
    busy = [r for r in rows if r[1] >= 0.8 * peak]
    print(f"  clocks {sys.argv[2]}: SM {statistics.median(c for c, _ in busy):.0f} MHz, "
          f"{statistics.median(p for _, p in busy):.0f} W (median of {len(busy)} of "
          f"{len(rows)} samples at >= 80% of the peak {peak:.0f} W)")
PY
}

IFS=';' read -r -a shape_args <<<"$shapes"
res=$OUT/ab-results.txt
: >"$res"
[ -z "${UQ_AB_CLOCKS:-}" ] || : >"$OUT/ab-clocks.txt"
for ((round = 1; round <= rounds; ++round)); do
  for v in "$dir"/*/; do
    v=${v%/}
    name=${v##*/}
    [ "$(date +%s)" -lt "$deadline" ] || { echo "gpu-ab: out of time before $name"; break 2; }
    put_back
    stray=$(cd "$v" && find . -type f | sed 's|^\./||' | while read -r f; do
      case $f in
      lib/*) [ -f "$root/$f" ] ;;
      *) [ -f "$root/templates/$f" ] ;;
      esac || echo "$f"
    done)
    if [ -n "$stray" ]; then
      echo "gpu-ab: $name: files that replace nothing, variant skipped:" $stray
      continue
    fi
    if [ -d "$v/lib" ]; then
      cp -R "$v/lib"/. lib/
    fi
    find "$v" -mindepth 1 -maxdepth 1 -type d ! -name lib -exec cp -R {} templates/ \;
    # Only what the bench runs: the templates are embedded in the library
    # (unit tests of a variant's helpers may not build against it).
    if ! ninja -C "$build" cli/uqjit >"$OUT/ab-ninja-$name.log" 2>&1; then
      echo "gpu-ab: $name does not build"; tail -5 "$OUT/ab-ninja-$name.log"; continue
    fi
    si=0
    for args in "${shape_args[@]}"; do
      si=$((si + 1))
      say "$name round $round: $args"
      clk_start "$name-r$round-s$si"
      # shellcheck disable=SC2086
      UQJIT_CACHE_DIR=/tmp/uqjit-ab-$name timeout 90 "$B" bench $args --no-overhead \
        --check-seqs 1 >"$OUT/ab-run.log" 2>&1
      rc=$?
      clk_stop "$name round $round ($args)"
      cat "$OUT/ab-run.log" >>"$OUT/ab-$name.log"
      [ "$rc" = 0 ] || { echo "rc=$rc"; tail -3 "$OUT/ab-run.log"; }
      # B seq Hk QG P rot eager graph chain KV GB/s %copy rel_l2: one line
      # per shape.
      grep -E '^ *[0-9]+ +[0-9]+ +[0-9]+ +[0-9]+ ' "$OUT/ab-run.log" |
        awk -v n="$name" '{ printf "%s %s/%s/%s:%s %s %s %s %s\n", n, $1, $2, $3, $4, $7, $8, $9, $13 }' |
        tee -a "$res"
    done
  done
done

say "medians (variant shape eager_us graph_us chain_us) over $rounds round(s)"
python3 - "$res" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    f = line.split()
    if len(f) >= 5:
        runs[(f[0], f[1])].append(f[2:5])
med = lambda xs: statistics.median(float(x) for x in xs) if all(x != "-" for x in xs) else float("nan")
for (name, shape), rs in sorted(runs.items(), key=lambda kv: (kv[0][1], kv[0][0])):
    cols = " ".join(f"{med([r[c] for r in rs]):9.2f}" for c in range(3))
    print(f"{shape:18s} {name:10s} {cols}  ({len(rs)} runs)")
PY
