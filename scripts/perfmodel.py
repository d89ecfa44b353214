#!/usr/bin/env python3
"""Static performance model of the AMD decode layers (docs/PERFMODEL.md).

For B=16, Hq=16, Hk=1 (QG 16), D=256 at 16k/32k/64k/131k tokens it reads
the plan (`uqjit plan --json`) and the compiled decode kernel's resources
and per-tile instruction mix (`uqjit dump --isa --json`, clang 22, no GPU)
and predicts decode + reduce + store time on the target's GPU (gfx950:
MI355X, gfx942: MI300X) as
    max(bytes / HBM bandwidth, issue cycles per CU / clock) + launches.
It also prints the resources at QG 6, 8, 16. Every constant is named below
with its source in docs/PERFMODEL.md. Run from the repository root after a
build: python3 scripts/perfmodel.py [--target gfx950|gfx942]
[--uqjit build/cli/uqjit] [--markdown]
"""
import argparse
import json
import math
import os
import subprocess
import sys

# Per target (docs/PERFMODEL.md, "Figures and sources").
TARGETS = {
    # MI355X.
    "gfx950": {
        "gpu": "MI355X",
        "hbm_bytes_per_s": 8.0e12,
        "cus": 256,
        "clock_hz": 2.4e9,
        # MFMA: the layer's 2 scaled 16x16x128 (65536 flop at the FP8
        # rate, 8192 flop/clk/CU = 2048 per SIMD: 32 cycles) and 16 bf16
        # 16x16x16 (8192 flop at 4096 flop/clk/CU = 1024 per SIMD: 8
        # cycles) per tile.
        "mfma_tile_cycles": 2 * 32 + 16 * 8,
        "mfma_tile_count": 18,
        # vLLM's FlyDSL kernel on MI355X (docs/KERNELS.md).
        "measured_us": {16384: 40.0, 32768: 55.1, 65536: 95.7, 131072: 179.0},
    },
    # MI300X (MI325X: the same CUs and clock, 6.0 TB/s).
    "gfx942": {
        "gpu": "MI300X",
        "hbm_bytes_per_s": 5.3e12,
        "hbm_alt": ("MI325X", 6.0e12),
        "cus": 304,
        "clock_hz": 2.1e9,
        # MFMA: the layer's 8 v_mfma_f32_16x16x32_fp8_fp8 (16384 flop at
        # 4096 flop/clk/CU = 1024 per SIMD: 16 cycles) and 16
        # v_mfma_f32_16x16x16_bf16 (8192 flop at 2048 flop/clk/CU = 512
        # per SIMD: 16 cycles) per tile: AMD's Matrix Instruction
        # Calculator, cdna3.
        "mfma_tile_cycles": 8 * 16 + 16 * 16,
        "mfma_tile_count": 24,
        "measured_us": {},
    },
}
SIMDS_PER_CU = 4
# Issue cycles of one wave64 instruction on one SIMD, by class.
CYCLES = {"vmem": 4, "lds": 4, "valu": 4, "salu": 1, "smem": 1,
          "wait": 0, "branch": 1, "other": 1}
LAUNCH_US = 4.0          # per kernel launch, an assumption (not measured)
LAUNCHES = 3             # decode, reduce, store
SLOT_BYTES = 272
SEQS = [16384, 32768, 65536, 131072]
LABEL = {16384: "16k", 32768: "32k", 65536: "64k", 131072: "131k"}
BATCH, HQ, HK, D, BLOCK = 16, 16, 1, 256, 64


def run_json(uqjit, args):
    env = dict(os.environ, UQJIT_AMD_COMPILER="clang", UQJIT_QUIET="1")
    out = subprocess.run([uqjit] + args, check=True, capture_output=True,
                         text=True, env=env).stdout
    return json.loads(out)


