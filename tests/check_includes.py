#!/usr/bin/env python3
"""Test of scripts/check-includes.py: it passes the repository as it is and
fails each kind of planted include (one pointing up, one sideways, one
relative, one that names no file; the testkit, the command, a test folder
and a client program reaching past what they may see), naming the file and
line.

Usage: check_includes.py CHECKER SOURCE_ROOT
"""
import os
import subprocess
import sys
import tempfile


def run(checker, root):
    r = subprocess.run([sys.executable, checker, "--root", root],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       universal_newlines=True)
    return r.returncode, r.stdout


def write(root, rel, text):
    path = os.path.join(root, rel)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def planted_tree(root, extra):
    """A small tree that follows the order, plus one file `extra` =
    (path, text) that may not."""
    write(root, "include/uqjit.h", "\n")
    write(root, "include/uqjit_tools.h", '#include "uqjit.h"\n')
    write(root, "lib/base/error.h", '#include "uqjit.h"\n')
    write(root, "lib/cache/cache.c", '#include "lib/base/error.h"\n')
    write(root, "lib/codegen/key.h", "\n")
    write(root, "lib/runtime/table.h", "\n")
    write(root, "lib/runtime/context.c",
          '#include "lib/runtime/table.h"\n#include "lib/cache/cache.c"\n'
          '#include "lib/base/uq_config.h"\n#include <stdio.h>\n')
    write(root, "synth/synth.h", '#include "uqjit.h"\n')
    write(root, "tests/support/testkit.h", '#include "synth/synth.h"\n')
    write(root, "cli/cli.c", '#include "uqjit.h"\n#include "synth/synth.h"\n')
    write(root, "cli/cmd_dump.c", '#include "uqjit_tools.h"\n')
    write(root, "tests/support/half.c", '#include "uqjit_tools.h"\n')
    write(root, "tests/support/internal/cache_util.h",
          '#include "lib/cache/cache.c"\n#include "tests/support/testkit.h"\n')
    write(root, "tests/runtime/gpu_common.h", '#include "tests/support/testkit.h"\n')
    write(root, "tests/cache/unit_cache.c",
          '#include "lib/cache/cache.c"\n#include "tests/support/internal/cache_util.h"\n')
    write(root, *extra)


CASES = [
    # (name, planted file, expected exit status, text the report must hold)
    ("clean", ("lib/format/format.c", '#include "lib/base/error.h"\n'), 0,
     "every include follows"),
    ("up", ("lib/cache/entry.c", '\n#include "lib/runtime/table.h"\n'), 1,
     'lib/cache/entry.c:2: "lib/runtime/table.h": lib/cache may not include lib/runtime'),
    ("sideways", ("lib/cache/key_use.c", '#include "lib/codegen/key.h"\n'), 1,
     "lib/cache may not include lib/codegen"),
    ("cli reaches the library", ("cli/cmd.c", '#include "lib/base/error.h"\n'), 1,
     "cli may not include lib/base"),
    ("cli reaches the tests", ("cli/cmd.c", '#include "tests/support/testkit.h"\n'), 1,
     "cli may not include tests/support"),
    ("synth reaches the library", ("synth/rng.c", '#include "lib/base/error.h"\n'), 1,
     "synth may not include lib/base"),
    ("tools header below the tools", ("lib/cache/admin.c", '#include "uqjit_tools.h"\n'), 1,
     'lib/cache/admin.c:1: "uqjit_tools.h": lib/cache may not include uqjit_tools.h'),
    ("tools header in synth", ("synth/rng.c", '#include "uqjit_tools.h"\n'), 1,
     "synth may not include uqjit_tools.h"),
    ("testkit reaches a private header",
     ("tests/support/rng.c", '#include "tests/support/internal/cache_util.h"\n'), 1,
     "tests/support may not include tests/support/internal"),
    ("command reaches the internal test helpers",
     ("cli/cmd_bench.c", '#include "tests/support/internal/cache_util.h"\n'), 1,
     "cli may not include tests/support/internal"),
    ("test reaches another test folder",
     ("tests/cache/unit_lock.c", '#include "tests/runtime/gpu_common.h"\n'), 1,
     "tests/cache may not include tests/runtime"),
    ("client reaches the library",
     ("tests/client/client.c", '#include "lib/base/error.h"\n'), 1,
     "tests/client may not include lib/base"),
    ("relative", ("lib/cache/rel.c", '#include "../base/error.h"\n'), 1,
     "not a path from the repository root"),
    ("bare name", ("lib/base/env.c", '#include "error.h"\n'), 1,
     "no such file from the repository root"),
]


def main(argv):
    if len(argv) != 3:
        sys.stderr.write("usage: check_includes.py CHECKER SOURCE_ROOT\n")
        return 2
    checker, source_root = argv[1], argv[2]
    failures = 0
    rc, out = run(checker, source_root)
    if rc != 0:
        print("FAIL: the repository itself:\n" + out)
        failures += 1
    else:
        print("ok: the repository: " + out.strip())
    for name, extra, want_rc, want_text in CASES:
        with tempfile.TemporaryDirectory() as root:
            planted_tree(root, extra)
            rc, out = run(checker, root)
        if rc != want_rc or want_text not in out:
            print("FAIL: %s: exit %d (want %d), output:\n%s" % (name, rc, want_rc, out))
            failures += 1
        else:
            print("ok: %s" % name)
    print("%d passed, %d failed" % (len(CASES) + 1 - failures, failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
