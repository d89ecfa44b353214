#!/usr/bin/env python3
"""The picture of docs/BENCHMARKS.md: % of the device's copy bandwidth
against context length, one line per uqjit decode layer (each a
`uqjit bench --json` sweep) and one for the best SDPA backend: either
bench/peer_bench.py's JSON as it comes (each row's fastest correct
candidate) or rows already reduced to it (docs/data/sdpa-best-*.json).
Each line is measured against its own bytes: the 4-bit cache's for
uqjit, the bf16 cache's for SDPA. Every line must sweep one shape (batch
and heads) over context lengths, the same shape on the same device for
all; the title names both unless --title says otherwise.

Usage: scripts/plot-bench.py OUT.png --layer NAME=SWEEP.json ...
       [--peer PEER.json] [--title T]
Needs matplotlib (Debian's python3-matplotlib)."""
import argparse
import json
import sys


class PlotError(Exception):
    """Input the picture cannot be drawn from; the message says why."""


def load(path):
    with open(path) as f:
        return json.load(f)


def row_shape(r):
    return (r["batch"], r["hk"], r["qg"])


def one_shape(rows, path):
    """The one (batch, hk, qg) of a sweep's rows."""
    shapes = {row_shape(r) for r in rows}
    if len(shapes) != 1:
        raise PlotError("%s: %s, not one shape swept over context lengths" % (
            path, "no rows" if not shapes else "shapes " + ", ".join(
                "B=%d %d:%d" % s for s in sorted(shapes))))
    return shapes.pop()


def layer_points(path):
    """(seq, % of copy) of a `uqjit bench --json` sweep, its shape and its
    device; rows that were skipped or carry no figure are left out."""
    d = load(path)
    rows = [r for r in d["rows"] if not r.get("skipped") and r.get("pct_copy") is not None]
    shape = one_shape(rows, path)
    return sorted((r["seq"], r["pct_copy"]) for r in rows), shape, d.get("device")


def peer_points(path):
    """(seq, % of copy, backend/form) of the best SDPA candidate per row,
    the shape and the device. peer_bench's own rows count their bf16 bytes against the
    run's copy figure; reduced rows carry their bytes and copy figure."""
    d = load(path)
    pts, rows = [], []
    for r in d["rows"]:
        if "kv_bytes_bf16" in r:
            nbytes, copy_gbps = r["kv_bytes_bf16"], r["copy_gbps"]
        elif r.get("skipped") or r.get("best") is None:
            continue  # not run, or no candidate was correct
        else:
            nbytes, copy_gbps = r["kv_bytes"], d["copy_gbps"]
        gbps = nbytes / (r["us"] * 1e-6) / 1e9
        pts.append((r["seq"], 100.0 * gbps / copy_gbps, r["backend"] + "/" + r["form"]))
        rows.append(r)
    return sorted(pts), one_shape(rows, path), d.get("device")


def same(path, shape, device, shape0, device0):
    """Every line of the picture: one shape, measured on one device."""
    if shape != shape0:
        raise PlotError("%s sweeps B=%d %d:%d, the first layer B=%d %d:%d" % ((path,) + shape + shape0))
    if device != device0:
        raise PlotError("%s was measured on %s, the first layer on %s" % (path, device, device0))


def plot(out, layers, peer=None, title=None):
    """layers: [(name, sweep path)]; peer: a path or None."""
    lines, shape, device = [], None, None
    for name, path in layers:
        pts, s, dev = layer_points(path)
        if shape is not None:
            same(path, s, dev, shape, device)
        shape, device = s, dev
        lines.append((pts, "o-", "uqjit " + name))
    if peer:
        pts, s, dev = peer_points(peer)
        same(peer, s, dev, shape, device)
        lines.append((pts, "s--",
                      "best SDPA backend on a bf16 cache, 1024 bytes a token to uqjit's 272 (%s)"
                      % ", ".join(sorted({p[2] for p in pts}))))
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fig, ax = plt.subplots(figsize=(7, 5), dpi=120)
    for pts, style, label in lines:
        ax.plot([p[0] for p in pts], [p[1] for p in pts], style, label=label)
    ax.set_xscale("log", base=2)
    ax.set_xlabel("context length (tokens)")
    ax.set_ylabel("% of device-to-device copy bandwidth")
    ax.set_ylim(0, 110)
    ax.grid(True, alpha=0.3)
    ax.set_title(title or "decode on one %s, B=%d, %d:%d, head_dim 256" % (
        (device or "GPU",) + shape), fontsize=10)
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.16), ncol=2)
    fig.tight_layout()
    fig.savefig(out)
    plt.close(fig)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("out")
    ap.add_argument("--layer", action="append", default=[], help="NAME=SWEEP.json")
    ap.add_argument("--peer", help="bench/peer_bench.py's JSON, or rows reduced to the best")
    ap.add_argument("--title", help="default: decode on one DEVICE, B=N, HK:QG, head_dim 256")
    a = ap.parse_args(argv)
    if not a.layer:
        ap.error("at least one --layer NAME=SWEEP.json")
    layers = []
    for spec in a.layer:
        name, eq, path = spec.partition("=")
        if not eq or not name or not path:
            ap.error("--layer %r: expected NAME=SWEEP.json" % spec)
        layers.append((name, path))
    try:
        plot(a.out, layers, a.peer, a.title)
    except (OSError, ValueError, KeyError, PlotError) as e:
        msg = "missing field %s" % e if isinstance(e, KeyError) else str(e)
        print("plot-bench: %s" % msg, file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
