"""CPU tests of the Python binding (no torch, no numpy, no GPU): plans
against `uqjit plan --json`, key names, errors, the library loader, and the
CPU reference store/decode against a pure-Python model of FORMAT.md
sections 2-5. Usage: test_cpu.py [UQJIT_EXE] (or UQ_UQJIT_EXE), with
UQJIT_LIBRARY and PYTHONPATH=python set."""
import array
import json
import math
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest

import uqjit
from uqjit import _lib

UQJIT_EXE = None
PACKAGE_DIR = os.path.dirname(os.path.abspath(uqjit.__file__))

# ---- a pure-Python model of the format ------------------------------

FP4 = [0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0,
       -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]
MIDPOINTS = [-5, -3.5, -2.5, -1.75, -1.25, -0.75, -0.25,
             0.25, 0.75, 1.25, 1.75, 2.5, 3.5, 5]


def f32(x):
    """x rounded to fp32 (an fp32 sum or product of fp32 values computed
    in double and rounded once is the correctly rounded fp32 result)."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def bf16_bits(x):
    b = f32_bits(f32(x))
    return ((b + 0x7FFF + ((b >> 16) & 1)) >> 16) & 0xFFFF


def bf16_value(h):
    return struct.unpack("<f", struct.pack("<I", h << 16))[0]


def ue8m0(byte):
    return 0.0 if byte == 0 else math.ldexp(1.0, byte - 127)


def fwht_f32(x):
    n = len(x)
    x = list(x)
    h = 1
    while h < n:
        for i in range(0, n, 2 * h):
            for j in range(i, i + h):
                a, b = x[j], x[j + h]
                x[j], x[j + h] = f32(a + b), f32(a - b)
        h *= 2
    r = f32(1.0 / math.sqrt(n))
    return [f32(v * r) for v in x]


def haircut_e4m3(x):
    """fp32 -> FP8 E4M3FN (nearest even, saturating at 448) -> float."""
    if x == 0 or x != x:
        return x
    a = abs(x)
    if a >= 448:
        q = 448.0
    else:
        m, e = math.frexp(a)       # a = m * 2^e, m in [0.5, 1)
        exp = max(e - 1, -6)        # normal binade, or the subnormal one
        quantum = math.ldexp(1.0, exp - 3)
        q = min(round(a / quantum) * quantum, 448.0)  # round(): ties to even
    return math.copysign(q, x)


def encode_group(x):
    """FORMAT.md section 3: (UE8M0 byte, 32 codes)."""
    amax = max(abs(v) for v in x)
    s_raw = f32(f32(0.156) * amax)
    if not (s_raw > 0) or math.isinf(s_raw):
        return 0, [0] * 32
    bits = f32_bits(s_raw)
    if s_raw < math.ldexp(1.0, -126):
        e = -126
    else:
        k = ((bits >> 23) & 0xFF) - 127
        e = k + (1 if (bits & 0x7FFFFF) >= 0x3504F4 else 0)
    e = min(max(e, -126), 127)
    s = math.ldexp(1.0, e)
    codes = []
    for v in x:
        i = sum(1 for m in MIDPOINTS if m < v / s)
        codes.append(15 - i if i < 7 else i - 7)
    return e + 127, codes


def encode_row(x):
    """A row of D floats -> (D/2 code bytes, D/32 scale bytes)."""
    codes, scales = bytearray(), bytearray()
    for g in range(0, len(x), 32):
        byte, c = encode_group(x[g:g + 32])
        scales.append(byte)
        for j in range(0, 32, 2):
            codes.append(c[j] | (c[j + 1] << 4))
    return bytes(codes), bytes(scales)


def encode_slot(k_row, v_row):
    kc, ks = encode_row(fwht_f32(k_row))
    vc, vs = encode_row(v_row)
    return kc + ks + vc + vs


def decode_row(codes, scales):
    out = []
    for j in range(len(codes) * 2):
        c = codes[j // 2] >> (4 * (j % 2)) & 15
        out.append(FP4[c] * ue8m0(scales[j // 32]))
    return out


class Problem:
    """A tiny paged decode problem built with the random module."""

    def __init__(self, seed=1, B=2, Hq=4, Hk=2, D=64, BS=16, NBMAX=3,
                 seq_lens=(5, 37), q_stride_seq=0):
        rnd = random.Random(seed)
        self.B, self.Hq, self.Hk, self.D, self.BS = B, Hq, Hk, D, BS
        self.NBMAX, self.seq_lens = NBMAX, list(seq_lens)
        self.slot = uqjit.slot_size(D)
        self.padded = (self.slot + 3) // 4 * 4
        self.num_blocks = B * NBMAX + 2
        blocks = list(range(self.num_blocks))
        rnd.shuffle(blocks)
        self.table = array.array("i", blocks[:B * NBMAX])
        # K/V rows as bf16 bit patterns, one token per (seq, position).
        self.tokens = []   # (slot index, k rows [Hk][D], v rows)
        for b in range(B):
            for t in range(self.seq_lens[b]):
                blk = self.table[b * NBMAX + t // BS]
                k = [[bf16_bits(rnd.gauss(0, 1)) for _ in range(D)]
                     for _ in range(Hk)]
                v = [[bf16_bits(rnd.gauss(0, 1)) for _ in range(D)]
                     for _ in range(Hk)]
                self.tokens.append((blk * BS + t % BS, k, v))
        self.q_stride_seq = q_stride_seq or Hq * D
        self.query = array.array("H", [0] * (B * self.q_stride_seq))
        for b in range(B):
            for i in range(Hq * D):
                self.query[b * self.q_stride_seq + i] = bf16_bits(
                    rnd.gauss(0, 1))
        self.scale = 1.0 / math.sqrt(D)

    def store(self, skip_first=False):
        """The cache filled by uqjit's CPU store (0xEE elsewhere)."""
        T = len(self.tokens)
        k = array.array("H", [h for _, kr, _ in self.tokens
                              for row in kr for h in row])
        v = array.array("H", [h for _, _, vr in self.tokens
                              for row in vr for h in row])
        slots = array.array("q", [s for s, _, _ in self.tokens])
        if skip_first:
            slots[0] = -1
        cache = bytearray(b"\xee" * (self.num_blocks * self.BS * self.Hk *
                                     self.padded))
        uqjit.reference_store(k, v, slots, T, cache, self.num_blocks,
                              self.BS, self.Hk, self.D, "bf16")
        return cache

    def slot_offset(self, slot, h):
        return (slot * self.Hk + h) * self.padded

    def shape(self):
        return uqjit.make_shape(self.B, self.Hq, self.Hk, self.D, self.BS,
                                self.NBMAX, q_stride_seq=self.q_stride_seq)

    def python_decode(self, cache):
        """FORMAT.md section 5 in double precision from the cache bytes."""
        D, qg = self.D, self.Hq // self.Hk
        lay = (D // 2, D // 2 + D // 32, D + D // 32, D + D // 16)
        out = []
        for b in range(self.B):
            rows = []
            for t in range(self.seq_lens[b]):
                blk = self.table[b * self.NBMAX + t // self.BS]
                rows.append(blk * self.BS + t % self.BS)
            for h in range(self.Hq):
                kh = h // qg
                base = b * self.q_stride_seq + h * D
                q = [bf16_value(x) for x in self.query[base:base + D]]
                qhc = [haircut_e4m3(x) for x in fwht_f32(q)]
                s, vs = [], []
                for slot in rows:
                    o = self.slot_offset(slot, kh)
                    sb = cache[o:o + self.slot]
                    k = decode_row(sb[0:lay[0]], sb[lay[0]:lay[1]])
                    vs.append(decode_row(sb[lay[1]:lay[2]], sb[lay[2]:lay[3]]))
                    s.append(self.scale * sum(a * c for a, c in zip(qhc, k)))
                m = max(s)
                p = [math.exp(x - m) for x in s]
                z = sum(p)
                out += [sum(p[n] * vs[n][d] for n in range(len(p))) / z
                        for d in range(D)]
        return out


def rel_l2(a, b):
    num = sum((x - y) ** 2 for x, y in zip(a, b))
    den = sum(y * y for y in b)
    return math.sqrt(num / den)


class ReferencePath(unittest.TestCase):
    def test_haircut_model_agrees_with_the_library(self):
        lib = _lib.lib()
        rnd = random.Random(7)
        vals = [0.0, 1e-9, 0.0009765625, 0.01, 448.0, 460.0, 1000.0, -3.3]
        vals += [f32(rnd.gauss(0, 30)) for _ in range(200)]
        for x in vals:
            self.assertEqual(haircut_e4m3(x), lib.uq_haircut_e4m3(x), x)

    def test_store_writes_the_bytes_of_the_python_encoder(self):
        pr = Problem(seed=2)
        cache = pr.store()
        for slot, kr, vr in pr.tokens:
            for h in range(pr.Hk):
                want = encode_slot([bf16_value(x) for x in kr[h]],
                                   [bf16_value(x) for x in vr[h]])
                o = pr.slot_offset(slot, h)
                self.assertEqual(bytes(cache[o:o + pr.slot]), want,
                                 "slot %d head %d" % (slot, h))

    def test_store_leaves_skipped_slots_untouched(self):
        pr = Problem(seed=3)
        cache = pr.store(skip_first=True)
        o = pr.slot_offset(pr.tokens[0][0], 0)
        self.assertEqual(bytes(cache[o:o + pr.padded]), b"\xee" * pr.padded)

    def test_reference_decode_matches_the_python_model(self):
        pr = Problem(seed=4)
        cache = pr.store()
        out64 = array.array("d", [0.0] * (pr.B * pr.Hq * pr.D))
        out = array.array("H", [0] * (pr.B * pr.Hq * pr.D))
        seq = array.array("i", pr.seq_lens)
        uqjit.reference_decode(pr.shape(), pr.query, cache, pr.num_blocks,
                               pr.table, seq, out=out, out64=out64)
        want = pr.python_decode(cache)
        err = rel_l2(list(out64), want)
        print("reference decode vs python model: rel L2 %.3g" % err)
        self.assertLess(err, 1e-12)
        bf = [bf16_value(h) for h in out]
        self.assertLess(rel_l2(bf, want), 1e-2)
        self.assertTrue(all(math.isfinite(x) for x in bf))

    def test_strided_query_gives_the_contiguous_result(self):
        a = Problem(seed=5)
        b = Problem(seed=5, q_stride_seq=3 * a.Hq * a.D)
        for i in range(a.B):
            n = a.Hq * a.D
            b.query[i * b.q_stride_seq:i * b.q_stride_seq + n] = \
                a.query[i * n:(i + 1) * n]
        outs = []
        for pr in (a, b):
            cache = pr.store()
            o = array.array("d", [0.0] * (pr.B * pr.Hq * pr.D))
            uqjit.reference_decode(pr.shape(), pr.query, cache,
                                   pr.num_blocks, pr.table,
                                   array.array("i", pr.seq_lens), out64=o)
            outs.append(list(o))
        self.assertEqual(outs[0], outs[1])

    def test_element_strided_query_gives_the_contiguous_result(self):
        # Every other element of a [B, Hq, 2D] buffer (a last stride of 2,
        # vLLM's contiguous_query=False view) against the dense query.
        a = Problem(seed=9)
        q2 = array.array("H", [0x7fc0] * (2 * len(a.query)))  # NaN gaps
        q2[::2] = a.query
        outs = []
        for query, shape in (
                (a.query, a.shape()),
                (q2, uqjit.make_shape(a.B, a.Hq, a.Hk, a.D, a.BS, a.NBMAX,
                                      q_stride_seq=2 * a.Hq * a.D,
                                      q_stride_head=2 * a.D,
                                      q_stride_dim=2))):
            cache = a.store()
            o = array.array("d", [0.0] * (a.B * a.Hq * a.D))
            uqjit.reference_decode(shape, query, cache, a.num_blocks,
                                   a.table, array.array("i", a.seq_lens),
                                   out64=o)
            outs.append(list(o))
        self.assertEqual(outs[0], outs[1])
        p = uqjit.plan(1, 16, 2, 256, 16, 8, q_stride_dim=2,
                       q_stride_head=512, q_stride_seq=16 * 512)
        self.assertFalse(p.fuse_qrot)
        self.assertTrue(p.kernels[2].endswith("_se2"), p.kernels)

    def test_reference_decode_refuses_a_zero_seq_len(self):
        pr = Problem(seed=6)
        cache = pr.store()
        out = array.array("H", [0] * (pr.B * pr.Hq * pr.D))
        with self.assertRaises(uqjit.UqjitError) as cm:
            uqjit.reference_decode(pr.shape(), pr.query, cache, pr.num_blocks,
                                   pr.table, array.array("i", [0, 5]), out=out)
        self.assertEqual(cm.exception.name, "UQ_EINVAL")


PLAN_SHAPES = [
    dict(batch=4, q=16, kv=2, d=256, bs=32, mb=64, target="sm_90a"),
    dict(batch=1, q=48, kv=8, d=256, bs=16, mb=128, target="gfx950",
         q_stride_seq=(48 + 16) * 256),
    dict(batch=2, q=16, kv=1, d=256, bs=16, mb=128, target="sm_90",
         q_stride_seq=16 * 512, q_stride_head=512),
    dict(batch=64, q=32, kv=2, d=256, bs=64, mb=512, target="gfx942"),
    dict(batch=4, q=8, kv=2, d=128, bs=32, mb=64, target="gfx950"),
    dict(batch=3, q=20, kv=4, d=64, bs=16, mb=9, target="sm_90a"),
    dict(batch=4, q=8, kv=2, d=96, bs=32, mb=64, target="gfx942"),
    dict(batch=4, q=16, kv=2, d=256, bs=32, mb=64, target="sm_90a",
         variant="portable"),
    dict(batch=4, q=16, kv=2, d=256, bs=32, mb=64, target="sm_90a",
         variant="matrix"),
]


class Plans(unittest.TestCase):
    def cli_plan(self, s):
        args = [UQJIT_EXE, "plan", "--batch", str(s["batch"]),
                "--q-heads", str(s["q"]), "--kv-heads", str(s["kv"]),
                "--head-dim", str(s["d"]), "--block-size", str(s["bs"]),
                "--max-blocks-per-seq", str(s["mb"]),
                "--target", s["target"], "--json"]
        if "q_stride_seq" in s:
            args += ["--q-stride-seq", str(s["q_stride_seq"])]
        if "q_stride_head" in s:
            args += ["--q-stride-head", str(s["q_stride_head"])]
        if "variant" in s:
            args += ["--variant", s["variant"]]
        return json.loads(subprocess.run(args, check=True,
                                         stdout=subprocess.PIPE).stdout)

    def test_plan_matches_uqjit_plan_json(self):
        if not UQJIT_EXE:
            self.skipTest("no uqjit command given")
        for s in PLAN_SHAPES:
            with self.subTest(shape=s):
                c = self.cli_plan(s)
                p = uqjit.plan(s["batch"], s["q"], s["kv"], s["d"], s["bs"],
                               s["mb"], target=s["target"],
                               variant=s.get("variant"),
                               q_stride_seq=s.get("q_stride_seq", 0),
                               q_stride_head=s.get("q_stride_head", 0))
                self.assertEqual(p.eligible, c["eligible"])
                self.assertEqual(p.reason, c["reason"])
                for f in ("num_partitions", "tile_groups_per_partition",
                          "query_group_size", "fuse_qrot", "padded_slot",
                          "block_threads", "workspace_bytes"):
                    self.assertEqual(getattr(p, f), c[f], f)
                for f in ("decode_grid", "reduce_grid", "prologue_grid"):
                    self.assertEqual(list(getattr(p, f)), c[f], f)
                self.assertEqual(p.kernels, [k["name"] for k in c["kernels"]])
                self.assertEqual(p.kinds, [k["kind"] for k in c["kernels"]])
                if p.eligible:
                    self.assertEqual(p.target, c["target"])
                    ws = dict(p.workspace)
                    if p.fuse_qrot:
                        ws["q_rot"] = None
                    self.assertEqual(ws, c["workspace"])

    def test_qkv_slice_query_is_fused(self):
        p = uqjit.plan(1, 48, 8, 256, 16, 128, target="gfx950",
                       q_stride_seq=(48 + 16) * 256)
        self.assertTrue(p.fuse_qrot)
        self.assertEqual(p.kinds, ["decode", "reduce"])

    def test_head_strided_query_gets_a_prologue_and_q_rot(self):
        p = uqjit.plan(1, 48, 8, 256, 16, 128, target="gfx950",
                       q_stride_seq=48 * 512, q_stride_head=512)
        self.assertTrue(p.eligible)
        self.assertFalse(p.fuse_qrot)
        self.assertEqual(p.kinds, ["decode", "reduce", "prologue"])
        self.assertEqual((p.P, p.TGPP), (p.num_partitions,
                                         p.tile_groups_per_partition))
        self.assertGreater(p.workspace["q_rot"], 0)

    def test_ineligible_shape_is_a_plan_with_a_reason(self):
        p = uqjit.plan(4, 8, 2, 96, 32, 64)
        self.assertFalse(p.eligible)
        self.assertIn("head_dim 96", p.reason)
        self.assertEqual(p.kernels, [])

    def test_deployment_keys_refuse_an_ineligible_shape(self):
        with self.assertRaises(ValueError):
            uqjit.deployment_keys(8, 2, 96, 32, 64, [1, 2], "gfx950")

    def test_variant_keyword_names_the_layer(self):
        old = os.environ.pop("UQJIT_VARIANT", None)
        try:
            os.environ["UQJIT_VARIANT"] = "matrix"
            for variant, v in (("portable", "_v0_"), ("auto", "_v2_"),
                               (None, "_v1_")):
                p = uqjit.plan(4, 16, 2, 256, 32, 64, target="sm_90a",
                               variant=variant)
                self.assertIn(v, p.kernels[0])
            keys = uqjit.deployment_keys(16, 2, 256, 32, 64, [1], "sm_90a",
                                         variant="portable")
            self.assertIn("_v0_", keys[0])
            with self.assertRaises(uqjit.UqjitError) as cm:
                uqjit.plan(4, 16, 2, 256, 32, 64, target="sm_90a",
                           variant="bogus")
            self.assertEqual(cm.exception.name, "UQ_EINVAL")
        finally:
            os.environ.pop("UQJIT_VARIANT", None)
            if old is not None:
                os.environ["UQJIT_VARIANT"] = old


class Keys(unittest.TestCase):
    def test_key_names_round_trip_through_parse(self):
        p = uqjit.plan(4, 16, 2, 256, 32, 64, target="sm_90a")
        for name in p.kernels:
            self.assertEqual(uqjit.key_name(uqjit.parse_key(name)), name)
        self.assertTrue(p.kernels[0].startswith("uq_decode_sm_90a_bf16_v2_"))

    def test_store_key_name(self):
        self.assertEqual(uqjit.key_name(uqjit.store_key(256, 2, 0, "bf16",
                                                        "gfx950")),
                         "uq_store_gfx950_bf16_d256_hk2_ps272")

    def test_deployment_keys_are_deduplicated_plans_plus_store(self):
        ks = uqjit.deployment_keys(16, 2, 256, 32, 64, [1, 4, 4, 64],
                                   "sm_90a")
        self.assertEqual(len(ks), len(set(ks)))
        self.assertEqual(ks[-1], "uq_store_sm_90a_bf16_d256_hk2_ps272")
        for b in (1, 4, 64):
            for n in uqjit.plan(b, 16, 2, 256, 32, 64,
                                target="sm_90a").kernels:
                self.assertIn(n, ks)

    def test_kernel_source_names_the_symbol(self):
        name = uqjit.key_name(uqjit.store_key(256, 2, 0, "bf16", "gfx950"))
        self.assertIn(name, uqjit.kernel_source(name))


class Errors(unittest.TestCase):
    def test_bad_target_raises_uq_einval(self):
        with self.assertRaises(uqjit.UqjitError) as cm:
            uqjit.plan(4, 16, 2, 256, 32, 64, target="gfx9999x")
        e = cm.exception
        self.assertEqual((e.code, e.name), (-1, "UQ_EINVAL"))
        self.assertIn("gfx9999x", e.message)

    def test_heads_not_divisible_raise_uq_einval(self):
        with self.assertRaises(uqjit.UqjitError) as cm:
            uqjit.plan(4, 15, 2, 256, 32, 64)
        self.assertEqual(cm.exception.name, "UQ_EINVAL")

    def test_malformed_key_name_raises(self):
        with self.assertRaises(uqjit.UqjitError) as cm:
            uqjit.parse_key("uq_decode_nonsense")
        self.assertEqual(cm.exception.name, "UQ_EINVAL")

    def test_compile_only_context_needs_a_target(self):
        with self.assertRaises(uqjit.UqjitError) as cm:
            uqjit.Context(device=-1)
        self.assertEqual(cm.exception.name, "UQ_EINVAL")

    def test_warm_without_jit_reports_uq_enojit_for_every_key(self):
        seen = []
        cache = tempfile.mkdtemp()
        old = os.environ.get("UQJIT_DISABLE_JIT")
        os.environ["UQJIT_DISABLE_JIT"] = "1"
        try:
            keys = uqjit.deployment_keys(16, 2, 256, 32, 64, [4], "gfx950")
            with self.assertRaises(uqjit.UqjitError) as cm:
                uqjit.warm(keys, cache_dir=cache,
                           progress=lambda *a: seen.append(a))
        finally:
            if old is None:
                del os.environ["UQJIT_DISABLE_JIT"]
            else:
                os.environ["UQJIT_DISABLE_JIT"] = old
            shutil.rmtree(cache)
        self.assertEqual(cm.exception.name, "UQ_ENOJIT")
        self.assertEqual(sorted(a[2] for a in seen), sorted(keys))


class Context(unittest.TestCase):
    def test_compile_only_context_has_its_target_and_zero_stats(self):
        with uqjit.Context(target="sm_90a", device=-1,
                           use_disk_cache=False) as ctx:
            self.assertEqual(ctx.target, "sm_90a")
            self.assertEqual(ctx.stats()["compiles"], 0)
        with self.assertRaises(ValueError):
            ctx.stats()

    def test_context_layer_is_fixed_when_it_is_created(self):
        shape = uqjit.make_shape(4, 16, 2, 256, 32, 64)
        old = os.environ.pop("UQJIT_VARIANT", None)
        try:
            os.environ["UQJIT_VARIANT"] = "portable"
            with uqjit.Context(target="sm_90a", device=-1,
                               use_disk_cache=False) as ctx, \
                    uqjit.Context(target="sm_90a", device=-1,
                                  use_disk_cache=False,
                                  variant="matrix") as named:
                os.environ["UQJIT_VARIANT"] = "warpgroup"
                self.assertIn("_v0_", ctx.plan_shape(shape).kernels[0])
                self.assertIn("_v1_", named.plan_shape(shape).kernels[0])
            with self.assertRaises(uqjit.UqjitError):
                uqjit.Context(target="sm_90a", device=-1, variant="bogus")
        finally:
            os.environ.pop("UQJIT_VARIANT", None)
            if old is not None:
                os.environ["UQJIT_VARIANT"] = old


class Loader(unittest.TestCase):
    def run_py(self, code, env_lib, pythonpath):
        env = dict(os.environ, PYTHONPATH=pythonpath)
        env.pop("UQJIT_LIBRARY", None)
        if env_lib is not None:
            env["UQJIT_LIBRARY"] = env_lib
        return subprocess.run([sys.executable, "-c", code], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True)

    def test_library_beside_the_package_is_found_without_the_variable(self):
        tmp = tempfile.mkdtemp()
        try:
            dst = os.path.join(tmp, "uqjit")
            shutil.copytree(PACKAGE_DIR, dst,
                            ignore=shutil.ignore_patterns("__pycache__"))
            shutil.copy(_lib.library_path(), os.path.join(dst, "libuqjit.so"))
            r = self.run_py("import uqjit; print(uqjit.library_path()); "
                            "print(uqjit.version())", None, tmp)
            self.assertEqual(r.returncode, 0, r.stderr)
            path, ver = r.stdout.split()
            self.assertEqual(os.path.dirname(path), dst)
            self.assertEqual(ver, uqjit.version())
        finally:
            shutil.rmtree(tmp)

    def test_missing_library_error_lists_what_was_tried(self):
        r = self.run_py("import uqjit; uqjit.version()",
                        "/nonexistent/libuqjit.so",
                        os.path.dirname(PACKAGE_DIR))
        if r.returncode == 0:
            self.skipTest("a system libuqjit is installed")
        self.assertIn("LibraryNotFound", r.stderr)
        self.assertIn("/nonexistent/libuqjit.so (missing)", r.stderr)


class Package(unittest.TestCase):
    def test_version_is_the_librarys_and_the_projects(self):
        self.assertEqual(uqjit.__version__, uqjit.version())
        want = os.environ.get("UQ_EXPECT_VERSION")
        if want:
            self.assertEqual(uqjit.__version__, want)

    def test_package_is_the_one_expected(self):
        # CI runs these tests from a venv the wheel went into: the package
        # and its library must be the venv's, not the source tree's.
        want = os.environ.get("UQ_EXPECT_PACKAGE_UNDER")
        if not want:
            self.skipTest("UQ_EXPECT_PACKAGE_UNDER not set")
        want = os.path.realpath(want)
        self.assertTrue(os.path.realpath(PACKAGE_DIR).startswith(want),
                        PACKAGE_DIR)
        self.assertTrue(os.path.realpath(uqjit.library_path())
                        .startswith(want), uqjit.library_path())

    def test_python_m_uqjit_runs_the_command(self):
        env = dict(os.environ)
        env.setdefault("PYTHONPATH", os.path.dirname(PACKAGE_DIR))
        r = subprocess.run([sys.executable, "-m", "uqjit", "version"],
                           env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, "uqjit %s\n" % uqjit.version())
        # The command's exit status comes through (2: misuse).
        r = subprocess.run([sys.executable, "-m", "uqjit", "no-such-command"],
                           env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, universal_newlines=True)
        self.assertEqual(r.returncode, 2, r.stderr)
        self.assertIn("unknown command", r.stderr)


if __name__ == "__main__":
    UQJIT_EXE = sys.argv.pop(1) if len(sys.argv) > 1 else os.environ.get(
        "UQ_UQJIT_EXE")
    unittest.main(verbosity=2)
