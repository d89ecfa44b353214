"""The repository's scripts as modules for their tests: bench/ and
scripts/ are not packages (and plot-bench.py is no module name), so a
test loads the file itself from the source tree (UQ_SOURCE_ROOT, else
two folders up from here)."""
import importlib.util
import os


def load(relpath, name):
    """The module of the source file relpath, run once under name."""
    root = os.environ.get("UQ_SOURCE_ROOT",
                          os.path.join(os.path.dirname(__file__), "..", ".."))
    spec = importlib.util.spec_from_file_location(name, os.path.join(root, relpath))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod
