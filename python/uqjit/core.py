"""The torch-free part of the binding: errors, plans, keys, warming,
contexts and the CPU reference (store and decode on host buffers)."""
import ctypes
from ctypes import byref, c_double, c_int, c_size_t, c_void_p
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Tuple

from . import _lib as L

_DTYPES = {"bf16": L.DTYPE_BF16, "bfloat16": L.DTYPE_BF16,
           "fp16": L.DTYPE_FP16, "float16": L.DTYPE_FP16,
           "fp32": L.DTYPE_FP32, "float32": L.DTYPE_FP32}
_NAME_LEN = 512


class UqjitError(RuntimeError):
    """A negative status from libuqjit: code (e.g. -1), name ("UQ_EINVAL"),
    message (the status text and the library's detail)."""

    def __init__(self, code: int, name: str, message: str):
        super().__init__("%s (%d): %s" % (name, code, message))
        self.code = code
        self.name = name
        self.message = message


def _s(b) -> str:
    return b.decode("utf-8", "replace") if b is not None else ""


def check(status: int, what: str = "") -> int:
    """Raises UqjitError for a negative status; returns it otherwise."""
    if status >= 0:
        return status
    lib = L.lib()
    detail = _s(lib.uq_last_error())
    text = _s(lib.uq_strerror(status))
    msg = text + (": " + detail if detail else "")
    if what:
        msg = what + ": " + msg
    raise UqjitError(status, _s(lib.uq_err_name(status)), msg)


def version() -> str:
    """The loaded library's version ("0.1.0")."""
    return _s(L.lib().uq_version_string())


def dtype_code(dtype) -> int:
    """uq_dtype of "bf16" / "fp16" / "fp32" (or the code itself)."""
    if isinstance(dtype, int):
        return dtype
    try:
        return _DTYPES[str(dtype).lower()]
    except KeyError:
        raise ValueError("unknown dtype %r (bf16, fp16 or fp32)" % (dtype,))


def slot_size(head_dim: int) -> int:
    """Bytes of one slot (0 when head_dim is not a multiple of 32)."""
    return L.lib().uq_slot_size(head_dim)


def make_shape(batch, num_q_heads, num_kv_heads, head_dim, block_size,
               max_blocks_per_seq, padded_slot=0, max_num_kv_splits=0,
               scale=0.0, dtype="bf16", q_stride_seq=0, q_stride_head=0,
               has_sinks=False, sliding_window=0, q_stride_dim=0) -> L.Shape:
    """A uq_shape (uq_shape_init, then the fields given)."""
    s = L.Shape()
    L.lib().uq_shape_init(byref(s))
    s.batch, s.num_q_heads, s.num_kv_heads = batch, num_q_heads, num_kv_heads
    s.head_dim, s.block_size = head_dim, block_size
    s.max_blocks_per_seq, s.padded_slot = max_blocks_per_seq, padded_slot
    s.max_num_kv_splits, s.scale = max_num_kv_splits, float(scale or 0.0)
    s.q_dtype = dtype_code(dtype)
    s.q_stride_seq, s.q_stride_head = q_stride_seq, q_stride_head
    s.q_stride_dim = q_stride_dim
    s.has_sinks, s.sliding_window = int(bool(has_sinks)), sliding_window
    return s


def key_name(key: L.Key) -> str:
    """uq_key_name of a key."""
    buf = ctypes.create_string_buffer(_NAME_LEN)
    n = check(L.lib().uq_key_name(byref(key), buf, _NAME_LEN), "key name")
    if n >= _NAME_LEN:
        buf = ctypes.create_string_buffer(n + 1)
        check(L.lib().uq_key_name(byref(key), buf, n + 1), "key name")
    return _s(buf.value)


def parse_key(name: str) -> L.Key:
    """uq_key_parse: a key name back to the key."""
    key = L.Key()
    check(L.lib().uq_key_parse(name.encode(), byref(key)),
          "parse key %r" % name)
    return key


def store_key(head_dim: int, num_kv_heads: int, padded_slot: int = 0,
              dtype="bf16", target: Optional[str] = None) -> L.Key:
    """The store kernel's key for rows of dtype."""
    key = L.Key()
    check(L.lib().uq_store_key(head_dim, num_kv_heads, padded_slot,
                               dtype_code(dtype), _enc(target), byref(key)),
          "store key")
    return key


