"""uqjit.vllm against a stand-in of vLLM's module tree
(tests/python/vllm_standin: the ops module with vLLM's names and
signatures, and a backend that imports them at import time and routes
like vLLM's). No torch, no GPU: uqjit's launcher is replaced by a
recorder where a call would reach a device; the one test with real torch
tensors skips without torch. Usage: test_vllm.py (with UQJIT_LIBRARY and
PYTHONPATH=python from the source tree, or from an installed package)."""
import importlib
import inspect
import io
import os
import sys
import unittest
from contextlib import redirect_stderr

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "vllm_standin"))

import uqjit  # noqa: E402
import uqjit.vllm as uv  # noqa: E402
from uqjit import torch_ops  # noqa: E402

OPS = "vllm.v1.attention.ops.flydsl_ultraquant_decode"
BACKEND = "vllm.v1.attention.backends.ultraquant_attn"


class Fake:
    """A tensor as far as routing looks: a shape."""

    def __init__(self, *shape):
        self.shape = shape


def query(hq, d, b=4):
    return Fake(b, hq, d)


def cache(hk, block=64, slot=272, blocks=32):
    return Fake(blocks, block, hk, slot)


class Base(unittest.TestCase):
    def setUp(self):
        uv.uninstall()
        for name in (OPS, BACKEND):
            sys.modules.pop(name, None)
        self.ops = importlib.import_module(OPS)
        self.backend = importlib.import_module(BACKEND)
        self.vllm_launcher = self.ops.flydsl_ultraquant_decode_attention
        del self.ops.CALLS[:]
        del self.backend.TRITON_CALLS[:]
        # Where uqjit would launch on the device: a recorder.
        self.uqjit_calls = []
        self.saved = torch_ops.flydsl_ultraquant_decode_attention

        def record(q, kv, *args):
            self.uqjit_calls.append((q, args[-1]))
            return "uqjit-output"
        torch_ops.flydsl_ultraquant_decode_attention = record

    def tearDown(self):
        uv.uninstall()
        torch_ops.flydsl_ultraquant_decode_attention = self.saved


class Install(Base):
    def test_rebinds_the_ops_module_and_the_backend_that_imported_it(self):
        done = uv.install()
        self.assertIn(OPS + ".flydsl_ultraquant_decode_attention", done)
        self.assertIn(OPS + ".is_ultraquant_flydsl_available", done)
        self.assertIn(OPS + ".is_flydsl_available", done)
        self.assertIn(OPS + ".ultraquant_flydsl_decode_eligible", done)
        for name in ("flydsl_ultraquant_decode_attention",
                     "is_ultraquant_flydsl_available",
                     "ultraquant_flydsl_decode_eligible"):
            self.assertIs(getattr(self.backend, name), getattr(uv, name))
            self.assertIs(getattr(self.ops, name), getattr(uv, name))
        self.assertTrue(uv.installed())
        self.assertEqual(uv.install(), [])  # idempotent

    def test_a_backend_imported_after_install_gets_uqjit(self):
        sys.modules.pop(BACKEND)
        uv.install()
        backend = importlib.import_module(BACKEND)
        self.assertIs(backend.flydsl_ultraquant_decode_attention,
                      uv.flydsl_ultraquant_decode_attention)

    def test_uninstall_puts_vllm_back(self):
        uv.install()
        uv.uninstall()
        self.assertIs(self.ops.flydsl_ultraquant_decode_attention,
                      self.vllm_launcher)
        self.assertIs(self.backend.flydsl_ultraquant_decode_attention,
                      self.vllm_launcher)
        self.assertFalse(uv.installed())

    def test_signatures_are_vllms(self):
        for name in ("flydsl_ultraquant_decode_attention",
                     "ultraquant_flydsl_decode_eligible"):
            self.assertEqual(inspect.signature(getattr(uv, name)),
                             inspect.signature(getattr(self.ops, name)),
                             name)
        self.assertEqual(
            inspect.signature(uv.is_ultraquant_flydsl_available),
            inspect.signature(self.ops.is_ultraquant_flydsl_available))


class Policy(Base):
    def test_eligibility_is_uqjits(self):
        e = dict(has_sinks=False, sliding_window=None, flydsl_loaded=True)
        for g in (6, 8, 16):
            self.assertTrue(uv.ultraquant_flydsl_decode_eligible(
                head_size=256, num_kv_groups=g, **e), g)
        # The portable layer serves head sizes 64 and 128 and every query
        # group up to 16 (docs/FORMAT.md section 6).
        for d, g in ((128, 8), (64, 4), (256, 12)):
            self.assertTrue(uv.ultraquant_flydsl_decode_eligible(
                head_size=d, num_kv_groups=g, **e), (d, g))
        for d, g in ((96, 8), (256, 20), (512, 8), (256, 0)):
            self.assertFalse(uv.ultraquant_flydsl_decode_eligible(
                head_size=d, num_kv_groups=g, **e), (d, g))
        self.assertFalse(uv.ultraquant_flydsl_decode_eligible(
            head_size=256, num_kv_groups=8, has_sinks=True,
            sliding_window=None, flydsl_loaded=True))
        self.assertFalse(uv.ultraquant_flydsl_decode_eligible(
            head_size=256, num_kv_groups=8, has_sinks=False,
            sliding_window=1024, flydsl_loaded=True))
        self.assertFalse(uv.ultraquant_flydsl_decode_eligible(
            head_size=256, num_kv_groups=8, has_sinks=False,
            sliding_window=None, flydsl_loaded=False))

    def test_probe_is_true_where_uqjit_sees_a_device(self):
        self.assertEqual(uv.is_ultraquant_flydsl_available(),
                         uqjit.device_count() > 0)


