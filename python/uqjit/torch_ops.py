"""store and decode on torch CUDA tensors, the workspace pool, and a
drop-in for vLLM's flydsl_ultraquant_decode_attention. torch is imported
on first use only, so the rest of the package works without it."""
import math
import threading
from ctypes import byref, c_void_p
from typing import Dict, Optional, Tuple

from . import _lib as L
from .core import Context, check, make_shape

_lock = threading.Lock()
_contexts: Dict[int, Context] = {}
# (plan-relevant shape, device, dtype) -> uint8 workspace tensor
_workspaces: Dict[tuple, object] = {}
# Workspaces outgrown by a larger batch: kept alive, since CUDA graphs
# captured earlier still point into them.
_retired = []
# shape tuple -> (uq_shape, workspace bytes) of shapes already run once
_shapes: Dict[tuple, Tuple[L.Shape, int]] = {}
# PiT tensors already found to be the Hadamard matrix
_hadamard_ok: Dict[tuple, bool] = {}
_HOLDER_KEY = "uqjit_workspace"


def _torch():
    import torch  # noqa: lazy on purpose
    return torch


def _dtype_code(dtype) -> int:
    torch = _torch()
    codes = {torch.bfloat16: L.DTYPE_BF16, torch.float16: L.DTYPE_FP16}
    if dtype not in codes:
        raise TypeError("uqjit: query/K/V dtype %s is not bf16 or fp16" % dtype)
    return codes[dtype]


def _capturing() -> bool:
    return bool(_torch().cuda.is_current_stream_capturing())


def _stream_ptr(device) -> c_void_p:
    return c_void_p(_torch().cuda.current_stream(device).cuda_stream)


def context(device=None) -> Context:
    """The shared uqjit context of a CUDA device (made on first use)."""
    torch = _torch()
    index = torch.device("cuda", torch.cuda.current_device()).index \
        if device is None else torch.device(device).index
    if index is None:
        index = torch.cuda.current_device()
    with _lock:
        ctx = _contexts.get(index)
        if ctx is None:
            if _capturing():
                raise RuntimeError("uqjit: first use of device %d inside a "
                                   "CUDA graph capture; run one call before "
                                   "capturing" % index)
            ctx = Context(device=index)
            _contexts[index] = ctx
        return ctx


def _require(cond, msg):
    if not cond:
        raise ValueError("uqjit: " + msg)


def store(key, value, kv_cache, slot_mapping, ctx: Optional[Context] = None):
    """Encodes K/V rows ([T, Hk, D] bf16/fp16, last stride 1) into the
    paged cache (uint8 [num_blocks, block_size, Hk, padded_slot]) at the
    int64 slot_mapping [T] (negative: skipped), on the current stream."""
    _require(key.dim() == 3 and value.shape == key.shape,
             "key and value must both be [T, Hk, D]")
    _require(key.dtype == value.dtype, "key and value dtypes differ")
    _require(key.stride(2) == 1 and value.stride(2) == 1,
             "key/value rows must be contiguous (last stride 1)")
    _require(kv_cache.dim() == 4 and kv_cache.dtype == _torch().uint8,
             "kv_cache must be uint8 [num_blocks, block_size, Hk, slot]")
    _require(kv_cache.is_contiguous(), "kv_cache must be contiguous")
    _require(slot_mapping.dtype == _torch().int64 and
             slot_mapping.is_contiguous(),
             "slot_mapping must be a contiguous int64 tensor")
    ctx = ctx or context(kv_cache.device)
    a = L.StoreArgs()
    a.k, a.v = key.data_ptr(), value.data_ptr()
    a.k_stride_token, a.k_stride_head = key.stride(0), key.stride(1)
    a.v_stride_token, a.v_stride_head = value.stride(0), value.stride(1)
    a.slot_mapping, a.num_tokens = slot_mapping.data_ptr(), key.shape[0]
    a.kv_cache, a.num_blocks = kv_cache.data_ptr(), kv_cache.shape[0]
    a.block_size, a.num_kv_heads = kv_cache.shape[1], kv_cache.shape[2]
    a.head_dim, a.padded_slot = key.shape[2], kv_cache.shape[3]
    a.dtype = _dtype_code(key.dtype)
    _require(key.shape[1] == kv_cache.shape[2],
             "key has %d heads, the cache %d" % (key.shape[1],
                                                  kv_cache.shape[2]))
    check(L.lib().uq_store(ctx.handle, byref(a), _stream_ptr(kv_cache.device)),
          "store")