def shape_args(target, hq, hk, seq):
    return ["--batch", str(BATCH), "--q-heads", str(hq), "--kv-heads",
            str(hk), "--head-dim", str(D), "--block-size", str(BLOCK),
            "--max-blocks-per-seq", str(seq // BLOCK), "--target", target]


def decode_info(uqjit, target, hq, hk, seq):
    args = shape_args(target, hq, hk, seq)
    plan = run_json(uqjit, ["plan", "--json"] + args)
    kern = run_json(uqjit, ["dump", "--isa", "--json", "--kind", "decode"] +
                    args)
    return plan, kern[0]


def tile_cycles(t, k):
    mix = k["per_tile"]
    c = sum(CYCLES[name] * mix[name] for name in CYCLES)
    return c + t["mfma_tile_cycles"] * mix["mfma"] / t["mfma_tile_count"]


def predict(t, plan, k, seq, hq=HQ):
    p = plan["num_partitions"]
    qg = plan["query_group_size"]
    kv = BATCH * HK * seq * SLOT_BYTES
    # decode writes bf16 partial outputs + fp32 max/sum, reduce reads them
    # and writes the bf16 output; the query is read once.
    ws = BATCH * HK * p * qg * (D * 2 + 8)
    io = BATCH * hq * D * 2 * 2
    total_bytes = kv + 2 * ws + io
    floor_us = total_bytes / t["hbm_bytes_per_s"] * 1e6
    wgs = BATCH * HK * p
    tiles_per_wg = min(plan["tile_groups_per_partition"],
                       math.ceil(seq / 256 / p)) * 16
    waves = max(1, k.get("waves_per_cu", 1))
    busy_simds = min(SIMDS_PER_CU, waves)
    wg_per_cu = math.ceil(wgs / t["cus"])
    issue_cycles = wg_per_cu * tiles_per_wg * tile_cycles(t, k) / busy_simds
    issue_us = issue_cycles / t["clock_hz"] * 1e6
    launch_us = LAUNCHES * LAUNCH_US
    row = {"seq": seq, "P": p, "bytes": total_bytes, "floor_us": floor_us,
           "issue_us": issue_us, "launch_us": launch_us,
           "predicted_us": max(floor_us, issue_us) + launch_us,
           "measured_us": t["measured_us"].get(seq), "wg_per_cu": wg_per_cu,
           "tiles_per_wg": tiles_per_wg}
    if "hbm_alt" in t:
        row["floor_alt_us"] = total_bytes / t["hbm_alt"][1] * 1e6
    return row


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--target", default="gfx950", choices=sorted(TARGETS))
    ap.add_argument("--uqjit", default="build/cli/uqjit")
    ap.add_argument("--markdown", action="store_true")
    a = ap.parse_args()
    t = TARGETS[a.target]
    rows = []
    k0 = None
    for seq in SEQS:
        plan, k = decode_info(a.uqjit, a.target, HQ, HK, seq)
        k0 = k0 or k
        rows.append(predict(t, plan, k, seq))
    res = []
    for qg in (6, 8, 16):
        plan, k = decode_info(a.uqjit, a.target, qg, 1, 131072)
        res.append((qg, k, predict(t, plan, k, 131072, hq=qg)))
    if not a.markdown:
        json.dump({"kernel": k0, "rows": rows,
                   "resources": {str(q): k for q, k, _ in res},
                   "qg_131k": {str(q): r for q, _, r in res}}, sys.stdout,
                  indent=1)
        print()
        return
    print(f"Decode kernel at 131k: `{res[-1][1]['name']}`\n")
    print(f"Per-tile mix method: {k0.get('mix_method', 'unknown')}\n")
    print("| QG | VGPRs | AGPRs | SGPRs | LDS bytes | scratch | waves/CU |"
          " vmem | lds | mfma | valu | salu | smem | wait | branch |"
          " issue cycles/tile |")
    print("|---|" + "---|" * 15)
    for qg, k, _ in res:
        m = k.get("per_tile", {})
        print(f"| {qg} | {k['vgprs']} | {k['agprs']} | {k['sgprs']} |"
              f" {k['lds_bytes']} | {k['scratch_bytes']} |"
              f" {k.get('waves_per_cu', '?')} | " +
              " | ".join(f"{m.get(c, float('nan')):.2f}" for c in
                         ("vmem", "lds", "mfma", "valu", "salu", "smem",
                          "wait", "branch")) +
              f" | {tile_cycles(t, k):.0f} |")
    print()
    alt = t.get("hbm_alt")
    print(f"| context | P | bytes (MB) | HBM floor {t['gpu']} (us) |" +
          (f" floor {alt[0]} (us) |" if alt else "") +
          " issue bound (us) | launches (us) | predicted (us) |"
          " production measured (us) |")
    print("|---|" + "---|" * (8 if alt else 7))
    for r in rows:
        meas = r["measured_us"]
        print(f"| {LABEL[r['seq']]} | {r['P']} | {r['bytes'] / 1e6:.1f} |"
              f" {r['floor_us']:.1f} |" +
              (f" {r['floor_alt_us']:.1f} |" if alt else "") +
              f" {r['issue_us']:.1f} | {r['launch_us']:.1f} |"
              f" {r['predicted_us']:.1f} |"
              f" {f'{meas:.1f}' if meas else 'none'} |")
    print()
    print("Per query group at 131k (B = 16, Hk = 1, Hq = QG):\n")
    print("| QG | HBM floor (us) | issue bound (us) | predicted (us) |")
    print("|---|---|---|---|")
    for qg, _, r in res:
        print(f"| {qg} | {r['floor_us']:.1f} | {r['issue_us']:.1f} |"
              f" {r['predicted_us']:.1f} |")


if __name__ == "__main__":
    main()
