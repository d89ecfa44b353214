#!/usr/bin/env python3
"""The picture of docs/BENCHMARKS.md: % of the device's copy bandwidth
against context length, one line per uqjit decode layer (each a
`uqjit bench --json` sweep) and one for the best SDPA backend: either
bench/peer_bench.py's JSON as it comes (each row's fastest correct
candidate) or rows already reduced to it (docs/data/sdpa-best-*.json).
Each line is measured against its own bytes: the 4-bit cache's for
uqjit, the bf16 cache's for SDPA. The title names the device of the
first sweep unless --title says otherwise.

Usage: scripts/plot-bench.py OUT.png --layer NAME=SWEEP.json ...
       [--peer PEER.json] [--title T]
Needs matplotlib (Debian's python3-matplotlib)."""
import argparse
import json
import sys


def layer_points(path):
    d = json.load(open(path))
    pts = sorted((r["seq"], r["pct_copy"]) for r in d["rows"]
                 if not r.get("skipped") and r.get("pct_copy") is not None)
    return pts, d


def peer_points(path):
    d = json.load(open(path))
    pts = []
    for r in d["rows"]:
        if "kv_bytes_bf16" in r:  # reduced: one row per shape, its own copy figure
            nbytes, copy_gbps = r["kv_bytes_bf16"], r["copy_gbps"]
        elif r.get("skipped") or r.get("best") is None:
            continue  # peer_bench: not run, or no candidate was correct
        else:  # peer_bench: the row carries its fastest correct candidate
            nbytes, copy_gbps = r["kv_bytes"], d["copy_gbps"]
        gbps = nbytes / (r["us"] * 1e-6) / 1e9
        pts.append((r["seq"], 100.0 * gbps / copy_gbps, r["backend"] + "/" + r["form"]))
    return sorted(pts)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--layer", action="append", default=[], help="NAME=SWEEP.json")
    ap.add_argument("--peer", help="best-SDPA rows (docs/data/sdpa-best-*.json)")
    ap.add_argument("--title", help="default: decode on one DEVICE, B=16, 1:16, head_dim 256")
    a = ap.parse_args(argv)
    if not a.layer:
        ap.error("at least one --layer NAME=SWEEP.json")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 5), dpi=120)
    device = None
    for spec in a.layer:
        name, _, path = spec.partition("=")
        pts, d = layer_points(path)
        device = device or d.get("device")
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label="uqjit " + name)
    if a.peer:
        pts = peer_points(a.peer)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "s--",
                label="best SDPA backend on a bf16 cache, 1024 bytes a token to uqjit's 272 (%s)"
                % ", ".join(sorted({p[2] for p in pts})))
    ax.set_xscale("log", base=2)
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("% of device-to-device copy bandwidth")
    ax.set_ylim(0, 110)
    ax.grid(True, alpha=0.3)
    ax.set_title(a.title or "decode on one %s, B=16, 1:16, head_dim 256" % (device or "GPU"),
                 fontsize=10)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    fig.tight_layout()
    fig.savefig(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