def _shape_of(query, kv_cache, block_table, scale, max_num_kv_splits, ctx):
    """(uq_shape, workspace bytes, pool key) of a call, planned once per
    distinct shape (planning refuses ineligible shapes with the reason)."""
    B, Hq, D = query.shape
    NB, BS, Hk, PS = kv_cache.shape
    dt = _dtype_code(query.dtype)
    tup = (B, Hq, Hk, D, BS, block_table.shape[1], PS, max_num_kv_splits,
           float(scale), dt, query.stride(0), query.stride(1),
           str(query.device), query.stride(2))
    hit = _shapes.get(tup)
    if hit is None:
        if _capturing():
            raise RuntimeError(
                "uqjit: decode shape (batch %d, q strides %s) first seen "
                "inside a CUDA graph capture; run it once before capturing "
                "(its kernels must be loaded and its workspace allocated)"
                % (B, tuple(query.stride())))
        s = make_shape(B, Hq, Hk, D, BS, block_table.shape[1], PS,
                       max_num_kv_splits, scale, dt, query.stride(0),
                       query.stride(1),
                       q_stride_dim=query.stride(2) if query.stride(2) != 1
                       else 0)
        p = ctx.plan_shape(s)
        if not p.eligible:
            raise ValueError("uqjit: shape not eligible: " + p.reason)
        hit = (s, p.workspace_bytes)
        _shapes[tup] = hit
    pool_key = tup[1:9] + tup[9:10] + tup[12:13]  # all but batch, strides
    return hit[0], hit[1], pool_key


def _workspace(pool_key, nbytes, device, buf_holder):
    """The pooled workspace for pool_key, grown outside capture only."""
    torch = _torch()
    pool = _workspaces
    if isinstance(buf_holder, dict):
        pool = buf_holder.setdefault(_HOLDER_KEY, {})
    elif buf_holder is not None:
        if getattr(buf_holder, _HOLDER_KEY, None) is None:
            setattr(buf_holder, _HOLDER_KEY, {})
        pool = getattr(buf_holder, _HOLDER_KEY)
    buf = pool.get(pool_key)
    if buf is not None and buf.numel() >= nbytes:
        return buf
    if _capturing():
        raise RuntimeError(
            "uqjit: CUDA graph capture needs a %d-byte decode workspace but "
            "%s allocated before capture; run the largest batch once before "
            "capturing" % (nbytes, "%d bytes were" % buf.numel()
                           if buf is not None else "none was"))
    buf = torch.empty(max(nbytes, 256), dtype=torch.uint8, device=device)
    if buf.data_ptr() % 256:
        raise RuntimeError("uqjit: the allocator returned a workspace that "
                           "is not 256-byte aligned")
    old = pool.get(pool_key)
    if old is not None:
        _retired.append(old)
    pool[pool_key] = buf
    return buf


