"""GPU tests of the Python binding with torch: vLLM's
flydsl_ultraquant_decode_attention signature against a torch (fp64)
implementation of FORMAT.md sections 2-5 written here, with a contiguous
query, a QKV-slice query, under CUDA graph capture and replay, and a
store -> decode round trip through uqjit's store kernel. Output buffers
are poisoned with NaN before every run; the bar is rel L2 < 1e-2 and no
NaN/Inf. Exit 77 (SKIP) without torch, CUDA or a uqjit device.

Run: UQJIT_LIBRARY=build/libuqjit.so PYTHONPATH=python \
     python3 tests/python/test_torch_gpu.py"""
import math
import sys
import traceback

SKIP = 77
TOL = 1e-2

try:
    import torch
except ImportError:
    print("SKIP: torch is not installed")
    sys.exit(SKIP)
if not torch.cuda.is_available():
    print("SKIP: torch sees no CUDA device")
    sys.exit(SKIP)

import uqjit  # noqa: E402
from uqjit import torch_ops  # noqa: E402

if uqjit.device_count() == 0:
    print("SKIP: uqjit finds no GPU device")
    sys.exit(SKIP)

DEV = torch.device("cuda", 0)
FP4 = torch.tensor([0, 0.5, 1, 1.5, 2, 3, 4, 6,
                    -0.0, -0.5, -1, -1.5, -2, -3, -4, -6], dtype=torch.float64)


# ---- the reference math in torch -------------------------------------

def hadamard64(n):
    h = torch.ones((1, 1), dtype=torch.float64)
    while h.shape[0] < n:
        h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)], 0)
    return h / math.sqrt(n)


def dequant(codes, scales):
    """[..., D/2] FP4 code bytes and [..., D/32] UE8M0 bytes -> fp64."""
    c = torch.stack([codes & 15, codes >> 4], -1).flatten(-2).long()
    vals = FP4.to(codes.device)[c]
    e = scales.double()
    s = torch.where(scales == 0, torch.zeros_like(e), torch.exp2(e - 127))
    return vals * s.repeat_interleave(32, -1)


