#!/usr/bin/env bash
# Nsight Compute profile of one warpgroup decode launch (B=16, 128k, 1:16
# unless UQ_PROF_ARGS says otherwise) on a GPU machine: stall reasons per
# issued instruction, pipe utilisation, and the per-SASS-instruction
# source page (stall samples, executed instructions) as CSV for reading
# off the machine. Needs a build from scripts/gpu-check.sh or
# scripts/gpu-iterate.sh ($UQ_GPU_BUILD, default build-gpu). Logs under $OUT.
set -u
# shellcheck source=scripts/gpu-env.sh
. "$(dirname "$0")/gpu-env.sh"
[ -x "$B" ] || { echo "gpu-profile: $B was not built" >&2; exit 2; }
uq_runtime_libs
command -v ncu >/dev/null || PATH=$PATH:/usr/local/cuda/bin
args=${UQ_PROF_ARGS:---batch 16 --seq 128k --heads 1:16}
rep=$OUT/prof
# shellcheck disable=SC2086
timeout "${UQ_PROF_S:-240}" ncu --clock-control none --set full --import-source no \
  --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' \
  -k regex:uq_decode -c 1 -f -o "$rep" \
  "$B" bench $args --iters 1 --warmup 0 --no-graph --no-overhead --check-seqs 0 >"$OUT/prof.log" 2>&1
echo "ncu rc=$?"
ncu -i "$rep.ncu-rep" --page details --print-details all >"$OUT/prof-details.txt" 2>&1
grep -E "Duration|Issue Slots Busy|Executed Ipc A|Registers Per|Achieved Active Warps" "$OUT/prof-details.txt" | head -8
ncu -i "$rep.ncu-rep" --page raw --csv \
  --metrics 'regex:smsp__average_warps_issue_stalled_.*_per_issue_active\.ratio' >"$OUT/prof-stalls.csv" 2>&1
# One "name value" pair per stall reason, largest first.
python3 - "$OUT/prof-stalls.csv" <<'PY' || true
import csv, sys
rows = list(csv.reader(open(sys.argv[1])))
hdr = next((r for r in rows if any("stalled" in c for c in r)), None)
if hdr is None:
    sys.exit("gpu-profile: no stall metrics in the report")
val = rows[rows.index(hdr) + 2]
pairs = [(h.split("stalled_")[1].split("_per_issue")[0], float(v.replace(",", "")))
         for h, v in zip(hdr, val) if "stalled" in h and v.replace(",", "").replace(".", "").isdigit()]
for name, v in sorted(pairs, key=lambda p: -p[1])[:14]:
    print(f"  stall {name:28s} {v:6.3f} cycles/issue")
PY
grep -iE "pipe|Utilization" "$OUT/prof-details.txt" | grep -E "%" | head -20
ncu -i "$rep.ncu-rep" --page source --print-source sass --csv >"$OUT/prof-sass.csv" 2>"$OUT/prof-sass.err"
echo "source page rc=$? ($(wc -l <"$OUT/prof-sass.csv") lines)"
rm -f "$rep.ncu-rep"