class Routing(Base):
    def test_eligible_shapes_go_to_uqjit_others_to_vllm(self):
        uv.install()
        launch = self.ops.flydsl_ultraquant_decode_attention
        q = query(32, 256)
        self.assertEqual(launch(q, cache(4), None, None, 0.0625),
                         "uqjit-output")
        self.assertEqual(self.uqjit_calls, [(q, None)])
        for q, kv in ((query(32, 96), cache(4)),    # head 96
                      (query(80, 256), cache(4)),   # group 20
                      (query(32, 256), cache(4, block=8))):  # block 8
            self.assertEqual(launch(q, kv, None, None, 0.1), "vllm-output")
        self.assertEqual(len(self.uqjit_calls), 1)
        self.assertEqual(len(self.ops.CALLS), 3)

    def test_sinks_are_left_to_vllm(self):
        uv.install()
        sinks = object()
        out = self.ops.flydsl_ultraquant_decode_attention(
            query(32, 256), cache(4), None, None, 0.0625, sinks=sinks)
        self.assertEqual(out, "vllm-output")
        self.assertEqual(self.uqjit_calls, [])
        self.assertIs(self.ops.CALLS[0][2], sinks)

    def test_the_backend_routes_eligible_layers_to_uqjit(self):
        # The probe made true, as on a machine with a GPU (an H200, where
        # vLLM's own FlyDSL probe is false).
        saved = uqjit.core.device_count
        uqjit.core.device_count = lambda: 1
        try:
            uv.install()
            q = query(32, 256)
            out = self.backend.decode(q, cache(4), None, None, 0.0625,
                                      head_size=256, num_kv_groups=8)
            self.assertEqual(out, "uqjit-output")
            out = self.backend.decode(query(32, 96), cache(4), None, None,
                                      0.1, head_size=96, num_kv_groups=8)
            self.assertEqual(out, "triton-output")
            out = self.backend.decode(q, cache(4), None, None, 0.0625,
                                      head_size=256, num_kv_groups=8,
                                      sinks=object())
            self.assertEqual(out, "triton-output")
        finally:
            uqjit.core.device_count = saved
        self.assertEqual(len(self.uqjit_calls), 1)
        self.assertEqual(len(self.backend.TRITON_CALLS), 2)

    def test_without_install_vllm_is_untouched(self):
        out = self.backend.decode(query(32, 256), cache(4), None, None,
                                  0.0625, head_size=256, num_kv_groups=8)
        self.assertEqual(out, "triton-output")  # the stand-in's probe
        self.assertEqual(self.uqjit_calls, [])


class Plugin(Base):
    def setUp(self):
        super().setUp()
        self.saved_env = os.environ.get("UQJIT_VLLM")

    def tearDown(self):
        if self.saved_env is None:
            os.environ.pop("UQJIT_VLLM", None)
        else:
            os.environ["UQJIT_VLLM"] = self.saved_env
        super().tearDown()

    def test_plugin_installs_only_when_asked(self):
        os.environ.pop("UQJIT_VLLM", None)
        uv.plugin()
        self.assertFalse(uv.installed())
        os.environ["UQJIT_VLLM"] = "0"
        uv.plugin()
        self.assertFalse(uv.installed())
        os.environ["UQJIT_VLLM"] = "maybe"
        err = io.StringIO()
        with redirect_stderr(err):
            uv.plugin()
        self.assertFalse(uv.installed())
        self.assertIn("UQJIT_VLLM=maybe is not a boolean", err.getvalue())
        os.environ["UQJIT_VLLM"] = "1"
        uv.plugin()
        self.assertTrue(uv.installed())

    def test_plugin_is_registered_for_vllm(self):
        try:
            from importlib import metadata
            eps = metadata.entry_points()
            group = (eps.select(group="vllm.general_plugins")
                     if hasattr(eps, "select")
                     else eps.get("vllm.general_plugins", []))
            dist = metadata.distribution("uqjit")
        except Exception:  # noqa: BLE001
            self.skipTest("uqjit is not installed as a distribution here")
        self.assertIsNotNone(dist)
        self.assertIn("uqjit.vllm:plugin", [e.value for e in group])


class Torch(Base):
    def test_a_head_96_query_goes_to_vllm_untouched(self):
        try:
            import torch
        except ImportError:
            self.skipTest("no torch")
        uv.install()
        q = torch.zeros(4, 32, 192)[:, :, ::2]  # last stride 2, head 96
        kv = torch.zeros(8, 64, 4, 104, dtype=torch.uint8)
        out = self.ops.flydsl_ultraquant_decode_attention(q, kv, None, None,
                                                         0.1)
        self.assertEqual(out, "vllm-output")
        self.assertIs(self.ops.CALLS[0][1], q)
        self.assertEqual(self.uqjit_calls, [])


if __name__ == "__main__":
    unittest.main(verbosity=2)