def kernel_source(key) -> str:
    """The generated source of a key (a Key or a key name)."""
    if isinstance(key, str):
        key = parse_key(key)
    src, n = c_void_p(), c_size_t()
    lib = L.lib()
    check(lib.uq_kernel_source(byref(key), byref(src), byref(n)), "source")
    try:
        return ctypes.string_at(src.value, n.value).decode()
    finally:
        lib.uq_free(src)


def _enc(s: Optional[str]):
    return s.encode() if s is not None else None


@dataclass
class PlanInfo:
    """uq_plan_make's decision, as Python values (`raw` is the uq_plan)."""
    eligible: bool
    reason: str
    target: Optional[str]
    num_partitions: int          # P
    tile_groups_per_partition: int  # TGPP
    query_group_size: int        # QG
    fuse_qrot: bool
    padded_slot: int
    scale: float
    block_threads: int
    decode_grid: Tuple[int, int, int]
    reduce_grid: Tuple[int, int, int]
    prologue_grid: Tuple[int, int, int]
    workspace_bytes: int
    workspace: Dict[str, int]    # byte offsets of segm_out/max/sum, q_rot
    kernels: List[str]           # key names: decode, reduce[, prologue]
    kinds: List[str]
    raw: L.Plan = field(repr=False)

    @property
    def P(self) -> int:
        return self.num_partitions

    @property
    def TGPP(self) -> int:
        return self.tile_groups_per_partition

    def keys(self) -> List[L.Key]:
        """Copies of the plan's kernel keys."""
        return [L.Key.from_buffer_copy(self.raw.kernels[i])
                for i in range(self.raw.num_kernels)]


def plan_shape(shape: L.Shape, target: Optional[str] = None,
               variant: Optional[str] = None) -> PlanInfo:
    """uq_plan_make_variant for a uq_shape: the decode layer `variant`
    names ("portable", "matrix", "warpgroup", "gfx950-emu", "auto" for the
    best; None: UQJIT_VARIANT). An ineligible shape gives eligible=False; a
    malformed one, or an unknown variant, raises UqjitError."""
    p = L.Plan()
    check(L.lib().uq_plan_make_variant(byref(shape), _enc(target),
                                       _enc(variant), byref(p)), "plan")
    return _plan_info(p, target)


def _plan_info(p: L.Plan, target: Optional[str]) -> PlanInfo:
    keys = [p.kernels[i] for i in range(p.num_kernels)]
    return PlanInfo(
        eligible=bool(p.eligible), reason=_s(p.reason),
        target=_s(keys[0].target) if keys else target,
        num_partitions=p.num_partitions,
        tile_groups_per_partition=p.tile_groups_per_partition,
        query_group_size=p.query_group_size, fuse_qrot=bool(p.fuse_qrot),
        padded_slot=p.padded_slot, scale=p.scale,
        block_threads=p.block_threads,
        decode_grid=tuple(p.decode_grid), reduce_grid=tuple(p.reduce_grid),
        prologue_grid=tuple(p.prologue_grid),
        workspace_bytes=p.workspace_bytes,
        workspace={"segm_out": p.ws_segm_out, "segm_max": p.ws_segm_max,
                   "segm_sum": p.ws_segm_sum, "q_rot": p.ws_q_rot},
        kernels=[key_name(k) for k in keys],
        kinds=[L.KIND_NAMES.get(k.kind, "unknown") for k in keys],
        raw=p)


def plan(batch, num_q_heads, num_kv_heads, head_dim, block_size,
         max_blocks_per_seq, target: Optional[str] = None,
         variant: Optional[str] = None, **shape_fields) -> PlanInfo:
    """Plans a decode shape (the fields of make_shape) for a target
    (None = gfx950) and a decode layer (see plan_shape)."""
    return plan_shape(make_shape(batch, num_q_heads, num_kv_heads, head_dim,
                                 block_size, max_blocks_per_seq,
                                 **shape_fields), target, variant)