def decode(query, kv_cache, block_table, seq_lens, scale=None, out=None,
           max_num_kv_splits=32, buf_holder=None,
           ctx: Optional[Context] = None):
    """Decode attention on the current stream. query [B, Hq, D] bf16/fp16
    (any non-negative strides, vLLM's contiguous_query=False views with a
    last stride of 2 included: those go through the query prologue),
    kv_cache uint8 [num_blocks,
    block_size, Hk, padded_slot], block_table int32 [B, N], seq_lens int32
    [B]. Writes and returns out ([B, Hq, D], allocated when None)."""
    torch = _torch()
    _require(query.dim() == 3 and min(query.stride()) >= 0,
             "query must be [B, Hq, D] with non-negative strides")
    _require(kv_cache.dim() == 4 and kv_cache.dtype == torch.uint8 and
             kv_cache.is_contiguous(),
             "kv_cache must be a contiguous uint8 [num_blocks, block_size, "
             "Hk, slot] tensor")
    B = query.shape[0]
    _require(block_table.dtype == torch.int32 and block_table.dim() == 2 and
             block_table.shape[0] >= B and block_table.is_contiguous(),
             "block_table must be a contiguous int32 [B, N] tensor")
    _require(seq_lens.dtype == torch.int32 and seq_lens.numel() >= B and
             seq_lens.is_contiguous(),
             "seq_lens must be a contiguous int32 [B] tensor")
    if scale is None:
        scale = 1.0 / math.sqrt(query.shape[2])
    ctx = ctx or context(query.device)
    shape, nbytes, pool_key = _shape_of(query, kv_cache, block_table, scale,
                                        max_num_kv_splits, ctx)
    if out is None:
        out = torch.empty(query.shape, dtype=query.dtype, device=query.device)
    else:
        _require(out.dtype == query.dtype and out.shape[0] >= B and
                 tuple(out.shape[1:]) == tuple(query.shape[1:]),
                 "output_buf must be [>=B, Hq, D] of the query dtype")
        out = out[:B]
        _require(out.is_contiguous(), "output_buf must be contiguous")
    ws = _workspace(pool_key, nbytes, query.device, buf_holder)
    a = L.DecodeArgs()
    a.query, a.kv_cache = query.data_ptr(), kv_cache.data_ptr()
    a.num_blocks = kv_cache.shape[0]
    a.block_table, a.seq_lens = block_table.data_ptr(), seq_lens.data_ptr()
    a.out = out.data_ptr()
    check(L.lib().uq_decode(ctx.handle, byref(shape), byref(a),
                            c_void_p(ws.data_ptr()), ws.numel(),
                            _stream_ptr(query.device)), "decode")
    return out


def hadamard(n: int, dtype=None, device=None):
    """The Sylvester Hadamard matrix of order n normalised by 1/sqrt(n)."""
    torch = _torch()
    _require(n > 0 and n & (n - 1) == 0, "order %d is not a power of two" % n)
    h = torch.ones((1, 1), dtype=torch.float64)
    while h.shape[0] < n:
        h = torch.cat([torch.cat([h, h], 1), torch.cat([h, -h], 1)], 0)
    h = h / math.sqrt(n)
    return h.to(dtype=dtype or torch.float32, device=device)


def check_pit(PiT, head_dim: int) -> None:
    """Raises ValueError unless PiT is the normalised Sylvester Hadamard
    matrix of order head_dim (the rotation the cache was written with).
    Checked once per tensor version: the check reads the device, so it
    cannot run under capture."""
    tag = (PiT.data_ptr(), tuple(PiT.shape), str(PiT.dtype),
           str(PiT.device), PiT._version)
    if _hadamard_ok.get(tag):
        return
    if tuple(PiT.shape) != (head_dim, head_dim):
        raise ValueError("uqjit: PiT is %s, expected (%d, %d)"
                         % (tuple(PiT.shape), head_dim, head_dim))
    if _capturing():
        raise RuntimeError("uqjit: PiT first seen inside a CUDA graph "
                           "capture; call once before capturing")
    ref = hadamard(head_dim, device=PiT.device)
    err = (PiT.float() - ref).abs().max().item()
    if not err <= 1e-2 / math.sqrt(head_dim):
        raise ValueError(
            "uqjit: PiT is not the normalised Sylvester Hadamard matrix of "
            "order %d (max deviation %g); uqjit's cache format rotates K "
            "with exactly that matrix" % (head_dim, err))
    _hadamard_ok[tag] = True


def flydsl_ultraquant_decode_attention(query, kv_cache, block_table,
                                       seq_lens, scale, PiT=None,
                                       max_seq_len=0, output_buf=None,
                                       buf_holder=None, max_num_kv_splits=32,
                                       sinks=None):
    """Drop-in for vLLM's launcher of the same name. max_seq_len is accepted
    and unused (sizing follows the block table, as in vLLM); sinks are not
    supported (NotImplementedError, as vLLM's)."""
    if sinks is not None:
        raise NotImplementedError(
            "attention sinks are not supported by the UltraQuant decode path")
    if PiT is not None:
        check_pit(PiT, query.shape[-1])
    return decode(query, kv_cache, block_table, seq_lens, scale=scale,
                  out=output_buf, max_num_kv_splits=max_num_kv_splits,
                  buf_holder=buf_holder)


def release() -> None:
    """Drops the pooled workspaces and the shared contexts (no decode may
    be in flight, and no CUDA graph that ran one may be replayed)."""
    with _lock:
        _workspaces.clear()
        del _retired[:]
        _shapes.clear()
        for ctx in _contexts.values():
            ctx.close()
        _contexts.clear()