def ref_decode(query, kv_cache, block_table, seq_lens, scale):
    """FORMAT.md section 5 in fp64 from the encoded cache."""
    B, Hq, D = query.shape
    _, BS, Hk, _ = kv_cache.shape
    qg = Hq // Hk
    H = hadamard64(D).to(query.device)
    q_rot = (query.double() @ H).float()
    q_hc = q_rot.clamp(-448, 448).to(torch.float8_e4m3fn).double()
    lens = seq_lens.tolist()
    out = torch.empty((B, Hq, D), dtype=torch.float64, device=query.device)
    g = D // 32
    for b in range(B):
        n = lens[b]
        nblk = (n + BS - 1) // BS
        blocks = block_table[b, :nblk].long()
        slots = kv_cache[blocks].reshape(nblk * BS, Hk, -1)[:n]
        K = dequant(slots[..., :D // 2], slots[..., D // 2:D // 2 + g])
        V = dequant(slots[..., D // 2 + g:D + g], slots[..., D + g:D + 2 * g])
        q = q_hc[b].view(Hk, qg, D)
        s = scale * torch.einsum("hgd,lhd->hgl", q, K)
        p = torch.softmax(s, -1)
        out[b] = torch.einsum("hgl,lhd->hgd", p, V).reshape(Hq, D)
    return out


def rel_l2(got, want):
    return ((got.double() - want).norm() / want.norm()).item()


# ---- problems --------------------------------------------------------

class Problem:
    def __init__(self, seed, B=3, Hq=16, Hk=2, D=256, BS=16, NBMAX=32,
                 dtype=torch.bfloat16):
        g = torch.Generator().manual_seed(seed)
        self.B, self.Hq, self.Hk, self.D, self.BS = B, Hq, Hk, D, BS
        self.NBMAX, self.dtype = NBMAX, dtype
        self.PS = (uqjit.slot_size(D) + 3) // 4 * 4
        self.NB = B * NBMAX + 5
        W = NBMAX * BS
        lens = torch.randint(1, W + 1, (B,), generator=g)
        lens[0] = W  # one full row
        self.seq_lens_cpu = lens.to(torch.int32)
        perm = torch.randperm(self.NB, generator=g)[:B * NBMAX]
        self.block_table_cpu = perm.view(B, NBMAX).to(torch.int32)
        # The tokens of every sequence and their slots.
        slots = []
        for b in range(B):
            for t in range(int(lens[b])):
                blk = int(self.block_table_cpu[b, t // BS])
                slots.append(blk * BS + t % BS)
        self.slot_mapping_cpu = torch.tensor(slots, dtype=torch.int64)
        T = len(slots)
        self.k_cpu = torch.randn((T, Hk, D), generator=g).to(dtype)
        self.v_cpu = torch.randn((T, Hk, D), generator=g).to(dtype)
        self.scale = 1.0 / math.sqrt(D)
        self.gen = g

    def cpu_cache(self):
        """The cache encoded by uqjit's CPU reference store."""
        cache = torch.zeros((self.NB, self.BS, self.Hk, self.PS),
                            dtype=torch.uint8)
        uqjit.reference_store(self.k_cpu.data_ptr(), self.v_cpu.data_ptr(),
                              self.slot_mapping_cpu.data_ptr(),
                              self.k_cpu.shape[0], cache.data_ptr(), self.NB,
                              self.BS, self.Hk, self.D,
                              "bf16" if self.dtype == torch.bfloat16
                              else "fp16", self.PS)
        return cache

    def device_inputs(self):
        return (self.cpu_cache().to(DEV), self.block_table_cpu.to(DEV),
                self.seq_lens_cpu.to(DEV))

    def randn_query(self, seq_stride_heads=None):
        """[B, Hq, D]: contiguous, or a slice of a wider QKV row."""
        B, Hq, D = self.B, self.Hq, self.D
        if seq_stride_heads is None:
            return torch.randn((B, Hq, D), generator=self.gen).to(
                self.dtype).to(DEV)
        qkv = torch.randn((B, seq_stride_heads * D), generator=self.gen).to(
            self.dtype).to(DEV)
        return qkv[:, :Hq * D].view(B, Hq, D)


def poisoned(shape, dtype):
    return torch.full(shape, float("nan"), dtype=dtype, device=DEV)


def judge(name, got, want, extra=""):
    finite = bool(torch.isfinite(got).all())
    err = rel_l2(got, want) if finite else float("nan")
    ok = finite and err < TOL
    print("  %-44s rel L2 %-10.3g finite %-5s %s%s" % (
        name, err, finite, "PASS" if ok else "FAIL", extra))
    return ok


def call(pr, query, cache, table, lens, out, **kw):
    return uqjit.flydsl_ultraquant_decode_attention(
        query, cache, table, lens, pr.scale, output_buf=out, **kw)


# ---- cases -----------------------------------------------------------

def case_contiguous(dtype, NBMAX, BS, seed):
    pr = Problem(seed, NBMAX=NBMAX, BS=BS, dtype=dtype)
    cache, table, lens = pr.device_inputs()
    q = pr.randn_query()
    out = poisoned(q.shape, dtype)
    holder = {}
    pit = torch_ops.hadamard(pr.D, dtype=dtype, device=DEV)
    got = call(pr, q, cache, table, lens, out, PiT=pit, buf_holder=holder)
    torch.cuda.synchronize()
    ok = got.data_ptr() == out.data_ptr()
    if not ok:
        print("  the output was not written into output_buf")
    if not holder.get(torch_ops._HOLDER_KEY):
        print("  buf_holder does not hold the workspace")
        ok = False
    want = ref_decode(q, cache, table, lens, pr.scale)
    return judge("contiguous %s W=%d" % (str(dtype)[6:], NBMAX * BS), out,
                 want) and ok


def case_qkv_slice():
    pr = Problem(11)
    cache, table, lens = pr.device_inputs()
    q = pr.randn_query(seq_stride_heads=pr.Hq + 2 * pr.Hk)
    assert q.stride(0) == (pr.Hq + 2 * pr.Hk) * pr.D and not q.is_contiguous()
    out = poisoned(q.shape, pr.dtype)
    call(pr, q, cache, table, lens, out)
    torch.cuda.synchronize()
    return judge("qkv slice (seq stride %d)" % q.stride(0), out,
                 ref_decode(q, cache, table, lens, pr.scale))


def case_last_stride_2():
    """vLLM's contiguous_query=False: every other element of a wider
    tensor, through the query prologue."""
    pr = Problem(16)
    cache, table, lens = pr.device_inputs()
    wide = torch.randn((pr.B, pr.Hq, 2 * pr.D), generator=pr.gen).to(
        pr.dtype).to(DEV)
    q = wide[:, :, ::2]
    assert q.stride(2) == 2
    out = poisoned(q.shape, pr.dtype)
    call(pr, q, cache, table, lens, out)
    torch.cuda.synchronize()
    return judge("last stride 2 (prologue)", out,
                 ref_decode(q.contiguous(), cache, table, lens, pr.scale))


def case_graph():
    pr = Problem(12)
    cache, table, lens = pr.device_inputs()
    qkv_heads = pr.Hq + 2 * pr.Hk
    q = pr.randn_query(seq_stride_heads=qkv_heads)  # the static input
    out = poisoned(q.shape, pr.dtype)
    call(pr, q, cache, table, lens, out)  # loads kernels, sizes workspace
    torch.cuda.synchronize()
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        call(pr, q, cache, table, lens, out)
    ok = True
    for r in range(3):
        q.copy_(pr.randn_query(seq_stride_heads=qkv_heads))
        out.fill_(float("nan"))
        g.replay()
        torch.cuda.synchronize()
        ok &= judge("graph replay %d" % r, out,
                    ref_decode(q, cache, table, lens, pr.scale))
    return ok


def case_graph_refuses_an_unseen_shape():
    pr = Problem(13, B=5)
    cache, table, lens = pr.device_inputs()
    q = pr.randn_query()
    out = poisoned(q.shape, pr.dtype)
    g = torch.cuda.CUDAGraph()
    msg = ""
    try:
        with torch.cuda.graph(g):
            call(pr, q, cache, table, lens, out)
    except Exception as e:  # noqa: the capture may wrap the error
        msg = "%s %s" % (e, e.__context__ or "")
    torch.cuda.synchronize()
    ok = "uqjit" in msg and "before capturing" in msg
    print("  %-44s %s (%s)" % ("capture of an unseen shape refused",
                               "PASS" if ok else "FAIL",
                               msg.strip()[:100] or "no error"))
    return ok


def case_store_roundtrip():
    pr = Problem(14, NBMAX=16, BS=32)
    T, Hk, D = pr.k_cpu.shape
    # K and V as slices of one [T, (Hq + 2 Hk) * D] projection, as vLLM
    # passes them: token stride larger than Hk * D.
    proj = torch.zeros((T, (pr.Hq + 2 * Hk) * D), dtype=pr.dtype)
    proj[:, pr.Hq * D:(pr.Hq + Hk) * D] = pr.k_cpu.reshape(T, Hk * D)
    proj[:, (pr.Hq + Hk) * D:] = pr.v_cpu.reshape(T, Hk * D)
    proj = proj.to(DEV)
    k = proj[:, pr.Hq * D:(pr.Hq + Hk) * D].view(T, Hk, D)
    v = proj[:, (pr.Hq + Hk) * D:].view(T, Hk, D)
    cache = torch.full((pr.NB, pr.BS, Hk, pr.PS), 0xEE, dtype=torch.uint8,
                       device=DEV)
    uqjit.store(k, v, cache, pr.slot_mapping_cpu.to(DEV))
    torch.cuda.synchronize()
    want_bytes = pr.cpu_cache()
    got = cache.cpu().view(-1, pr.PS)
    used = pr.slot_mapping_cpu.repeat_interleave(Hk) * Hk + \
        torch.arange(Hk).repeat(T)
    slot = uqjit.slot_size(D)
    diff = (got[used, :slot] != want_bytes.view(-1, pr.PS)[used, :slot])
    n_diff = int(diff.sum())
    print("  %-44s %d of %d bytes differ from the CPU store %s" % (
        "store (strided K/V) vs CPU reference store", n_diff, diff.numel(),
        "PASS" if n_diff == 0 else "FAIL"))
    table, lens = pr.block_table_cpu.to(DEV), pr.seq_lens_cpu.to(DEV)
    q = pr.randn_query()
    out = poisoned(q.shape, pr.dtype)
    call(pr, q, cache, table, lens, out)
    torch.cuda.synchronize()
    return judge("store -> decode", out,
                 ref_decode(q, cache, table, lens, pr.scale)) and n_diff == 0


def case_argument_checks():
    pr = Problem(15, B=1, NBMAX=4)
    cache, table, lens = pr.device_inputs()
    q = pr.randn_query()
    out = poisoned(q.shape, pr.dtype)
    ok = True
    try:
        call(pr, q, cache, table, lens, out, sinks=torch.zeros(pr.Hq,
                                                               device=DEV))
        ok = False
    except NotImplementedError:
        pass
    try:
        call(pr, q, cache, table, lens, out,
             PiT=torch.eye(pr.D, device=DEV, dtype=pr.dtype))
        ok = False
    except ValueError:
        pass
    print("  %-44s %s" % ("sinks -> NotImplementedError, bad PiT -> "
                          "ValueError", "PASS" if ok else "FAIL"))
    return ok


CASES = [
    ("contiguous bf16", lambda: case_contiguous(torch.bfloat16, 32, 16, 1)),
    ("contiguous bf16, long rows",
     lambda: case_contiguous(torch.bfloat16, 128, 64, 2)),
    ("contiguous fp16", lambda: case_contiguous(torch.float16, 32, 16, 3)),
    ("qkv slice", case_qkv_slice),
    ("last stride 2", case_last_stride_2),
    ("graph capture and replay", case_graph),
    ("store -> decode round trip", case_store_roundtrip),
    ("argument checks", case_argument_checks),
    ("graph capture of an unseen shape", case_graph_refuses_an_unseen_shape),
]


def main():
    print("uqjit %s from %s on %s (torch %s)" % (
        uqjit.version(), uqjit.library_path(),
        torch.cuda.get_device_name(DEV), torch.__version__))
    failed = []
    for name, fn in CASES:
        print("case: %s" % name)
        try:
            if not fn():
                failed.append(name)
        except Exception:
            traceback.print_exc()
            print("  FAIL (exception)")
            failed.append(name)
    print("%d of %d cases passed%s" % (
        len(CASES) - len(failed), len(CASES),
        "; failed: " + ", ".join(failed) if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