def deployment_keys(num_q_heads, num_kv_heads, head_dim, block_size,
                    max_blocks_per_seq, batch_sizes, target: str,
                    store_dtypes=("bf16",), variant: Optional[str] = None,
                    **shape_fields) -> List[str]:
    """Key names a deployment needs on one target: each batch size's plan
    (with the decode layer `variant` names, see plan_shape) plus the store
    kernels (deduplicated, in order). Raises ValueError for an ineligible
    shape."""
    names: List[str] = []
    for b in batch_sizes:
        p = plan(b, num_q_heads, num_kv_heads, head_dim, block_size,
                 max_blocks_per_seq, target, variant, **shape_fields)
        if not p.eligible:
            raise ValueError("batch %d: not eligible: %s" % (b, p.reason))
        names += p.kernels
    for dt in store_dtypes:
        names.append(key_name(store_key(head_dim, num_kv_heads,
                                        shape_fields.get("padded_slot", 0),
                                        dt, target)))
    return list(dict.fromkeys(names))


@dataclass
class CompileSummary:
    keys: int
    compiled: int
    hits: int
    failed: int
    seconds: float


class Context:
    """A uq_context (closed by close() or the with statement).

    Context(target="sm_90a", device=-1) compiles without a GPU;
    Context(device=0) opens the device and uses its target. `variant`
    names the decode layer its plans and decodes use (see plan_shape);
    None takes UQJIT_VARIANT as it is now."""

    def __init__(self, target: Optional[str] = None, device: int = 0,
                 cache_dir: Optional[str] = None,
                 use_disk_cache: bool = True,
                 variant: Optional[str] = None):
        lib = L.lib()
        opts = L.ContextOptions()
        lib.uq_context_options_init(byref(opts))
        self._target_b = _enc(target)  # kept alive while the call runs
        self._cache_b = _enc(cache_dir)
        self._variant_b = _enc(variant)
        opts.target, opts.device = self._target_b, device
        opts.cache_dir, opts.use_disk_cache = self._cache_b, int(use_disk_cache)
        opts.variant = self._variant_b
        handle = c_void_p()
        check(lib.uq_context_create(byref(opts), byref(handle)),
              "create context")
        self._handle = handle
        self.device = device

    @property
    def handle(self) -> c_void_p:
        if self._handle is None:
            raise ValueError("the context is closed")
        return self._handle

    @property
    def target(self) -> str:
        return _s(L.lib().uq_context_target(self.handle))

    def close(self) -> None:
        if self._handle is not None:
            L.lib().uq_context_destroy(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass

    def plan_shape(self, shape: L.Shape) -> PlanInfo:
        """uq_context_plan: the plan uq_decode makes for a uq_shape on this
        context (its target and layer); size workspaces with it."""
        p = L.Plan()
        check(L.lib().uq_context_plan(self.handle, byref(shape), byref(p)),
              "plan")
        return _plan_info(p, self.target)

    def stats(self) -> Dict[str, float]:
        st = L.Stats()
        check(L.lib().uq_get_stats(self.handle, byref(st)), "stats")
        return {"hits": st.hits, "misses": st.misses,
                "disk_hits": st.disk_hits, "compiles": st.compiles,
                "compile_seconds": st.compile_seconds}

    def compile_keys(self, keys, jobs: int = 0,
                     progress=None) -> CompileSummary:
        """uq_compile_keys for Keys or key names. progress(done, total,
        name, status, from_cache) is called per key. Raises UqjitError
        when any key failed (after trying them all)."""
        keys = [parse_key(k) if isinstance(k, str) else k for k in keys]
        arr = (L.Key * len(keys))(*keys)
        summary = L.CompileSummary()
        cb = L.ProgressFn()
        if progress is not None:
            def _cb(_user, done, total, key, status, from_cache):
                progress(done, total, key_name(key.contents), status,
                         bool(from_cache))
            cb = L.ProgressFn(_cb)
        rc = L.lib().uq_compile_keys(self.handle, arr, len(keys), jobs, cb,
                                     None, byref(summary))
        check(rc, "compile keys")
        return CompileSummary(summary.keys, summary.compiled, summary.hits,
                              summary.failed, summary.seconds)


def warm(keys, target: Optional[str] = None, cache_dir: Optional[str] = None,
         jobs: int = 0, progress=None) -> CompileSummary:
    """Compiles (or finds in the cache) keys (Keys or names) without a GPU.
    Keys are grouped by their target (or `target` when given)."""
    keys = [parse_key(k) if isinstance(k, str) else k for k in keys]
    groups: Dict[str, List[L.Key]] = {}
    for k in keys:
        groups.setdefault(target or _s(k.target), []).append(k)
    total = CompileSummary(0, 0, 0, 0, 0.0)
    for tgt, group in groups.items():
        with Context(target=tgt, device=-1, cache_dir=cache_dir) as ctx:
            s = ctx.compile_keys(group, jobs, progress)
        total = CompileSummary(total.keys + s.keys,
                               total.compiled + s.compiled,
                               total.hits + s.hits, total.failed + s.failed,
                               total.seconds + s.seconds)
    return total


def device_count() -> int:
    """GPUs of the runtime uqjit finds (0 without one)."""
    n = c_int()
    check(L.lib().uq_device_count(byref(n)), "device count")
    return n.value


def info_report() -> str:
    """uq_info_report: compilers, runtimes, devices, cache directories."""
    text = c_void_p()
    check(L.lib().uq_info_report(byref(text)), "info")
    try:
        return ctypes.string_at(text.value).decode("utf-8", "replace")
    finally:
        L.lib().uq_free(text)


# ---- the CPU reference on host buffers -------------------------------

def _addr(buf, writable=False) -> int:
    """The address of a host buffer: a ctypes object, any object with a
    writable buffer (bytearray, array.array, numpy array), or an int
    address. Read-only buffers (bytes) are refused: ctypes cannot take
    their address without a copy."""
    if buf is None:
        return 0
    if isinstance(buf, int):
        return buf
    if isinstance(buf, ctypes._SimpleCData) or isinstance(
            buf, (ctypes.Array, ctypes.Structure)):
        return ctypes.addressof(buf)
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(buf))
    except TypeError as e:
        raise TypeError("need a writable buffer (bytearray, array.array, "
                        "ctypes array): %s" % e)


