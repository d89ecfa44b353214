"""Loading libuqjit and the ctypes mirror of the structs and functions of
include/uqjit.h (and, for the device count and the info report,
include/uqjit_tools.h) that this package uses.

The library is looked for, in order:
  0. the path in UQJIT_LIBRARY, when set (an explicit choice, e.g. a build
     tree's library over an installed one; a missing path is reported and
     the search goes on);
  1. beside the package (python/uqjit/libuqjit.so*), then the libdir of the
     install the package belongs to (recorded in _libpath.py by meson
     install, resolved relative to this file first so a staged or relocated
     install still finds its own library);
  2. the system: ctypes.util.find_library('uqjit'), then libuqjit.so.0.
tests/python/test_layouts.py checks every struct here against the header.
"""
import ctypes
import ctypes.util
import glob
import os
import threading

from ctypes import (POINTER, c_char, c_char_p, c_double, c_float, c_int,
                    c_int32, c_int64, c_size_t, c_uint, c_uint8, c_uint32,
                    c_uint64, c_void_p)

UQ_TARGET_MAX = 48
UQ_PLAN_MAX_KERNELS = 3
UQ_REASON_MAX = 160

DTYPE_BF16, DTYPE_FP16, DTYPE_FP32 = 1, 2, 3
KERNEL_DECODE, KERNEL_REDUCE, KERNEL_PROLOGUE, KERNEL_STORE = 1, 2, 3, 4
KIND_NAMES = {KERNEL_DECODE: "decode", KERNEL_REDUCE: "reduce",
              KERNEL_PROLOGUE: "prologue", KERNEL_STORE: "store"}
STATUS_OK = 0


class SlotLayout(ctypes.Structure):
    _fields_ = [("head_dim", c_uint32), ("k_codes", c_uint32),
                ("k_scales", c_uint32), ("v_codes", c_uint32),
                ("v_scales", c_uint32), ("size", c_uint32)]


class Shape(ctypes.Structure):
    _fields_ = [("batch", c_int32), ("num_q_heads", c_int32),
                ("num_kv_heads", c_int32), ("head_dim", c_int32),
                ("block_size", c_int32), ("max_blocks_per_seq", c_int32),
                ("padded_slot", c_int32), ("max_num_kv_splits", c_int32),
                ("scale", c_float), ("has_sinks", c_int32),
                ("sliding_window", c_int32), ("q_dtype", c_int),
                ("q_stride_seq", c_int64), ("q_stride_head", c_int64),
                ("q_stride_dim", c_int64)]


class Key(ctypes.Structure):
    _fields_ = [("kind", c_uint32), ("dtype", c_uint32),
                ("head_dim", c_int32), ("num_kv_heads", c_int32),
                ("num_partitions", c_int32), ("max_blocks_per_seq", c_int32),
                ("query_group_size", c_int32), ("kv_block_size", c_int32),
                ("padded_slot", c_int32), ("fuse_qrot", c_int32),
                ("tile_groups_per_partition", c_int32), ("variant", c_int32),
                ("scale_e8", c_int64), ("stride_q_seq", c_int64),
                ("stride_q_head", c_int64),
                ("target", c_char * UQ_TARGET_MAX),
                ("stride_q_dim", c_int64)]


class Plan(ctypes.Structure):
    _fields_ = [("eligible", c_int32), ("reason", c_char * UQ_REASON_MAX),
                ("num_partitions", c_int32),
                ("tile_groups_per_partition", c_int32),
                ("query_group_size", c_int32), ("fuse_qrot", c_int32),
                ("padded_slot", c_int32), ("scale", c_float),
                ("decode_grid", c_uint32 * 3), ("reduce_grid", c_uint32 * 3),
                ("prologue_grid", c_uint32 * 3), ("block_threads", c_uint32),
                ("ws_segm_out", c_size_t), ("ws_segm_max", c_size_t),
                ("ws_segm_sum", c_size_t), ("ws_q_rot", c_size_t),
                ("workspace_bytes", c_size_t), ("num_kernels", c_int32),
                ("kernels", Key * UQ_PLAN_MAX_KERNELS)]


class DecodeArgs(ctypes.Structure):
    _fields_ = [("query", c_void_p), ("kv_cache", c_void_p),
                ("num_blocks", c_int64), ("block_table", c_void_p),
                ("seq_lens", c_void_p), ("out", c_void_p)]


class StoreArgs(ctypes.Structure):
    _fields_ = [("k", c_void_p), ("v", c_void_p),
                ("k_stride_token", c_int64), ("k_stride_head", c_int64),
                ("v_stride_token", c_int64), ("v_stride_head", c_int64),
                ("slot_mapping", c_void_p), ("num_tokens", c_int64),
                ("kv_cache", c_void_p), ("num_blocks", c_int64),
                ("block_size", c_int32), ("num_kv_heads", c_int32),
                ("head_dim", c_int32), ("padded_slot", c_int32),
                ("dtype", c_int)]


class ContextOptions(ctypes.Structure):
    _fields_ = [("target", c_char_p), ("device", c_int),
                ("cache_dir", c_char_p), ("use_disk_cache", c_int),
                ("variant", c_char_p)]


class CompileSummary(ctypes.Structure):
    _fields_ = [("keys", c_uint64), ("compiled", c_uint64),
                ("hits", c_uint64), ("failed", c_uint64),
                ("seconds", c_double)]


class Stats(ctypes.Structure):
    _fields_ = [("hits", c_uint64), ("misses", c_uint64),
                ("disk_hits", c_uint64), ("compiles", c_uint64),
                ("compile_seconds", c_double)]


