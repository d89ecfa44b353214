#!/bin/sh
# The client test: installs the build into a staging directory (DESTDIR),
# compiles client.c against the staged uqjit.h with the flags pkg-config
# gives for the staged uqjit.pc, and runs it on the staged shared library.
# Usage: run.sh BUILD_DIR CLIENT_C. From the environment: CC (the build's
# C compiler), UQ_PREFIX and UQ_LIBDIR (the configured prefix and libdir),
# UQ_SANITIZE (b_sanitize: a sanitized library needs the client built
# with the same runtime), MESON (the meson command). Exit 77 (SKIP) when
# pkg-config or the compiler is missing.
set -eu

# Under `meson test --wrapper valgrind` the first process is this shell,
# which frees nothing before it exits: go on in a fresh one, which valgrind
# does not follow (exec is traced only with --trace-children=yes).
if [ -z "${UQ_CLIENT_FRESH_SHELL:-}" ]; then
  UQ_CLIENT_FRESH_SHELL=1 exec /bin/sh "$0" "$@"
fi

build=$1
src=$2
cc=${CC:-cc}
meson=${MESON:-meson}
prefix=${UQ_PREFIX:-/usr/local}
libdir=${UQ_LIBDIR:-lib}
case $libdir in
/*) ;;
*) libdir=$prefix/$libdir ;;
esac

if ! command -v pkg-config >/dev/null 2>&1; then
  echo "SKIP: pkg-config not found"
  exit 77
fi
if ! command -v "${cc%% *}" >/dev/null 2>&1; then
  echo "SKIP: C compiler '$cc' not found"
  exit 77
fi

stage=$(mktemp -d "${TMPDIR:-/tmp}/uqjit-client.XXXXXX")
trap 'rm -rf "$stage"' EXIT INT TERM

echo "== meson install --destdir $stage/root"
"$meson" install -C "$build" --no-rebuild --quiet --destdir "$stage/root"

pcdir=$stage/root$libdir/pkgconfig
if [ ! -f "$pcdir/uqjit.pc" ]; then
  echo "FAIL: no uqjit.pc under $pcdir" >&2
  exit 1
fi
# The .pc names the real prefix; the sysroot maps its -I and -L paths into
# the staging directory.
# Keep the caller's search path: the .pc's private requirements (libxxhash)
# must still resolve.
export PKG_CONFIG_PATH="$pcdir${PKG_CONFIG_PATH:+:$PKG_CONFIG_PATH}"
export PKG_CONFIG_SYSROOT_DIR="$stage/root"
flags=$(pkg-config --cflags --libs uqjit)
echo "pkg-config: $flags"
case $flags in
*"$stage"*) ;;
*) echo "FAIL: pkg-config flags do not point into the staging dir" >&2
   exit 1 ;;
esac

san=
if [ -n "${UQ_SANITIZE:-}" ] && [ "$UQ_SANITIZE" != none ]; then
  san="-fsanitize=$UQ_SANITIZE -fno-omit-frame-pointer"
fi
echo "== $cc${san:+ $san} client.c"
# shellcheck disable=SC2086 # word splitting of the flags is intended
$cc -std=c11 -Wall -Wextra -Werror $san "$src" $flags -lm -o "$stage/client"

export LD_LIBRARY_PATH="$stage/root$libdir"
# The client must run on the staged library, not on one installed in the
# system or the build tree.
if command -v ldd >/dev/null 2>&1; then
  lib=$(ldd "$stage/client" | awk '/libuqjit/ { print $3 }')
  echo "libuqjit: $lib"
  case $lib in
  "$stage"/*) ;;
  *) echo "FAIL: the client loads '$lib', not the staged library" >&2
     exit 1 ;;
  esac
fi
echo "== client"
"$stage/client"