def reference_store(k, v, slot_mapping, num_tokens, kv_cache, num_blocks,
                    block_size, num_kv_heads, head_dim, dtype="bf16",
                    padded_slot=0, k_strides=(0, 0), v_strides=(0, 0)) -> None:
    """uq_reference_store: encodes num_tokens K/V rows ([T, Hk, D] of
    dtype, raw 16-bit patterns for bf16/fp16) into the host cache at the
    int64 slot_mapping slots (negative: skipped)."""
    a = L.StoreArgs()
    a.k, a.v = _addr(k), _addr(v)
    a.k_stride_token, a.k_stride_head = k_strides
    a.v_stride_token, a.v_stride_head = v_strides
    a.slot_mapping, a.num_tokens = _addr(slot_mapping), num_tokens
    a.kv_cache, a.num_blocks = _addr(kv_cache), num_blocks
    a.block_size, a.num_kv_heads, a.head_dim = block_size, num_kv_heads, head_dim
    a.padded_slot, a.dtype = padded_slot, dtype_code(dtype)
    check(L.lib().uq_reference_store(byref(a)), "reference store")


def reference_decode(shape: L.Shape, query, kv_cache, num_blocks,
                     block_table, seq_lens, out=None, out64=None) -> None:
    """uq_reference_decode on host buffers: query [B, Hq, D] of the
    shape's dtype (strides from the shape), int32 block_table and
    seq_lens; writes `out` ([B, Hq, D] of the dtype) and/or `out64` (fp64
    [B, Hq, D], e.g. array('d'))."""
    a = L.DecodeArgs()
    a.query, a.kv_cache, a.num_blocks = _addr(query), _addr(kv_cache), num_blocks
    a.block_table, a.seq_lens = _addr(block_table), _addr(seq_lens)
    a.out = _addr(out)
    lib = L.lib()
    if out64 is not None:
        p64 = ctypes.cast(_addr(out64), ctypes.POINTER(c_double))
        check(lib.uq_reference_decode_f64(byref(shape), byref(a), p64),
              "reference decode")
    if out is not None or out64 is None:
        check(lib.uq_reference_decode(byref(shape), byref(a)),
              "reference decode")
