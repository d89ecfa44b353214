#!/usr/bin/env bash
# The main job: install dependencies, build, and run `uqjit demo` (plan,
# generate, compile, cache, decode on the GPU if there is one, else on the
# CPU reference, and verify). Extra arguments go to `uqjit demo`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-deps.sh
if [ ! -f build/build.ninja ]; then
  meson setup build -Dtests=disabled >/dev/null
fi
meson compile -C build >/dev/null
exec build/cli/uqjit demo "$@"
