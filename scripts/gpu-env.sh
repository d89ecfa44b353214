# shellcheck shell=bash
# Sourced (not run) by the scripts/gpu-*.sh scripts: the repository root as
# the working directory, $OUT (logs; default /tmp/out), $build (the build
# directory, UQ_GPU_BUILD, default build-gpu) and $B (its uqjit), the
# kernel cache directory, uq_runtime_libs for the libraries the built
# programs load, and uq_torch_gpu for the steps that need PyTorch on a GPU.
cd "$(dirname "${BASH_SOURCE[0]}")/.." || exit 2
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
build=${UQ_GPU_BUILD:-build-gpu}
# shellcheck disable=SC2034 # used by the scripts that source this
B=$build/cli/uqjit
export UQJIT_CACHE_DIR=${UQJIT_CACHE_DIR:-/tmp/uqjit-gpu-cache}

# The cmocka / xxHash from .deps/ that scripts/gpu-check.sh unpacked into
# /tmp/deps (when the machine lacks them) and CUDA's own libraries, on
# LD_LIBRARY_PATH; call it after gpu-check.sh has run.
uq_runtime_libs() {
  local d
  for d in /tmp/deps/usr/lib/x86_64-linux-gnu /usr/local/cuda/lib64; do
    [ -d "$d" ] || continue
    case ":${LD_LIBRARY_PATH:-}:" in
    *":$d:"*) ;;
    *) export LD_LIBRARY_PATH=${LD_LIBRARY_PATH:+$LD_LIBRARY_PATH:}$d ;;
    esac
  done
}

# Whether python3 has a torch that sees a CUDA GPU (the peer benchmarks).
uq_torch_gpu() {
  python3 -c "import torch; assert torch.cuda.is_available()" 2>/dev/null
}
