"""Plugging uqjit into vLLM's UltraQuant decode (--kv-cache-dtype
ultraquant_4bit).

vLLM's UltraQuant backend imports three names from
vllm.v1.attention.ops.flydsl_ultraquant_decode:

- flydsl_ultraquant_decode_attention(query, kv_cache, block_table,
  seq_lens, scale, PiT=None, max_seq_len=0, output_buf=None,
  buf_holder=None, max_num_kv_splits=32, sinks=None), the launcher;
- is_ultraquant_flydsl_available() (also spelled is_flydsl_available), the
  process-level probe, true on gfx950 with FlyDSL only;
- ultraquant_flydsl_decode_eligible(*, head_size, num_kv_groups, has_sinks,
  sliding_window, flydsl_loaded), the per-layer routing policy.

install() replaces each of them, in that module and in every vLLM module
that already imported them, by uqjit's: the probe is true wherever uqjit
finds a GPU (AMD or NVIDIA, where the FlyDSL original is unavailable), the
policy is uqjit's own eligibility (uq_plan_make: head_dim 256, query
groups 6, 8 or 16, no sinks, no sliding window), and the launcher runs
uqjit for the shapes it serves and hands anything else (sinks included) to
vLLM's original launcher. One call in every process that runs attention:

    import uqjit.vllm
    uqjit.vllm.install()

or, for `vllm serve` and its worker processes, the vLLM general plugin
this package registers: set UQJIT_VLLM=1 (python/README.md)."""
import importlib
import os
import sys
import threading

from . import core

OPS_MODULE = "vllm.v1.attention.ops.flydsl_ultraquant_decode"
LAUNCHER = "flydsl_ultraquant_decode_attention"
PROBES = ("is_ultraquant_flydsl_available", "is_flydsl_available")
POLICY = "ultraquant_flydsl_decode_eligible"

_lock = threading.Lock()
# name -> vLLM's original object, while installed
_originals = {}
# (module name, attribute) rebound by install, for uninstall
_rebound = []
_warned = set()


def _env_bool(name):
    """The library's one rule for booleans (lib/base/env.c): 1/true/yes/on,
    0/false/no/off/empty/unset; another value is said once and is off
    (UQJIT_VLLM is no safety switch)."""
    v = os.environ.get(name, "")
    low = v.lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("", "0", "false", "no", "off"):
        return False
    if name not in _warned:
        _warned.add(name)
        sys.stderr.write("uqjit: warning: %s=%s is not a boolean (1/0, "
                         "true/false, yes/no, on/off): taken as off\n"
                         % (name, v))
    return False


def is_ultraquant_flydsl_available():
    """uqjit's probe: a GPU that uqjit can run on is present (the library
    loads and sees a device). False, not an error, otherwise."""
    try:
        return core.device_count() > 0
    except Exception:  # noqa: BLE001 - no library, no runtime: unavailable
        return False


def ultraquant_flydsl_decode_eligible(*, head_size, num_kv_groups,
                                      has_sinks, sliding_window,
                                      flydsl_loaded):
    """uqjit's eligibility for a layer, with vLLM's keyword signature:
    uq_plan_make's verdict on a shape of that head size and query group
    (block size 64, one KV head), and `flydsl_loaded` (the probe)."""
    if not flydsl_loaded:
        return False
    try:
        p = core.plan(1, int(num_kv_groups), 1, int(head_size), 64, 1,
                      has_sinks=bool(has_sinks),
                      sliding_window=int(sliding_window or 0))
    except core.UqjitError:
        return False  # malformed (a zero group): not uqjit's to serve
    return p.eligible


# (Hq, Hk, D, block size) -> uqjit serves it; planned once per geometry
# (a decode call is on the hot path).
_served = {}


def _shape_eligible(query, kv_cache, sinks):
    """Whether uqjit serves this call: no sinks, and the plan's eligibility
    for its head size, query group and block size."""
    if sinks is not None:
        return False
    try:
        geo = (int(query.shape[1]), int(kv_cache.shape[2]),
               int(query.shape[2]), int(kv_cache.shape[1]))
    except (AttributeError, IndexError, TypeError):
        return False
    ok = _served.get(geo)
    if ok is None:
        hq, hk, d, block = geo
        try:
            ok = hk > 0 and hq % hk == 0 and \
                core.plan(1, hq, hk, d, block, 1).eligible
        except core.UqjitError:
            ok = False
        _served[geo] = ok
    return ok


def flydsl_ultraquant_decode_attention(query, kv_cache, block_table,
                                       seq_lens, scale, PiT=None,
                                       max_seq_len=0, output_buf=None,
                                       buf_holder=None, max_num_kv_splits=32,
                                       sinks=None):
    """vLLM's launcher signature: uqjit for the shapes it serves, vLLM's
    original launcher (as installed over) for the rest, sinks included."""
    if _shape_eligible(query, kv_cache, sinks):
        from . import torch_ops
        return torch_ops.flydsl_ultraquant_decode_attention(
            query, kv_cache, block_table, seq_lens, scale, PiT, max_seq_len,
            output_buf, buf_holder, max_num_kv_splits, sinks)
    original = _originals.get(LAUNCHER)
    if original is None:
        raise NotImplementedError(
            "uqjit does not serve this decode (sinks, or a head size or "
            "query group it has no kernel for) and vLLM's launcher is not "
            "installed over")
    return original(query, kv_cache, block_table, seq_lens, scale, PiT,
                    max_seq_len, output_buf, buf_holder, max_num_kv_splits,
                    sinks)


_REPLACEMENTS = {
    LAUNCHER: flydsl_ultraquant_decode_attention,
    PROBES[0]: is_ultraquant_flydsl_available,
    PROBES[1]: is_ultraquant_flydsl_available,
    POLICY: ultraquant_flydsl_decode_eligible,
}


def installed():
    """True while install() is in effect."""
    return bool(_originals)


def install(module=None):
    """Makes vLLM's UltraQuant decode use uqjit in this process: replaces
    the launcher, the probe and the policy in vLLM's ops module (imported
    now; `module` may be that module object) and in every loaded vllm.*
    module that imported them. Idempotent. Returns the sorted
    "module.attribute" names rebound. ImportError without vLLM."""
    with _lock:
        ops = module if module is not None else importlib.import_module(
            OPS_MODULE)
        if not _originals:
            for name in _REPLACEMENTS:
                if hasattr(ops, name):
                    _originals[name] = getattr(ops, name)
        by_id = {id(obj): name for name, obj in _originals.items()}
        done = []
        mods = [ops] + [m for n, m in list(sys.modules.items())
                        if m is not None and m is not ops and
                        (n == "vllm" or n.startswith("vllm."))]
        for mod in mods:
            for attr, value in list(vars(mod).items()):
                name = by_id.get(id(value))
                if name is None:
                    continue
                setattr(mod, attr, _REPLACEMENTS[name])
                _rebound.append((mod.__name__, attr, value))
                done.append("%s.%s" % (mod.__name__, attr))
        return sorted(set(done))


def uninstall():
    """Puts vLLM's originals back where install() rebound them."""
    with _lock:
        for mod_name, attr, value in reversed(_rebound):
            mod = sys.modules.get(mod_name)
            if mod is not None:
                setattr(mod, attr, value)
        del _rebound[:]
        _originals.clear()


def plugin():
    """vLLM's general-plugin hook (entry point group vllm.general_plugins,
    run in every vLLM process): install() when UQJIT_VLLM is on."""
    if _env_bool("UQJIT_VLLM"):
        install()
