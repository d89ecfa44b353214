#!/usr/bin/env bash
# The README's deploy recipe, run as written: the sh block under
# "## Deploying" with the model path replaced by a test config
# (tests/data/hf/heads64-kv8.json: 64 query and 8 KV heads, head_dim 256)
# and /opt/uqjit-cache by a temporary directory, `uqjit` the built
# command. Then, with the block's run-time exports and every compiler
# unreachable, the manifest's kernels are all found and `uqjit plan` marks
# a served shape cached in the layer.
# Usage: readme_deploy.sh UQJIT README TESTDATA. SKIP (77) without clang-22
# or the cJSON that --hf-config needs.
set -euo pipefail

uqjit=$(realpath "$1")
readme=$2
testdata=$(realpath "$3")
command -v clang-22 >/dev/null || [ -n "${UQJIT_CLANG:-}" ] ||
  { echo "SKIP: no clang-22"; exit 77; }
if "$uqjit" warm --hf-config "$testdata/hf/heads64-kv8.json" --tp 8 \
     --block-size 64 --max-model-len 4096 --max-num-seqs 1 --dry-run \
     2>&1 | grep -q "without cJSON"; then
  echo "SKIP: uqjit built without cJSON"; exit 77
fi

tmp=$(mktemp -d "${TMPDIR:-/tmp}/uq-readme.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM
chmod 0755 "$tmp"
mkdir "$tmp/bin"
ln -s "$uqjit" "$tmp/bin/uqjit"

# The block, exactly as the README has it, then the two paths replaced.
awk '/^## Deploying/ { on = 1 } on && /^```sh$/ { inblock = 1; next }
     inblock && /^```$/ { exit } inblock { print }' "$readme" >"$tmp/recipe.sh"
grep -q '^uqjit warm --hf-config' "$tmp/recipe.sh" ||
  { echo "FAIL: no deploy recipe found in $readme"; exit 1; }
sed -i -e "s|/models/my-model/config.json|$testdata/hf/heads64-kv8.json|g" \
  -e "s|/opt/uqjit-cache|$tmp/opt/uqjit-cache|g" "$tmp/recipe.sh"
echo "== the recipe"
cat "$tmp/recipe.sh"

export HOME=$tmp/home
unset UQJIT_CACHE_DIR UQJIT_CACHE_PATH UQJIT_DISABLE_JIT XDG_CACHE_HOME
# shellcheck disable=SC1091 # the recipe, written above
PATH="$tmp/bin:$PATH" . "$tmp/recipe.sh"

echo "== serving from the layer, no compiler reachable"
export UQJIT_CLANG=/nonexistent/clang-22 UQJIT_NVRTC_LIB=/nonexistent/libnvrtc.so
export UQJIT_HIPRTC_LIB=/nonexistent/libhiprtc.so
[ "$UQJIT_CACHE_PATH" = "$tmp/opt/uqjit-cache" ]
[ "$UQJIT_DISABLE_JIT" = 1 ]
"$uqjit" cache verify --manifest "$tmp/opt/uqjit-cache/MANIFEST"
out=$("$uqjit" plan --batch 4 --q-heads 8 --kv-heads 1 --head-dim 256 \
  --block-size 64 --max-blocks-per-seq 2048 --target mi355x --json)
n=$(printf '%s\n' "$out" | grep -c "\"cached\": true, \"layer\": \"$tmp/opt/uqjit-cache\"")
[ "$n" -ge 2 ] || { echo "FAIL: plan does not find the kernels: $out"; exit 1; }
mode=$(stat -c %a "$tmp/opt/uqjit-cache")
[ "$mode" = 755 ] || { echo "FAIL: the layer is $mode, not 755"; exit 1; }
echo "ok: the README's deploy recipe runs as written"
