#!/usr/bin/env python3
"""Peer baseline for `uqjit bench`: PyTorch scaled_dot_product_attention
decode on an equivalent bf16 KV cache, timed the same way (CUDA events
around each call, median after warm-up, rotating over enough KV copies
that the L2 holds nothing useful, optional CUDA graph replay: one graph
per call, and graphs of --chain calls for the per-call cost inside a
larger graph).

Independent of uqjit: needs only python3 + torch on a CUDA machine. Not
run in CI.

The peer at its best: every shape is timed with each SDPA backend
(flash, memory-efficient, cuDNN; math with --backends) forced through
torch.nn.attention.sdpa_kernel, and with PyTorch's own choice ("default"),
in both GQA forms, each checked against a float64 reference; the fastest
correct one is the row's result, the others are printed beside it. A
backend that refuses a shape or form is reported, not timed.

GQA forms: "reshape" views the query of one decode step, [B, Hq, D], as
[B, Hk, QG, D] -- each KV head's QG query heads become QG query rows of
one attention over that head's K/V (exactly GQA decode, no K/V
expansion); "gqa" uses enable_gqa=True on [B, Hq, 1, D].

Also prints the physical floor: bytes / device copy bandwidth (read +
write of one large torch copy, measured in the same run), for the bf16
cache and for the 4-bit UltraQuant cache (272 bytes per token per KV head
at D=256).
"""
import argparse
import contextlib
import json
import math
import statistics
import sys

import torch
import torch.nn.functional as F

D = 256
UQ_SLOT = 272  # UltraQuant bytes per (token, kv head) at D = 256


def parse_list(text, kilo=False):
    out = []
    for item in text.split(","):
        item = item.strip()
        mult = 1
        if kilo and item[-1:] in ("k", "K"):
            item, mult = item[:-1], 1024
        out.append(int(item) * mult)
    return out


def parse_heads(text):
    out = []
    for item in text.split(","):
        hk, qg = item.split(":")
        out.append((int(hk), int(qg)))
    return out


def copy_bandwidth(nbytes):
    """Read + write GB/s of a device-to-device copy, best of 5."""
    a = torch.empty(nbytes, dtype=torch.uint8, device="cuda").fill_(1)
    b = torch.empty_like(a)
    start = torch.cuda.Event(enable_timing=True)
    end = torch.cuda.Event(enable_timing=True)
    best = math.inf
    for i in range(6):
        torch.cuda.synchronize()
        start.record()
        b.copy_(a)
        end.record()
        end.synchronize()
        if i > 0:
            best = min(best, start.elapsed_time(end))
    del a, b
    torch.cuda.empty_cache()
    return 2.0 * nbytes / (best * 1e-3) / 1e9


# --backends names -> torch.nn.attention.SDPBackend members.
BACKENDS = {"flash": "FLASH_ATTENTION", "efficient": "EFFICIENT_ATTENTION",
            "cudnn": "CUDNN_ATTENTION", "math": "MATH"}
TOLERANCE = 1e-2  # relative L2 a candidate must meet to count


def backend_context(name):
    """Forces SDPA onto one backend ("default": PyTorch's own choice)."""
    if name == "default":
        return contextlib.nullcontext()
    from torch.nn.attention import SDPBackend, sdpa_kernel
    return sdpa_kernel(getattr(SDPBackend, BACKENDS[name]))


def first_line(e):
    text = str(e).strip()
    return text.splitlines()[0][:100] if text else type(e).__name__


def attend(q, k, v, form, scale):
    """One decode step. q: [B, Hq, D]; k, v: [B, Hk, S, D]."""
    b, hq, d = q.shape
    hk = k.shape[1]
    if form == "gqa":
        o = F.scaled_dot_product_attention(q.view(b, hq, 1, d), k, v,
                                           scale=scale, enable_gqa=True)
        return o.view(b, hq, d)
    o = F.scaled_dot_product_attention(q.view(b, hk, hq // hk, d), k, v,
                                       scale=scale)
    return o.reshape(b, hq, d)


def check(q, k, v, form, backend, scale):
    """Relative L2 of sequence 0 against float64 math."""
    with backend_context(backend):
        out = attend(q, k, v, form, scale)[0].double()
    hk = k.shape[1]
    qg = q.shape[1] // hk
    ref = torch.empty_like(out)
    for h in range(q.shape[1]):
        kh = k[0, h // qg].double()
        vh = v[0, h // qg].double()
        s = (kh @ q[0, h].double()) * scale
        p = torch.softmax(s, dim=0)
        ref[h] = p @ vh
    return (torch.linalg.norm(out - ref) / torch.linalg.norm(ref)).item()


def time_calls(fn_for, rotations, iters, warmup, graph_steps):
    """Median microseconds of one call, events around each call (eager when
    graph_steps is 0), or around each replay of a graph of graph_steps
    consecutive calls (each on the next rotation), divided by graph_steps:
    uqjit bench's method (cli/bench_shape.c)."""
    steps = max(1, graph_steps)
    if graph_steps:
        stream = torch.cuda.Stream()
        graphs = []
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for r in range(min(rotations, 3)):  # warm up outside capture
                fn_for(r)
        torch.cuda.current_stream().wait_stream(stream)
        ngraphs = min(-(-rotations // steps), iters + warmup)
        for g_index in range(ngraphs):
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for j in range(steps):
                    fn_for((g_index * steps + j) % rotations)
            graphs.append(g)
        run = lambda i: graphs[i % len(graphs)].replay()
    else:
        run = lambda i: fn_for(i % rotations)
    events = [(torch.cuda.Event(enable_timing=True),
               torch.cuda.Event(enable_timing=True)) for _ in range(iters)]
    for i in range(warmup + iters):
        if i >= warmup:
            events[i - warmup][0].record()
        run(i)
        if i >= warmup:
            events[i - warmup][1].record()
    torch.cuda.synchronize()
    return 1e3 * statistics.median(
        s.elapsed_time(e) for s, e in events) / steps


def fp8_status():
    """Whether SDPA runs a decode on an fp8 (e4m3) KV cache."""
    dt = getattr(torch, "float8_e4m3fn", None)
    if dt is None:
        return False, "this PyTorch has no float8_e4m3fn dtype"
    q = torch.randn(1, 1, 8, D, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(1, 1, 64, D, device="cuda").to(dt)
    try:
        F.scaled_dot_product_attention(q.to(dt), k, k)
        torch.cuda.synchronize()
    except Exception as e:  # noqa: BLE001 - any refusal means "no path"
        msg = str(e).strip().splitlines()[0][:120] if str(e) else type(e).__name__
        return False, "SDPA has no fp8 KV decode path (%s)" % msg
    return True, "SDPA accepted fp8 inputs"


def time_candidate(args, q, ks, vs, backend, form, scale, rot, use_graph,
                   nbytes, copy_gbps):
    """One backend in one form on a shape: its check, then its times (not
    timed when it refuses the shape or fails the check)."""
    cand = {"backend": backend, "form": form, "ok": False}
    try:
        rel = check(q[:1], ks[0][:1], vs[0][:1], form, backend, scale)
    except Exception as e:  # noqa: BLE001 - a refusal: this backend has no kernel here
        cand["note"] = "refused: " + first_line(e)
        return cand
    cand["rel_l2"] = rel
    if not rel < TOLERANCE:
        cand["note"] = "wrong: rel L2 %.2e" % rel
        return cand

    def fn(r):
        with backend_context(backend):
            return attend(q, ks[r], vs[r], form, scale)

    try:
        eager = time_calls(fn, rot, args.iters, args.warmup, 0)
        graph = (time_calls(fn, rot, args.iters, args.warmup, 1)
                 if use_graph else None)
        chain = (time_calls(fn, rot, args.iters, args.warmup, args.chain)
                 if use_graph and args.chain > 0 else None)
    except Exception as e:  # noqa: BLE001 - e.g. a backend that cannot be captured
        cand["note"] = "not timed: " + first_line(e)
        return cand
    us = graph if graph is not None else eager
    gbps = nbytes / (us * 1e3)
    cand.update(ok=True, eager_us=eager, graph_us=graph, chain_us=chain,
                us=us, gbps=gbps, pct_copy=100.0 * gbps / copy_gbps)
    return cand


def print_candidate(b, s, hk, qg, rot, kv_bytes, row, c):
    name = "%s/%s" % (c["backend"], c["form"])
    if not c["ok"]:
        print("%5d %7d %3d %3d %-18s %s" % (b, s, hk, qg, name, c["note"]))
        return
    print("%5d %7d %3d %3d %-18s %4d %10.2f %10s %10s %10.1f %9.1f %6.1f "
          "%10.2f %10.2f %9.2e" % (
              b, s, hk, qg, name, rot, c["eager_us"],
              "%.2f" % c["graph_us"] if c["graph_us"] is not None else "-",
              "%.2f" % c["chain_us"] if c["chain_us"] is not None else "-",
              kv_bytes / (1 << 20), c["gbps"], c["pct_copy"],
              row["floor_us"], row["uq_floor_us"], c["rel_l2"]))
    sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--batch", default="1,4,16,64")
    ap.add_argument("--seq", default="1k,4k,16k,64k,128k")
    ap.add_argument("--heads", default="1:16,2:8,4:6", help="HK:QG pairs")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--graph", dest="graph", action="store_true", default=None)
    ap.add_argument("--no-graph", dest="graph", action="store_false")
    ap.add_argument("--chain", type=int, default=16,
                    help="with graphs, also time graphs of N steps (0: off)")
    ap.add_argument("--form", choices=("both", "reshape", "gqa"),
                    default="both", help="GQA forms to try")
    ap.add_argument("--backends", default="default,flash,efficient,cudnn",
                    help="SDPA backends to try: default (PyTorch's choice), "
                         + ", ".join(BACKENDS))
    ap.add_argument("--max-mem-gb", type=float, default=16.0)
    ap.add_argument("--rotate-mb", type=int, default=200)
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args()
    if args.chain < 0:
        ap.error("--chain must be >= 0")
    backends = [b.strip() for b in args.backends.split(",") if b.strip()]
    for b in backends:
        if b != "default" and b not in BACKENDS:
            ap.error("--backends: unknown backend %r" % b)
    forms = ["reshape", "gqa"] if args.form == "both" else [args.form]
    candidates = [(b, f) for b in backends for f in forms]

    if not torch.cuda.is_available():
        print("peer_bench: needs a CUDA GPU", file=sys.stderr)
        return 1
    torch.manual_seed(1)
    dev = torch.cuda.get_device_name(0)
    max_mem = int(args.max_mem_gb * (1 << 30))
    copy_bytes = min(2 << 30, max_mem // 2)
    copy_gbps = copy_bandwidth(copy_bytes)
    fp8_ok, fp8_note = fp8_status()
    scale = 1.0 / math.sqrt(D)
    if not args.json:
        print("device:   %s, torch %s" % (dev, torch.__version__))
        print("copy:     %.1f GB/s device-to-device (read + write)" % copy_gbps)
        print("fp8 KV:   %s" % fp8_note)
        print("tried:    %s; fastest correct one (rel L2 < %g) kept per "
              "shape\n" % (", ".join("%s/%s" % c for c in candidates),
                           TOLERANCE))
        print("%5s %7s %3s %3s %-18s %4s %10s %10s %10s %10s %9s %6s %10s "
              "%10s %9s" % ("B", "seq", "Hk", "QG", "backend/form", "rot",
                            "eager_us", "graph_us", "chain_us", "KV_MiB",
                            "GB/s", "%copy", "floor_us", "uq_flr_us",
                            "rel_l2"))
        sys.stdout.flush()
    rows = []
    for b in parse_list(args.batch):
        for s in parse_list(args.seq, kilo=True):
            for hk, qg in parse_heads(args.heads):
                hq = hk * qg
                kv_bytes = 2 * b * hk * s * D * 2  # K and V, bf16
                io_bytes = 2 * b * hq * D * 2
                row = {"batch": b, "seq": s, "hk": hk, "qg": qg,
                       "kv_bytes": kv_bytes, "io_bytes": io_bytes,
                       "uq_kv_bytes": b * s * hk * UQ_SLOT}
                row["floor_us"] = (kv_bytes + io_bytes) / (copy_gbps * 1e3)
                row["uq_floor_us"] = (row["uq_kv_bytes"] + io_bytes) / (
                    copy_gbps * 1e3)
                if kv_bytes > max_mem:
                    row["skipped"] = True
                    row["note"] = "needs %.1f GiB > --max-mem-gb" % (
                        kv_bytes / (1 << 30))
                    rows.append(row)
                    if not args.json:
                        print("%5d %7d %3d %3d  skipped: %s" % (
                            b, s, hk, qg, row["note"]))
                    continue
                use_graph = args.graph if args.graph is not None else (
                    kv_bytes <= (64 << 20))
                chained = use_graph and args.chain > 1
                rot = max(1, math.ceil((args.rotate_mb << 20) / kv_bytes))
                # As uqjit bench: no more copies than the timed steps use.
                rot = min(rot, max(1, max_mem // kv_bytes),
                          (args.iters + args.warmup) *
                          (args.chain if chained else 1))
                q = torch.randn(b, hq, D, device="cuda", dtype=torch.bfloat16)
                ks = [torch.randn(b, hk, s, D, device="cuda",
                                  dtype=torch.bfloat16) for _ in range(rot)]
                vs = [torch.randn_like(ks[0]) for _ in range(rot)]
                row.update(skipped=False, rotations=rot, candidates=[])
                for backend, form in candidates:
                    cand = time_candidate(args, q, ks, vs, backend, form,
                                          scale, rot, use_graph,
                                          kv_bytes + io_bytes, copy_gbps)
                    row["candidates"].append(cand)
                    if not args.json:
                        print_candidate(b, s, hk, qg, rot, kv_bytes, row,
                                        cand)
                good = [c for c in row["candidates"] if c.get("ok")]
                best = min(good, key=lambda c: c["us"]) if good else None
                best_chain = min((c for c in good if c.get("chain_us")),
                                 key=lambda c: c["chain_us"], default=None)
                row["best"] = best
                row["best_chain"] = best_chain
                if best is not None:  # the row's result: the fastest peer
                    for key in ("eager_us", "graph_us", "chain_us", "us",
                                "gbps", "pct_copy", "rel_l2"):
                        row[key] = best[key]
                    row["backend"], row["form"] = best["backend"], best["form"]
                rows.append(row)
                del ks, vs, q
                torch.cuda.empty_cache()
                if not args.json:
                    print("%5d %7d %3d %3d best: %s%s" % (
                        b, s, hk, qg,
                        "%s/%s %.2f us" % (best["backend"], best["form"],
                                           best["us"])
                        if best else "none correct",
                        "; in a chain %s/%s %.2f us" % (
                            best_chain["backend"], best_chain["form"],
                            best_chain["chain_us"]) if best_chain else ""))
                    sys.stdout.flush()
    if args.json:
        json.dump({"device": dev, "torch": torch.__version__,
                   "copy_gbps": copy_gbps,
                   "candidates": ["%s/%s" % c for c in candidates],
                   "fp8": {"supported": fp8_ok, "note": fp8_note},
                   "rows": rows}, sys.stdout, indent=1)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
