#!/usr/bin/env bash
# Builds uqjit with its tests and runs the 'unit' and 'gpu' suites (and
# `uqjit demo` when the tool has it). Meant for a GPU machine of the kind the project measures on (an H200)
# (Ubuntu 24.04, CUDA at /usr/local/cuda, no cmocka/xxhash, no network),
# and runnable anywhere: without a GPU the gpu tests report SKIP.
#
# Dependencies: pkg-config's cmocka and libxxhash when installed; otherwise
# the Debian packages in .deps/ (prepared on a networked machine:
#   mkdir -p .deps && cd .deps &&
#   apt-get download libcmocka0 libcmocka-dev libxxhash0 libxxhash-dev \
#     pkgconf-bin libpkgconf3
# ) are unpacked into /tmp/deps and used through PKG_CONFIG_SYSROOT_DIR.
#
# Environment: UQ_GPU_BUILD (build dir, default build-gpu), UQJIT_CACHE_DIR
# (default /tmp/uqjit-gpu-cache), OUT (logs are copied there when set),
# UQ_GPU_SUITES (default "unit gpu"), UQ_GPU_FORCE_DEPS=1 (use .deps/ even
# when the packages are installed); UQ_TEST_VARIANT (passed through to
# gpu.decode: default|matrix|portable|gfx950-emu|gfx942-emu runs that
# decode layer only).
set -uo pipefail
cd "$(dirname "$0")/.." || exit 2
root=$PWD
build=${UQ_GPU_BUILD:-build-gpu}
suites=${UQ_GPU_SUITES:-unit gpu}

log() { printf '== %s\n' "$*"; }
logs=${TMPDIR:-/tmp}/uq-gpu-check
mkdir -p "$logs"
[ -n "${OUT:-}" ] && mkdir -p "$OUT"

if [ -n "${UQ_GPU_FORCE_DEPS:-}" ] || ! pkg-config --exists cmocka libxxhash 2>/dev/null; then
  if ! ls .deps/*.deb >/dev/null 2>&1; then
    echo "gpu-check: cmocka/libxxhash not installed and no .deps/*.deb" >&2
    exit 2
  fi
  log "unpacking $(ls .deps/*.deb | wc -l) packages from .deps/ into /tmp/deps"
  rm -rf /tmp/deps
  mkdir -p /tmp/deps
  for f in .deps/*.deb; do dpkg -x "$f" /tmp/deps; done
  export PKG_CONFIG_SYSROOT_DIR=/tmp/deps
  export PKG_CONFIG_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu/pkgconfig
  # Keep -I/usr/include style flags: with the sysroot they point into it.
  export PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1
  export LD_LIBRARY_PATH=/tmp/deps/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  # Meson finds these through pkg-config; a machine without one uses the
  # pkgconf from .deps/ (pkgconf-bin + libpkgconf3), named by $PKG_CONFIG.
  if ! command -v pkg-config >/dev/null && ! command -v pkgconf >/dev/null &&
    [ -x /tmp/deps/usr/bin/pkgconf ]; then
    export PKG_CONFIG=/tmp/deps/usr/bin/pkgconf
    log "using $PKG_CONFIG from .deps/"
  fi
fi

# NVRTC and friends, for a loader that does not know the CUDA toolkit.
if [ -d /usr/local/cuda/lib64 ]; then
  export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}/usr/local/cuda/lib64
fi
export UQJIT_CACHE_DIR=${UQJIT_CACHE_DIR:-/tmp/uqjit-gpu-cache}
mkdir -p "$UQJIT_CACHE_DIR" && chmod 700 "$UQJIT_CACHE_DIR"

log "machine"
uname -a
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null ||
  echo "(no nvidia-smi)"
gcc --version | head -1

log "configure $build"
if [ -f "$build/build.ninja" ]; then
  meson setup --reconfigure "$build" -Dtests=enabled >"$logs/setup.log" 2>&1
else
  meson setup "$build" -Dtests=enabled >"$logs/setup.log" 2>&1
fi
rc=$?
tail -25 "$logs/setup.log"
if [ $rc -ne 0 ]; then
  echo "gpu-check: meson setup failed" >&2
  [ -n "${OUT:-}" ] && cp "$logs/setup.log" "$OUT/" 2>/dev/null
  exit $rc
fi

log "build"
# UQ_GPU_TARGETS: build only these ninja targets (default: everything).
# shellcheck disable=SC2086 # a list of targets
ninja -C "$build" -j"$(nproc)" ${UQ_GPU_TARGETS:-} >"$logs/ninja.log" 2>&1
rc=$?
grep -E "error:|warning:" "$logs/ninja.log" | head -40
if [ $rc -ne 0 ]; then
  tail -40 "$logs/ninja.log"
  [ -n "${OUT:-}" ] && cp "$logs/ninja.log" "$OUT/" 2>/dev/null
  exit $rc
fi

status=0
for s in $suites; do
  log "meson test --suite $s"
  meson test -C "$build" --suite "$s" --print-errorlogs \
    --num-processes "$(nproc)" 2>&1 | tail -60
  st=${PIPESTATUS[0]}
  [ "$st" -ne 0 ] && status=$st
  f=$build/meson-logs/testlog.txt
  if [ "$s" = gpu ] && [ -f "$f" ]; then
    # What the gpu tests measured (errors per case, overhead, counters).
    log "gpu test measurements"
    grep -E "^(device 0|qg |worst|store dtype|uq_decode host|8 threads|table:|SKIP|uq_memcpy_h2d)" "$f" | head -80
  fi
  [ -n "${OUT:-}" ] && cp "$f" "$OUT/testlog-$s.txt" 2>/dev/null
done

if "$build/cli/uqjit" -h 2>&1 | grep -qw demo; then
  log "uqjit demo"
  "$build/cli/uqjit" demo 2>&1 | tail -40
  st=${PIPESTATUS[0]}
  [ "$st" -ne 0 ] && status=$st
fi

log "summary: exit $status"
exit $status
