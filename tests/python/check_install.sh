#!/bin/sh
# The install test: stages a `meson install` (DESTDIR) and checks that it
# holds the headers, the pkg-config file, the shared library, the uqjit
# command, its manual page (naming every command `uqjit help` lists) and
# the Python package, and that the staged package imports and loads the
# staged library with UQJIT_LIBRARY unset; that the staged command runs
# with no LD_LIBRARY_PATH (its RPATH is relative to itself, so any
# --prefix works), that python -m uqjit runs it, and that it searches the
# system layer <prefix>/share/uqjit/cache of the install it belongs to;
# that the command links nothing from tests/ (no test library in its ldd,
# no tk_ symbol of the testkit in its nm).
# Usage: check_install.sh BUILD_DIR. From the environment: MESON, UQ_PREFIX,
# UQ_LIBDIR, UQ_EXPECT_VERSION, PYTHON (python3), UQ_PY_PRELOAD (the
# sanitizer runtimes a sanitized library needs inside python).
set -eu

build=$1
meson=${MESON:-meson}
python=${PYTHON:-python3}
prefix=${UQ_PREFIX:-/usr/local}
libdir=${UQ_LIBDIR:-lib}
case $libdir in
/*) ;;
*) libdir=$prefix/$libdir ;;
esac

stage=$(mktemp -d "${TMPDIR:-/tmp}/uqjit-install.XXXXXX")
trap 'rm -rf "$stage"' EXIT INT TERM
root=$stage/root

echo "== meson install --destdir $root"
"$meson" install -C "$build" --no-rebuild --quiet --destdir "$root"

fail=0
need() {
  if [ -e "$1" ]; then
    echo "ok: ${1#"$root"}"
  else
    echo "FAIL: missing ${1#"$root"}" >&2
    fail=1
  fi
}
need "$root$prefix/include/uqjit.h"
need "$root$prefix/include/uqjit_tools.h"
need "$root$libdir/pkgconfig/uqjit.pc"
need "$root$libdir/libuqjit.so"
need "$root$prefix/bin/uqjit"
need "$root$prefix/share/man/man1/uqjit.1"
init=$(find "$root" -path '*/uqjit/__init__.py' | head -n 1)
if [ -z "$init" ]; then
  echo "FAIL: no Python package uqjit/__init__.py in the install" >&2
  exit 1
fi
need "$(dirname "$init")/_libpath.py"
pkgparent=$(dirname "$(dirname "$init")")
echo "python package: ${pkgparent#"$root"}/uqjit"

# The manual names every command the staged uqjit lists.
man=$root$prefix/share/man/man1/uqjit.1
cmds=$(LD_LIBRARY_PATH="$root$libdir" "$root$prefix/bin/uqjit" help |
  awk '/^commands:/ { on = 1; next } on && NF == 0 { on = 0 } on { print $1 }')
[ -n "$cmds" ] || { echo "FAIL: no commands from uqjit help" >&2; fail=1; }
for c in $cmds; do
  if ! grep -q "^\.SS $c\$" "$man"; then
    echo "FAIL: the manual page has no entry for '$c'" >&2
    fail=1
  fi
done

echo "== the staged command, no LD_LIBRARY_PATH"
bin=$root$prefix/bin/uqjit
if ! out=$(env -u LD_LIBRARY_PATH "$bin" info 2>&1); then
  echo "FAIL: $bin info: $out" >&2
  fail=1
fi
if command -v ldd >/dev/null 2>&1; then
  lib=$(env -u LD_LIBRARY_PATH ldd "$bin" | awk '/libuqjit/ { print $3 }')
  echo "libuqjit: $lib"
  case $(realpath "$lib" 2>/dev/null) in
  "$(realpath "$root$libdir")"/*) ;;
  *) echo "FAIL: the staged command loads '$lib', not the staged library" >&2
     fail=1 ;;
  esac
fi
# The product links no test code: the testkit (tests/support, tk_) stays
# out of the command, which takes its synthetic problems from synth/.
if command -v ldd >/dev/null 2>&1; then
  testlibs=$(env -u LD_LIBRARY_PATH ldd "$bin" | awk '$1 ~ /test|cmocka/ { print $1 }')
  if [ -n "$testlibs" ]; then
    echo "FAIL: the staged command links test libraries: $testlibs" >&2
    fail=1
  fi
fi
if command -v nm >/dev/null 2>&1; then
  tk=$(nm "$bin" 2>/dev/null | awk '$NF ~ /^tk_/ { print $NF }')
  if [ -n "$tk" ]; then
    echo "FAIL: the staged command holds testkit symbols:" $tk >&2
    fail=1
  elif ! nm "$bin" 2>/dev/null | grep -q ' synth_problem_make$'; then
    echo "FAIL: nm cannot see the command's own symbols (stripped?)" >&2
    fail=1
  else
    echo "ok: no testkit symbol in the staged command"
  fi
else
  echo "note: no nm; the testkit symbol check is skipped"
fi
syslayer=$root$prefix/share/uqjit/cache
mkdir -p "$syslayer"
out=$(env -u LD_LIBRARY_PATH -u UQJIT_CACHE_PATH HOME=$stage "$bin" cache ls)
case $out in
*"# $syslayer (read-only, system)"*) echo "ok: system layer $syslayer" ;;
*) echo "FAIL: the system layer $syslayer is not searched: $out" >&2
   fail=1 ;;
esac
case $out in
*"$syslayer (read-only, system): absent"*)
  echo "FAIL: the system layer exists but is listed absent" >&2; fail=1 ;;
esac

echo "== import uqjit from the staged install (UQJIT_LIBRARY unset)"
out=$(cd "$stage" && env -u UQJIT_LIBRARY -u LD_LIBRARY_PATH \
  PYTHONPATH="$pkgparent" ${UQ_PY_PRELOAD:+LD_PRELOAD="$UQ_PY_PRELOAD"} \
  "$python" -c "import uqjit; print(uqjit.version()); print(uqjit.library_path()); print(uqjit.__file__)")
echo "$out"
ver=$(echo "$out" | sed -n 1p)
lib=$(echo "$out" | sed -n 2p)
mod=$(echo "$out" | sed -n 3p)
[ "$ver" = "${UQ_EXPECT_VERSION:-$ver}" ] ||
  { echo "FAIL: version '$ver', expected '$UQ_EXPECT_VERSION'" >&2; fail=1; }
case $lib in
"$root$libdir"/*) ;;
*) echo "FAIL: the package loaded '$lib', not the staged library" >&2; fail=1 ;;
esac
case $mod in
"$pkgparent"/*) ;;
*) echo "FAIL: imported '$mod', not the staged package" >&2; fail=1 ;;
esac
echo "== python -m uqjit runs the staged command"
out=$(cd "$stage" && env -u UQJIT_LIBRARY -u LD_LIBRARY_PATH \
  PYTHONPATH="$pkgparent" ${UQ_PY_PRELOAD:+LD_PRELOAD="$UQ_PY_PRELOAD"} \
  "$python" -m uqjit version 2>&1) ||
  { echo "FAIL: python -m uqjit version: $out" >&2; fail=1; }
[ "$out" = "uqjit ${UQ_EXPECT_VERSION:-$ver}" ] ||
  { echo "FAIL: python -m uqjit version said '$out'" >&2; fail=1; }
exit $fail