# The C struct name of each mirror, for the layout test.
STRUCTS = {
    "uq_slot_layout": SlotLayout,
    "uq_shape": Shape,
    "uq_key": Key,
    "uq_plan": Plan,
    "uq_decode_args": DecodeArgs,
    "uq_store_args": StoreArgs,
    "uq_context_options": ContextOptions,
    "uq_compile_summary": CompileSummary,
    "uq_stats": Stats,
}

ProgressFn = ctypes.CFUNCTYPE(None, c_void_p, c_size_t, c_size_t,
                              POINTER(Key), c_int, c_int)

# name: (restype, argtypes)
_PROTOTYPES = {
    "uq_strerror": (c_char_p, [c_int]),
    "uq_err_name": (c_char_p, [c_int]),
    "uq_last_error": (c_char_p, []),
    "uq_version_string": (c_char_p, []),
    "uq_free": (None, [c_void_p]),
    "uq_slot_layout_get": (c_int, [c_int, POINTER(SlotLayout)]),
    "uq_slot_size": (c_size_t, [c_int]),
    "uq_fp4_value": (c_float, [c_uint]),
    "uq_ue8m0_value": (c_float, [c_uint8]),
    "uq_haircut_e4m3": (c_float, [c_float]),
    "uq_shape_init": (None, [POINTER(Shape)]),
    "uq_key_name": (c_int, [POINTER(Key), c_char_p, c_size_t]),
    "uq_key_parse": (c_int, [c_char_p, POINTER(Key)]),
    "uq_key_validate": (c_int, [POINTER(Key)]),
    "uq_plan_make": (c_int, [POINTER(Shape), c_char_p, POINTER(Plan)]),
    "uq_plan_make_variant": (c_int, [POINTER(Shape), c_char_p, c_char_p,
                                     POINTER(Plan)]),
    "uq_store_key": (c_int, [c_int, c_int, c_int, c_int, c_char_p,
                             POINTER(Key)]),
    "uq_reference_decode": (c_int, [POINTER(Shape), POINTER(DecodeArgs)]),
    "uq_reference_decode_f64": (c_int, [POINTER(Shape), POINTER(DecodeArgs),
                                        POINTER(c_double)]),
    "uq_reference_store": (c_int, [POINTER(StoreArgs)]),
    "uq_context_options_init": (None, [POINTER(ContextOptions)]),
    "uq_context_create": (c_int, [POINTER(ContextOptions),
                                  POINTER(c_void_p)]),
    "uq_context_destroy": (None, [c_void_p]),
    "uq_context_target": (c_char_p, [c_void_p]),
    "uq_context_plan": (c_int, [c_void_p, POINTER(Shape), POINTER(Plan)]),
    "uq_kernel_source": (c_int, [POINTER(Key), POINTER(c_void_p),
                                 POINTER(c_size_t)]),
    "uq_compile_keys": (c_int, [c_void_p, POINTER(Key), c_size_t, c_int,
                                ProgressFn, c_void_p,
                                POINTER(CompileSummary)]),
    "uq_get_stats": (c_int, [c_void_p, POINTER(Stats)]),
    "uq_decode": (c_int, [c_void_p, POINTER(Shape), POINTER(DecodeArgs),
                          c_void_p, c_size_t, c_void_p]),
    "uq_store": (c_int, [c_void_p, POINTER(StoreArgs), c_void_p]),
    "uq_device_count": (c_int, [POINTER(c_int)]),
    "uq_info_report": (c_int, [POINTER(c_void_p)]),
}


class LibraryNotFound(OSError):
    """No libuqjit could be loaded; the message lists what was tried."""


def _package_candidates():
    here = os.path.dirname(os.path.abspath(__file__))
    found = sorted(glob.glob(os.path.join(here, "libuqjit.so*")))
    try:
        from . import _libpath  # written by meson install
    except ImportError:
        return found
    libdir = _libpath.LIBDIR
    pkgdir = _libpath.PKGDIR
    # The install's libdir seen from where the package actually is (a
    # DESTDIR stage, a relocated tree), then the configured absolute one.
    rel = os.path.normpath(os.path.join(here, os.path.relpath(libdir, pkgdir)))
    for d in (rel, libdir):
        for name in ("libuqjit.so.0", "libuqjit.so"):
            found.append(os.path.join(d, name))
    return found


def _candidates():
    """(description, path or name) in search order."""
    out = []
    env = os.environ.get("UQJIT_LIBRARY")
    if env:
        out.append(("UQJIT_LIBRARY", env))
    out += [("beside the package", p) for p in _package_candidates()]
    sys_name = ctypes.util.find_library("uqjit")
    if sys_name:
        out.append(("system", sys_name))
    out.append(("system", "libuqjit.so.0"))
    return out


def _load():
    tried = []
    for how, path in _candidates():
        if os.sep in path and not os.path.exists(path):
            tried.append("%s: %s (missing)" % (how, path))
            continue
        try:
            return ctypes.CDLL(path), path
        except OSError as e:
            tried.append("%s: %s (%s)" % (how, path, e))
    raise LibraryNotFound("libuqjit not found; tried:\n  " +
                          "\n  ".join(tried) +
                          "\nset UQJIT_LIBRARY to the path of libuqjit.so")


_lock = threading.Lock()
_lib = None
_path = None


def lib():
    """The loaded library with every prototype declared (loaded once)."""
    global _lib, _path
    with _lock:
        if _lib is None:
            handle, path = _load()
            for name, (restype, argtypes) in _PROTOTYPES.items():
                fn = getattr(handle, name)
                fn.restype = restype
                fn.argtypes = argtypes
            _lib, _path = handle, path
        return _lib


def library_path():
    """The path (or name) the library was loaded from."""
    lib()
    return _path
