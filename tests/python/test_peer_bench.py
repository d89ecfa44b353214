"""bench/peer_bench.py's choice of the peer, on the CPU: with PyTorch
replaced by a stand-in and SDPA's check and timing by given figures per
(backend, form), the fastest correct candidate is the row's result (also
for the chain time), a backend that refuses a shape or gives a wrong
result is reported and never chosen, and every candidate is printed. The
script itself needs a CUDA GPU and torch; this checks only its logic."""
import contextlib
import io
import json
import os
import sys
import types
import unittest

import source_script

# Microseconds of one call per (backend, form); a chain of steps costs
# half a step each. "efficient/reshape" is the fastest but wrong,
# "cudnn/gqa" refuses.
TIMES = {("default", "reshape"): 30.0, ("default", "gqa"): 40.0,
         ("flash", "reshape"): 12.0, ("flash", "gqa"): 10.0,
         ("efficient", "reshape"): 1.0, ("efficient", "gqa"): 20.0,
         ("cudnn", "reshape"): 15.0}
WRONG = ("efficient", "reshape")
REFUSES = ("cudnn", "gqa")


class StubTensor:
    """Only shapes and slicing matter to the code under test."""

    def __init__(self, shape):
        self.shape = shape

    def __getitem__(self, key):
        return self


def load_peer_bench():
    torch = types.ModuleType("torch")
    torch.__version__ = "stub"
    torch.bfloat16 = "bfloat16"
    torch.cuda = types.SimpleNamespace(
        is_available=lambda: True, get_device_name=lambda i: "stub GPU",
        empty_cache=lambda: None)
    torch.manual_seed = lambda seed: None
    torch.randn = lambda *shape, **kw: StubTensor(shape)
    torch.randn_like = lambda t: StubTensor(t.shape)
    nn = types.ModuleType("torch.nn")
    functional = types.ModuleType("torch.nn.functional")
    torch.nn = nn
    nn.functional = functional
    sys.modules.update({"torch": torch, "torch.nn": nn,
                        "torch.nn.functional": functional})
    mod = source_script.load(os.path.join("bench", "peer_bench.py"), "peer_bench")

    current = {}

    @contextlib.contextmanager
    def backend_context(name):
        current["backend"] = name
        yield

    def attend(q, k, v, form, scale):
        return current["backend"], form

    def check(q, k, v, form, backend, scale):
        if (backend, form) == REFUSES:
            raise RuntimeError("No available kernel. Aborting execution.")
        return 0.5 if (backend, form) == WRONG else 2e-3

    def time_calls(fn, rotations, iters, warmup, graph_steps):
        us = TIMES[fn(0)]
        return us / 2 if graph_steps > 1 else us

    mod.backend_context = backend_context
    mod.attend = attend
    mod.check = check
    mod.time_calls = time_calls
    mod.copy_bandwidth = lambda nbytes: 4000.0
    mod.fp8_status = lambda: (False, "stub")
    return mod


def run(mod, *args):
    argv, out = sys.argv, io.StringIO()
    sys.argv = ["peer_bench.py", "--batch", "1", "--seq", "1k",
                "--heads", "1:16"] + list(args)
    try:
        with contextlib.redirect_stdout(out):
            rc = mod.main()
    finally:
        sys.argv = argv
    return rc, out.getvalue()


class PeerBenchChoice(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.mod = load_peer_bench()

    def test_fastest_correct_candidate_is_the_result(self):
        rc, text = run(self.mod, "--json")
        self.assertEqual(rc, 0)
        row = json.loads(text)["rows"][0]
        self.assertEqual(len(row["candidates"]), 8)
        self.assertEqual((row["backend"], row["form"]), ("flash", "gqa"))
        self.assertEqual(row["us"], 10.0)  # the graph time (small KV)
        self.assertEqual(row["best_chain"]["chain_us"], 5.0)
        by_name = {(c["backend"], c["form"]): c for c in row["candidates"]}
        self.assertTrue(by_name[REFUSES]["note"].startswith("refused: No available"))
        self.assertFalse(by_name[REFUSES]["ok"])
        self.assertTrue(by_name[WRONG]["note"].startswith("wrong: rel L2 5.00e-01"))
        self.assertFalse(by_name[WRONG]["ok"])
        self.assertTrue(all(c["ok"] for k, c in by_name.items()
                            if k not in (WRONG, REFUSES)))

    def test_text_report_lists_every_candidate_and_the_best(self):
        rc, text = run(self.mod)
        self.assertEqual(rc, 0)
        for backend, form in list(TIMES) + [REFUSES]:
            self.assertIn("%s/%s" % (backend, form), text)
        self.assertIn("best: flash/gqa 10.00 us; in a chain flash/gqa 5.00 us",
                      text)

    def test_one_backend_one_form(self):
        rc, text = run(self.mod, "--json", "--backends", "cudnn",
                       "--form", "reshape")
        row = json.loads(text)["rows"][0]
        self.assertEqual([(c["backend"], c["form"]) for c in row["candidates"]],
                         [("cudnn", "reshape")])
        self.assertEqual(row["us"], 15.0)

    def test_no_correct_candidate_leaves_the_row_without_result(self):
        rc, text = run(self.mod, "--json", "--backends", "efficient",
                       "--form", "reshape")
        row = json.loads(text)["rows"][0]
        self.assertIsNone(row["best"])
        self.assertNotIn("us", row)

    def test_unknown_backend_is_a_usage_error(self):
        with self.assertRaises(SystemExit) as e, \
                contextlib.redirect_stderr(io.StringIO()):
            run(self.mod, "--backends", "flash,triton")
        self.assertEqual(e.exception.code, 2)


if __name__ == "__main__":
    unittest.main()
