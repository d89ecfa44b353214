#!/usr/bin/env python3
"""The picture of docs/BENCHMARKS.md: % of the device's copy bandwidth
against context length, one line per uqjit decode layer (each a
`uqjit bench --json` sweep) and one for the best SDPA backend (rows of
bench/peer_bench.py's JSON reduced to the fastest correct candidate, as
docs/data/sdpa-best-*.json holds them). Each line is measured against its
own bytes: the 4-bit cache's for uqjit, the bf16 cache's for SDPA.

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
        gbps = r["kv_bytes_bf16"] / (r["us"] * 1e-6) / 1e9
        pts.append((r["seq"], 100.0 * gbps / r["copy_gbps"], r["backend"] + "/" + r["form"]))
    return sorted(pts)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--layer", action="append", default=[], help="NAME=SWEEP.json")
    ap.add_argument("--peer", help="best-SDPA rows (docs/data/sdpa-best-*.json)")
    ap.add_argument("--title", default="decode on one NVIDIA H200, B=16, 1:16, head_dim 256")
    a = ap.parse_args(argv)
    if not a.layer:
        ap.error("at least one --layer NAME=SWEEP.json")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=120)
    for spec in a.layer:
        name, _, path = spec.partition("=")
        pts, _ = layer_points(path)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "o-", label="uqjit " + name)
    if a.peer:
        pts = peer_points(a.peer)
        ax.plot([p[0] for p in pts], [p[1] for p in pts], "s--",
                label="best SDPA backend, bf16 cache (%s)" % ", ".join(sorted({p[2] for p in pts})))
    ax.set_xscale("log", base=2)
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("% of device-to-device copy bandwidth")
    ax.set_ylim(0, 110)
    ax.grid(True, alpha=0.3)
    ax.set_title(a.title, fontsize=10)
    ax.legend(fontsize=8, loc="lower right")
    fig.tight_layout()
    fig.savefig(a.out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
