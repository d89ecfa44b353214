"""The ctypes mirrors in python/uqjit/_lib.py have the sizes and field
offsets of the C structs in uqjit.h, as printed by the layouts program
(tests/python/layouts.c) whose path is argv[1] or UQ_LAYOUTS_EXE."""
import json
import os
import subprocess
import sys
import unittest

from uqjit import _lib

EXE = None


def c_layouts():
    out = subprocess.run([EXE], check=True, stdout=subprocess.PIPE).stdout
    return json.loads(out)


class StructLayouts(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.c = c_layouts()

    def test_every_mirrored_struct_is_printed_by_the_c_side(self):
        self.assertEqual(sorted(_lib.STRUCTS), sorted(self.c))

    def test_sizes_match_the_header(self):
        for name, cls in _lib.STRUCTS.items():
            with self.subTest(struct=name):
                self.assertEqual(ctypes_sizeof(cls), self.c[name]["sizeof"])

    def test_field_names_and_offsets_match_the_header(self):
        for name, cls in _lib.STRUCTS.items():
            with self.subTest(struct=name):
                py = {f[0]: getattr(cls, f[0]).offset for f in cls._fields_}
                self.assertEqual(py, self.c[name]["fields"])

    def test_a_wrong_offset_would_be_caught(self):
        # The comparison itself can fail: a mirror with one field dropped.
        import ctypes

        class Broken(ctypes.Structure):
            _fields_ = [f for f in _lib.Shape._fields_ if f[0] != "scale"]
        py = {f[0]: getattr(Broken, f[0]).offset for f in Broken._fields_}
        self.assertNotEqual(py, self.c["uq_shape"]["fields"])


def ctypes_sizeof(cls):
    import ctypes
    return ctypes.sizeof(cls)


if __name__ == "__main__":
    EXE = sys.argv.pop(1) if len(sys.argv) > 1 else os.environ.get(
        "UQ_LAYOUTS_EXE")
    if not EXE:
        sys.exit("usage: test_layouts.py LAYOUTS_EXE")
    unittest.main(verbosity=2)
