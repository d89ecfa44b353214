#!/usr/bin/env python3
"""Checks every quoted #include of the C sources against the layer order.

Usage: check-includes.py [--root DIR]

Each folder below is one stage of the pipeline and may include only its own
files, the public "uqjit.h" and the folders listed for it, all of which sit
below it. The second public header, "uqjit_tools.h" (code objects and
disassembly, the info report, device utilities), is for the folders of
TOOLS only: the library parts that implement it, the command, benchmarks
and tests. A header belongs to the most specific folder that holds it
(tests/support/internal/x.h to tests/support/internal, not tests/support),
and a folder listed as allowed admits its own headers, not those of a
listed subfolder. Every other quoted include must name a path from the repository
root ("lib/base/error.h"): one include style, and the folder of each header
is visible at the include. Angle-bracket includes (system and library
headers) are not checked.

Exits 0 when every include is allowed, 1 listing each one that points up or
sideways or is not spelled from the root, 2 on wrong usage.
"""
import os
import re
import sys

# (folder, folders it may include), from the bottom of the stack up.
LIB = ["lib/base", "lib/format", "lib/codegen", "lib/cache", "lib/compile",
       "lib/gpu", "lib/runtime"]
# The test folders beside the stages they test (tests/README.md), and what
# every one of them may include besides its own files.
TEST_FOLDERS = ["base", "format", "codegen", "cache", "compile", "runtime",
                "templates", "cli"]
TEST_SHARED = ["tests/support", "tests/support/internal", "tests/simt"]
TEST_SEES = LIB + ["templates", "synth", "cli"] + TEST_SHARED
LAYERS = [
    ("lib/base", []),
    ("lib/format", ["lib/base"]),
    ("lib/codegen", ["lib/base", "lib/format"]),
    ("lib/cache", ["lib/base"]),
    ("lib/compile", ["lib/base", "lib/codegen"]),
    ("lib/gpu", ["lib/base"]),
    ("lib/runtime", LIB[:-1] + ["templates/common"]),
    # The synthetic problems, the test-support library (testkit, and the
    # helpers that run the command) and the command see the library only
    # through the public headers; the command links nothing from tests/.
    ("synth", []),
    ("tests/support", ["synth"]),
    ("cli", ["synth"]),
    # Helpers shared by internal tests that need private headers.
    ("tests/support/internal", LIB + ["synth", "tests/support"]),
    # The CPU model of CUDA blocks runs the library's launch ABI.
    ("tests/simt", LIB),
    # Programs built against the installed library: the public headers only.
    ("tests/client", []),
    ("tests/python", []),
    # Benchmarks and internal tests may reach everything below them and the
    # shared test helpers, but not the files of another test folder.
    ("bench", LIB + ["templates", "synth", "cli"] + TEST_SHARED),
    ("tests", TEST_SEES),
] + [("tests/" + f, TEST_SEES) for f in TEST_FOLDERS]
PUBLIC = {"uqjit.h"}
# The tools' public header and the folders that may include it.
TOOLS_HEADER = "uqjit_tools.h"
TOOLS = ["lib/compile", "lib/runtime", "cli", "tests", "bench"]
# Headers made by the build (meson's configure_file), by their root path.
GENERATED = {"lib/base/uq_config.h"}
SOURCES = (".c", ".h")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def layer_of(path):
    """The most specific folder of LAYERS that holds path, or None."""
    best = None
    for folder, allowed in LAYERS:
        if path == folder or path.startswith(folder + "/"):
            if best is None or len(folder) > len(best[0]):
                best = (folder, allowed)
    return best


def within(path, folder):
    return path == folder or path.startswith(folder + "/")


def check_file(root, rel):
    """The problems of one source file, as printable lines."""
    layer = layer_of(rel)
    if layer is None:
        return []
    folder, allowed = layer
    problems = []
    with open(os.path.join(root, rel), encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = m.group(1)
            where = "%s:%d: \"%s\"" % (rel, n, target)
            if target in PUBLIC:
                continue
            if target == TOOLS_HEADER:
                if not any(within(folder, t) for t in TOOLS):
                    problems.append("%s: %s may not include %s (allowed in: %s)"
                                    % (where, folder, target, ", ".join(TOOLS)))
                continue
            parts = target.split("/")
            if target.startswith("/") or "." in parts or ".." in parts:
                problems.append("%s: not a path from the repository root" % where)
                continue
            if target not in GENERATED and not os.path.isfile(os.path.join(root, target)):
                problems.append("%s: no such file from the repository root "
                                "(spell includes as lib/..., cli/..., tests/...)" % where)
                continue
            owner = layer_of(target)
            if owner is not None:
                if owner[0] == folder or owner[0] in allowed:
                    continue
            elif any(within(target, a) for a in allowed):
                continue
            below = ", ".join(allowed) if allowed else "only its own files and uqjit.h"
            problems.append("%s: %s may not include %s (allowed: %s)"
                            % (where, folder, os.path.dirname(target), below))
    return problems


def walk(root):
    for top in sorted({f.split("/")[0] for f, _ in LAYERS}):
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, top)):
            dirnames.sort()
            for name in sorted(filenames):
                if name.endswith(SOURCES):
                    yield os.path.relpath(os.path.join(dirpath, name), root)


def main(argv):
    root = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
    args = argv[1:]
    if args[:1] == ["--root"] and len(args) == 2:
        root = args[1]
    elif args:
        sys.stderr.write("usage: check-includes.py [--root DIR]\n")
        return 2
    root = os.path.abspath(root)
    problems = []
    count = 0
    for rel in walk(root):
        count += 1
        problems.extend(check_file(root, rel))
    for p in problems:
        print(p)
    if problems:
        print("check-includes: %d include(s) against the layer order in %d files"
              % (len(problems), count))
        return 1
    print("check-includes: %d files, every include follows the layer order" % count)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
