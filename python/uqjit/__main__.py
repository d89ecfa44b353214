"""python -m uqjit: the uqjit command that came with this package, with
the arguments given (python -m uqjit info, python -m uqjit warm ...).

The command is looked for beside the package (a wheel carries it there),
then where the install put it (_libpath.py, written by meson install),
then beside the library UQJIT_LIBRARY names (a build tree:
build/cli/uqjit), then on PATH."""
import os
import shutil
import sys


def command_path():
    """The path of the uqjit command, or None."""
    here = os.path.dirname(os.path.abspath(__file__))
    found = [os.path.join(here, "uqjit")]
    try:
        from . import _libpath  # written by meson install
        rel = os.path.relpath(_libpath.BINDIR, _libpath.PKGDIR)
        found.append(os.path.normpath(os.path.join(here, rel, "uqjit")))
        found.append(os.path.join(_libpath.BINDIR, "uqjit"))
    except ImportError:
        pass
    lib = os.environ.get("UQJIT_LIBRARY")
    if lib:
        found.append(os.path.join(os.path.dirname(lib), "cli", "uqjit"))
    for path in found:
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path
    return shutil.which("uqjit")


def main(argv=None):
    """Replaces this process with the command (its exit status is the
    process's); 1 when no command is found."""
    args = sys.argv[1:] if argv is None else list(argv)
    path = command_path()
    if path is None:
        sys.stderr.write("uqjit: the uqjit command was not found beside the "
                         "package, in the install, or on PATH\n")
        return 1
    sys.stdout.flush()
    sys.stderr.flush()
    os.execv(path, [path] + args)
    return 1  # not reached


if __name__ == "__main__":
    sys.exit(main())
