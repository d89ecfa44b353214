#!/usr/bin/env python3
"""The call vLLM makes, timed: uqjit's Python binding
(`uqjit.flydsl_ultraquant_decode_attention`, with vLLM's arguments: the
query, the paged uint8 cache, the int32 block table and sequence lengths,
the scale, the rotation matrix PiT, max_seq_len, an output buffer, a
buffer holder and max_num_kv_splits) on a cache written the way a served
model writes it (every token's K/V rows their own data, encoded by the
store kernel into blocks scattered over a pool a quarter larger than the
batch needs, stale bytes elsewhere; K with outlier channels, V rows
scaled by 2^-3 .. 2^3: the same distribution as `uqjit bench --fill
served`, see cli/bench_fill.c).

Per shape: one call checked against uqjit's double-precision CPU reference
on the first sequence (rel L2 < 1e-2, no NaN/Inf, output poisoned first),
then the median of --iters calls timed with CUDA events, eager and as a
CUDA graph replay of one call (vLLM captures its decode step), so that
the numbers line up with `uqjit bench`'s eager_us and graph_us on the
same shapes.

Run: UQJIT_LIBRARY=build/libuqjit.so PYTHONPATH=python \\
     python3 bench/binding_bench.py --batch 16 --seq 128k --heads 1:16
Exit 77 without torch/CUDA; 1 when a check fails."""
import argparse
import array
import json
import math
import statistics
import sys

SKIP = 77
D = 256
STALE = 0xA5


def parse_seq(s):
    out = []
    for t in s.split(","):
        t = t.strip().lower()
        out.append(int(t[:-1]) * 1024 if t.endswith("k") else int(t))
    return out


def parse_heads(s):
    out = []
    for t in s.split(","):
        hk, qg = t.split(":")
        out.append((int(hk), int(qg)))
    return out


def pool_blocks(used):
    """Blocks of the cache: the batch's and a quarter more (as bench_fill.c)."""
    return used + used // 4 + 1


def served_cache(torch, uqjit, B, seq, hk, bs, mb, gen, dev):
    """The paged cache, its block table and the encoded rows' slots."""
    from uqjit import core
    slot = core.slot_size(D)
    padded = (slot + 3) // 4 * 4
    nblocks = pool_blocks(B * mb)
    cache = torch.full((nblocks, bs, hk, padded), STALE, dtype=torch.uint8, device=dev)
    perm = torch.randperm(nblocks, generator=gen, device="cpu")[: B * mb]
    table = perm.view(B, mb).to(torch.int32).to(dev)
    kchan = torch.exp2(0.75 * torch.randn(hk, D, generator=gen)).to(dev)
    step = 8192
    tokens = B * seq
    for t0 in range(0, tokens, step):
        n = min(step, tokens - t0)
        idx = torch.arange(t0, t0 + n, device=dev)
        b, t = idx // seq, idx % seq
        blk = table[b, t // bs].long()
        slots = blk * bs + t % bs
        k = (torch.randn(n, hk, D, device=dev) * kchan).to(torch.bfloat16)
        e = torch.randint(-3, 4, (n, hk, 1), device=dev).float()
        v = (torch.randn(n, hk, D, device=dev) * torch.exp2(e)).to(torch.bfloat16)
        uqjit.store(k, v, cache, slots)
    torch.cuda.synchronize()
    return cache, table


def check_first(torch, uqjit, out, query, cache, table, seq, hk, qg, bs, mb, scale):
    """rel L2 of sequence 0 against uq_reference_decode_f64."""
    from uqjit import core
    blocks = cache[table[0].long()].contiguous().cpu()  # [mb, bs, hk, padded]
    host_cache = bytearray(blocks.numpy().tobytes())
    host_table = array.array("i", range(mb))
    lens = array.array("i", [seq])
    q = query[:1].contiguous().cpu().view(torch.int16).numpy().tobytes()
    qbuf = bytearray(q)
    shape = core.make_shape(1, hk * qg, hk, D, bs, mb, cache.shape[3], 32, scale,
                            core.dtype_code("bf16"), hk * qg * D, D)
    ref = array.array("d", bytes(8 * hk * qg * D))
    core.reference_decode(shape, qbuf, host_cache, mb, host_table, lens, out64=ref)
    r = torch.tensor(ref, dtype=torch.float64)
    o = out[0].double().cpu().flatten()
    bad = int((~torch.isfinite(o)).sum())
    rel = float((o - r).norm() / r.norm())
    return rel, bad


def time_eager(torch, fn, iters, warmup):
    for _ in range(warmup):
        fn()
    ev = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True))
          for _ in range(iters)]
    for a, b in ev:
        a.record()
        fn()
        b.record()
    torch.cuda.synchronize()
    return 1e3 * statistics.median(a.elapsed_time(b) for a, b in ev)


def time_graph(torch, fn, iters, warmup):
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        fn()  # loads the kernels and sizes the workspace outside capture
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return time_eager(torch, g.replay, iters, warmup)


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--batch", default="16")
    ap.add_argument("--seq", default="128k")
    ap.add_argument("--heads", default="1:16")
    ap.add_argument("--block-size", type=int, default=64)
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args(argv)
    try:
        import torch
    except ImportError:
        print("SKIP: torch is not installed")
        return SKIP
    if not torch.cuda.is_available():
        print("SKIP: torch sees no CUDA device")
        return SKIP
    import uqjit
    from uqjit import torch_ops
    dev = torch.device("cuda", 0)
    gen = torch.Generator().manual_seed(a.seed)
    torch.manual_seed(a.seed)
    rows, ok = [], True
    if not a.json:
        print("%5s %7s %3s %3s %10s %10s %10s" % ("B", "seq", "Hk", "QG", "eager_us",
                                               "graph_us", "rel_l2"))
    for B in [int(x) for x in a.batch.split(",")]:
        for seq in parse_seq(a.seq):
            for hk, qg in parse_heads(a.heads):
                bs = a.block_size
                mb = (seq + bs - 1) // bs
                cache, table = served_cache(torch, uqjit, B, seq, hk, bs, mb, gen, dev)
                query = torch.randn(B, hk * qg, D, device=dev).to(torch.bfloat16)
                lens = torch.full((B,), seq, dtype=torch.int32, device=dev)
                out = torch.full_like(query, float("nan"))
                scale = 1.0 / math.sqrt(D)
                pit = torch_ops.hadamard(D, device=dev)
                holder = {}

                def call():
                    uqjit.flydsl_ultraquant_decode_attention(
                        query, cache, table, lens, scale, PiT=pit, max_seq_len=seq,
                        output_buf=out, buf_holder=holder, max_num_kv_splits=32)

                call()
                torch.cuda.synchronize()
                rel, bad = check_first(torch, uqjit, out, query, cache, table, seq, hk, qg,
                                       bs, mb, scale)
                good = rel < 1e-2 and bad == 0
                ok &= good
                eager = time_eager(torch, call, a.iters, a.warmup)
                graph = time_graph(torch, call, a.iters, a.warmup)
                row = dict(batch=B, seq=seq, hk=hk, qg=qg, eager_us=eager, graph_us=graph,
                           rel_l2=rel, nonfinite=bad)
                rows.append(row)
                if not a.json:
                    print("%5d %7d %3d %3d %10.2f %10.2f %10.3e%s" % (
                        B, seq, hk, qg, eager, graph, rel, "" if good else "  FAILED"))
                    sys.stdout.flush()
                del cache, table
                torch.cuda.empty_cache()
    if a.json:
        print(json.dumps({"device": torch.cuda.get_device_name(0), "rows": rows}))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
