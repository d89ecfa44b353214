"""scripts/plot-bench.py's reading of its inputs, on the CPU and without
matplotlib: the points of a `uqjit bench --json` sweep and of the best
SDPA backend (bench/peer_bench.py's own JSON or rows reduced to the
best), worked out here by hand from bytes and times, and the clear
refusals of inputs that would draw a misleading picture: sweeps of
several shapes, lines of different shapes or devices, a bad --layer."""
import contextlib
import io
import json
import os
import tempfile
import unittest

import source_script


def sweep_row(seq, pct, batch=16, hk=1, qg=16, **extra):
    row = {"batch": batch, "seq": seq, "hk": hk, "qg": qg, "skipped": False,
           "pct_copy": pct}
    row.update(extra)
    return row


class PlotBenchInputs(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.mod = source_script.load(os.path.join("scripts", "plot-bench.py"), "plot_bench")

    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.addCleanup(self.dir.cleanup)

    def write(self, name, obj):
        path = os.path.join(self.dir.name, name)
        with open(path, "w") as f:
            json.dump(obj, f)
        return path

    def test_sweep_points_are_sorted_and_skip_rows_without_a_figure(self):
        path = self.write("s.json", {"device": "GPU A", "rows": [
            sweep_row(4096, 30.5), sweep_row(1024, 10.25),
            sweep_row(131072, None, skipped=True, note="too big"),
            sweep_row(65536, None)]})
        pts, shape, device = self.mod.layer_points(path)
        self.assertEqual(pts, [(1024, 10.25), (4096, 30.5)])
        self.assertEqual(shape, (16, 1, 16))
        self.assertEqual(device, "GPU A")

    def test_peer_bench_rows_count_bf16_bytes_against_the_run_copy_figure(self):
        # 2e9 bytes in 500 us: 4000 GB/s, 80% of 5000; 1e9 in 2000 us: 500
        # GB/s, 10%. A skipped row and one with no correct candidate are
        # left out.
        path = self.write("p.json", {"device": "GPU A", "copy_gbps": 5000.0, "rows": [
            dict(sweep_row(2048, None), kv_bytes=2_000_000_000, us=500.0, best={},
                 backend="flash", form="gqa"),
            dict(sweep_row(1024, None), kv_bytes=1_000_000_000, us=2000.0, best={},
                 backend="cudnn", form="reshape"),
            dict(sweep_row(4096, None), skipped=True),
            dict(sweep_row(8192, None), kv_bytes=1, best=None)]})
        pts, shape, device = self.mod.peer_points(path)
        self.assertEqual([(s, round(p, 9), n) for s, p, n in pts],
                         [(1024, 10.0, "cudnn/reshape"), (2048, 80.0, "flash/gqa")])
        self.assertEqual(shape, (16, 1, 16))
        self.assertEqual(device, "GPU A")

    def test_reduced_rows_carry_their_own_bytes_and_copy_figure(self):
        # 3e9 bytes in 1000 us: 3000 GB/s against 4000: 75%.
        path = self.write("r.json", {"device": "GPU B", "rows": [
            dict(sweep_row(32768, None), kv_bytes_bf16=3_000_000_000, us=1000.0,
                 copy_gbps=4000.0, backend="flash", form="reshape")]})
        pts, _, device = self.mod.peer_points(path)
        self.assertEqual([(s, round(p, 9), n) for s, p, n in pts],
                         [(32768, 75.0, "flash/reshape")])
        self.assertEqual(device, "GPU B")

    def test_a_sweep_of_several_shapes_is_refused(self):
        path = self.write("m.json", {"rows": [sweep_row(1024, 5.0),
                                              sweep_row(1024, 6.0, hk=2, qg=8)]})
        with self.assertRaisesRegex(self.mod.PlotError, "B=16 1:16, B=16 2:8"):
            self.mod.layer_points(path)
        empty = self.write("e.json", {"rows": []})
        with self.assertRaisesRegex(self.mod.PlotError, "no rows"):
            self.mod.layer_points(empty)

    def test_lines_of_other_shapes_or_devices_are_refused_before_drawing(self):
        a = self.write("a.json", {"device": "GPU A", "rows": [sweep_row(1024, 5.0)]})
        b64 = self.write("b.json", {"device": "GPU A", "rows": [sweep_row(1024, 5.0, batch=64)]})
        other = self.write("c.json", {"device": "GPU B", "rows": [sweep_row(1024, 5.0)]})
        out = os.path.join(self.dir.name, "out.png")
        with self.assertRaisesRegex(self.mod.PlotError, "sweeps B=64 1:16"):
            self.mod.plot(out, [("x", a), ("y", b64)])
        with self.assertRaisesRegex(self.mod.PlotError, "measured on GPU B"):
            self.mod.plot(out, [("x", a), ("y", other)])
        self.assertFalse(os.path.exists(out))

    def test_command_line_errors(self):
        err = io.StringIO()
        with self.assertRaises(SystemExit) as e, contextlib.redirect_stderr(err):
            self.mod.main(["out.png", "--layer", "warpgroup"])
        self.assertEqual(e.exception.code, 2)
        self.assertIn("expected NAME=SWEEP.json", err.getvalue())
        err = io.StringIO()
        missing = os.path.join(self.dir.name, "missing.json")
        with contextlib.redirect_stderr(err):
            rc = self.mod.main(["out.png", "--layer", "w=" + missing])
        self.assertEqual(rc, 1)
        self.assertIn("plot-bench: ", err.getvalue())
        self.assertIn("missing.json", err.getvalue())
        bad = self.write("bad.json", {"rows": [{"seq": 1024, "pct_copy": 1.0}]})
        err = io.StringIO()
        with contextlib.redirect_stderr(err):
            rc = self.mod.main(["out.png", "--layer", "w=" + bad])
        self.assertEqual(rc, 1)
        self.assertIn("missing field", err.getvalue())


if __name__ == "__main__":
    unittest.main()
