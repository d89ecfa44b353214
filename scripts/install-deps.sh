#!/usr/bin/env bash
# Installs what uqjit needs from Debian's packages (Debian 12 with CUDA 13
# under /usr/local/cuda). Idempotent; used by .ci/run and scripts/demo.sh.
set -euo pipefail

packages=(
  gcc pkg-config meson ninja-build    # build
  g++                                 # runs NVRTC-route kernels on the CPU (tests/simt)
  libxxhash-dev libcmocka-dev         # digests, tests
  libcjson-dev                        # uqjit warm --hf-config
  clang-22 lld-22 llvm-22             # offline AMD code objects, objdump
  libamdhip64-dev libamd-comgr-dev libhiprtc-builtins5  # hipRTC (ROCm 5.2), comgr
  valgrind                            # leak checks of the CPU paths
  clang-14 libclang-rt-14-dev         # libFuzzer + ASan/UBSan (scripts/fuzz.sh)
  python3-mesonpy python3-pip python3-venv  # the wheel (pip wheel --no-build-isolation .)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -eq 0 ]; then
  exit 0
fi
sudo=
[ "$(id -u)" -eq 0 ] || sudo=sudo
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
