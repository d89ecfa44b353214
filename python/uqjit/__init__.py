"""uqjit: Python binding (ctypes, no build step) of libuqjit, the run-time
specialized decode attention for the UltraQuant 4-bit KV cache.

Without torch: version, plan, key names, warm, Context and the CPU
reference. With torch (imported on first use): store, decode and
flydsl_ultraquant_decode_attention, vLLM's launcher signature."""
from ._lib import LibraryNotFound, library_path
from ._version import __version__
from .core import (CompileSummary, Context, PlanInfo, UqjitError, check,
                   deployment_keys, device_count, dtype_code, info_report,
                   kernel_source, key_name, make_shape, parse_key, plan,
                   plan_shape, reference_decode, reference_store, slot_size,
                   store_key, version, warm)

__all__ = [
    "__version__", "CompileSummary", "Context", "LibraryNotFound", "PlanInfo", "UqjitError",
    "check", "decode", "deployment_keys", "device_count", "dtype_code",
    "flydsl_ultraquant_decode_attention", "info_report", "kernel_source",
    "key_name", "library_path", "make_shape", "parse_key", "plan",
    "plan_shape", "reference_decode", "reference_store", "slot_size",
    "store", "store_key", "version", "warm",
]


def store(*args, **kwargs):
    """torch: see uqjit.torch_ops.store."""
    from . import torch_ops
    return torch_ops.store(*args, **kwargs)


def decode(*args, **kwargs):
    """torch: see uqjit.torch_ops.decode."""
    from . import torch_ops
    return torch_ops.decode(*args, **kwargs)


def flydsl_ultraquant_decode_attention(query, kv_cache, block_table,
                                       seq_lens, scale, PiT=None,
                                       max_seq_len=0, output_buf=None,
                                       buf_holder=None, max_num_kv_splits=32,
                                       sinks=None):
    """torch: vLLM's launcher signature; see uqjit.torch_ops."""
    from . import torch_ops
    return torch_ops.flydsl_ultraquant_decode_attention(
        query, kv_cache, block_table, seq_lens, scale, PiT, max_seq_len,
        output_buf, buf_holder, max_num_kv_splits, sinks)
